// The debug-info file (debug.cbor) beside profile.json. Tessera's debug
// contexts are "/"-joined names (DebugContext(parent, child)), so the tree
// of contexts is recovered from the names of what the profile lists.
#include "tessera/engine/Profile.hpp"

#include <map>
#include <string>

namespace tessera {
namespace {

struct Context {
  std::size_t id = 0;
  std::size_t counts[3] = {0, 0, 0};
};

constexpr const char *kKinds[3] = {"computeSets", "variables", "steps"};

} // namespace

nlohmann::json makeDebugInfo(const nlohmann::json &profile) {
  std::map<std::string, Context> contexts;
  std::vector<std::string> order;
  auto add = [&](const std::string &name, int kind) {
    if (name.empty())
      return;
    // Every prefix ending before a '/' is an enclosing context.
    for (std::size_t end = name.find('/');; end = name.find('/', end + 1)) {
      const std::string path = name.substr(0, end);
      auto [it, made] = contexts.try_emplace(path);
      if (made) {
        it->second.id = order.size();
        order.push_back(path);
      }
      ++it->second.counts[kind];
      if (end == std::string::npos)
        break;
    }
  };
  const nlohmann::json &graph = profile.at("graph");
  for (const auto &cs : graph.at("computeSets"))
    add(cs.at("name").get<std::string>(), 0);
  for (const auto &v : graph.at("variables"))
    add(v.at("name").get<std::string>(), 1);
  for (const auto &s : graph.at("steps"))
    add(s.at("name").get<std::string>(), 2);

  nlohmann::json list = nlohmann::json::array();
  for (const std::string &path : order) {
    const Context &c = contexts.at(path);
    const std::size_t slash = path.rfind('/');
    nlohmann::json entry = {
        {"id", c.id},
        {"path", path},
        {"parent",
         slash == std::string::npos
             ? nlohmann::json(nullptr)
             : nlohmann::json(contexts.at(path.substr(0, slash)).id)}};
    for (int k = 0; k < 3; ++k)
      entry[kKinds[k]] = c.counts[k];
    list.push_back(std::move(entry));
  }
  return {{"format", "tessera-debug-info"}, {"version", 1}, {"contexts", list}};
}

} // namespace tessera
