// Keras' dtype policies: their names, and the global one new layers take.
#include "tessera/nn/Policy.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/OptionParser.hpp"

#include <mutex>
#include <string_view>
#include <vector>

namespace tessera::nn {
namespace {

struct Known {
  std::string_view name;
  Type compute, variable;
};
constexpr Known kPolicies[] = {{"float32", FLOAT, FLOAT},
                               {"mixed_float16", HALF, FLOAT},
                               {"float16", HALF, HALF}};

// Layers may be made on several threads; the policy is read at each.
std::mutex globalMutex;
Policy &global() {
  static Policy p("float32");
  return p;
}

} // namespace

Policy::Policy(const std::string &name) : name_(name) {
  std::vector<std::string> names;
  for (const Known &k : kPolicies) {
    if (name == k.name) {
      compute_ = k.compute;
      variable_ = k.variable;
      return;
    }
    names.emplace_back(k.name);
  }
  const std::string hint = didYouMean(name, names);
  throw OptionError("unknown dtype policy \"" + name + "\"" +
                    (hint.empty() ? "" : "; did you mean \"" + hint + "\"?") +
                    " Known policies: float32, mixed_float16, float16");
}

void setGlobalPolicy(const Policy &policy) {
  const std::lock_guard lock(globalMutex);
  global() = policy;
}

void setGlobalPolicy(const std::string &name) { setGlobalPolicy(Policy(name)); }

Policy globalPolicy() {
  const std::lock_guard lock(globalMutex);
  return global();
}

} // namespace tessera::nn
