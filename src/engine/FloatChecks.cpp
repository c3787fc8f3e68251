#include "FloatChecks.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/Half.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace tessera::engine {
namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

bool writes(codelet::Direction d) {
  return d == codelet::Direction::Output || d == codelet::Direction::InOut;
}

} // namespace

FloatChecker::FloatChecker(const Executable &exe,
                           const std::vector<const RegisteredVertex *> &classes,
                           const EngineOptions &options)
    : exe_(exe), classes_(classes), nan_(options.fpInv || options.fpNanoo),
      inf_(options.fpDiv0 || options.fpOflo) {
  if (!enabled())
    return;
  first_.reserve(exe.vertices.size() + 1);
  for (const VertexInstance &inst : exe.vertices) {
    first_.push_back(static_cast<std::uint32_t>(outputs_.size()));
    const auto &fields = classes[inst.vertexClass]->info.fields;
    for (std::uint32_t f = 0; f < fields.size(); ++f) {
      const codelet::FieldInfo &fi = fields[f];
      if (!writes(fi.direction) ||
          (fi.elementType != FLOAT && fi.elementType != HALF))
        continue;
      const FieldValue &fv = exe.fields[inst.firstField + f];
      if (fi.shape == codelet::Shape::Scalar) {
        outputs_.push_back({fv.addr, 1, fi.elementType, f});
      } else if (fi.shape == codelet::Shape::Vector) {
        outputs_.push_back({fv.addr, fv.size, fi.elementType, f});
      } else {
        for (std::uint32_t k = 0; k < fv.size; ++k) {
          const FieldValue &e = exe.spans[fv.addr + k];
          const std::uint32_t n =
              fi.shape == codelet::Shape::VectorList ? e.size : 1;
          outputs_.push_back({e.addr, n, fi.elementType, f});
        }
      }
    }
  }
  first_.push_back(static_cast<std::uint32_t>(outputs_.size()));
}

namespace {

std::uint64_t bytesOf(Type type) { return type == FLOAT ? 4 : 2; }

bool forbidden(const std::byte *mem, std::uint64_t addr, std::uint32_t i,
               Type type, bool nan, bool inf, double &x) {
  if (type == FLOAT) {
    float f;
    std::memcpy(&f, mem + addr + 4 * std::uint64_t(i), 4);
    x = f;
  } else {
    std::uint16_t h;
    std::memcpy(&h, mem + addr + 2 * std::uint64_t(i), 2);
    x = halfBitsToFloat(h);
  }
  return (nan && std::isnan(x)) || (inf && std::isinf(x));
}

bool inside(const std::vector<std::pair<std::uint64_t, std::uint64_t>> &r,
            std::uint64_t at) {
  auto it = std::upper_bound(
      r.begin(), r.end(), at,
      [](std::uint64_t x, const auto &range) { return x < range.second; });
  return it != r.end() && it->first <= at;
}

} // namespace

bool FloatChecker::firstForbidden(std::uint32_t begin, std::uint32_t end,
                                  const std::byte *mem, Found &found,
                                  const Ranges *within) const {
  for (std::uint32_t v = begin; v < end; ++v)
    for (std::uint32_t o = first_[v]; o < first_[v + 1]; ++o) {
      const Output &out = outputs_[o];
      for (std::uint32_t i = 0; i < out.count; ++i)
        if (forbidden(mem, out.addr, i, out.type, nan_, inf_, found.value) &&
            (!within || inside(*within, out.addr + bytesOf(out.type) * i))) {
          found = {v, o, i, found.value};
          return true;
        }
    }
  return false;
}

FloatChecker::Ranges FloatChecker::covered(std::uint32_t begin,
                                           std::uint32_t end) const {
  Ranges r;
  for (std::uint32_t o = first_[begin]; o < first_[end]; ++o)
    r.emplace_back(outputs_[o].addr,
                   outputs_[o].addr +
                       bytesOf(outputs_[o].type) * outputs_[o].count);
  std::sort(r.begin(), r.end());
  Ranges merged;
  for (const auto &x : r)
    if (!merged.empty() && x.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, x.second);
    else
      merged.push_back(x);
  return merged;
}

void FloatChecker::check(const Step &st, std::size_t pc, const std::byte *mem,
                         unsigned replica) const {
  // Vertices of a compute step are st.a .. st.a + st.b; scan in order so
  // the error names the first one, whatever the thread count. A step run
  // by a host kernel (st.count of them from st.addr) is first checked by
  // what the kernel wrote: the same bytes as the tiles' outputs, except
  // where paired kernels (Graph::pairHostKernels) leave some unwritten,
  // and those must not be read as results. Only the error then names the
  // first tile vertex with a forbidden value in the bytes the kernel
  // wrote (a stale value elsewhere is no result of this step), or the
  // kernel's where no tile output shows one.
  Found found;
  if (st.count) {
    const auto begin = static_cast<std::uint32_t>(st.addr);
    const auto end = begin + static_cast<std::uint32_t>(st.count);
    if (!firstForbidden(begin, end, mem, found))
      return;
    Found tile;
    const Ranges written = covered(begin, end);
    if (firstForbidden(st.a, st.a + st.b, mem, tile, &written))
      throwFor(st, pc, tile.vertex, outputs_[tile.output], tile.element,
               tile.value, replica);
    throwFor(st, pc, found.vertex, outputs_[found.output], found.element,
             found.value, replica);
  }
  if (firstForbidden(st.a, st.a + st.b, mem, found))
    throwFor(st, pc, found.vertex, outputs_[found.output], found.element,
             found.value, replica);
}

void FloatChecker::throwFor(const Step &st, std::size_t pc,
                            std::uint32_t vertex, const Output &o,
                            std::size_t element, double value,
                            unsigned replica) const {
  const VertexInstance &inst = exe_.vertices[vertex];
  // A tile vertex of the step, or else one of its host kernel's.
  const std::uint64_t index =
      vertex >= st.a && vertex < st.a + st.b ? vertex - st.a : vertex - st.addr;
  const RegisteredVertex &cls = *classes_[inst.vertexClass];
  const bool nan = std::isnan(value);
  std::string msg =
      std::string("floating-point exception: ") +
      (nan ? "invalid operation (a NaN; flags inv/nanoo)"
           : "overflow or division by zero (an infinity; flags oflo/div0)") +
      " first produced at program step " + str(pc) + ", compute set \"" +
      exe_.computeSetNames[st.c] + "\", by vertex " + str(index) + " (class " +
      cls.info.name + ", tile " + str(inst.tile) + ") in field \"" +
      cls.info.fields[o.field].name + "\" element " + str(element) +
      (exe_.replicationFactor > 1 ? " of replica " + str(replica) : "") +
      ". Check this op's inputs (a NaN read from the host shows up here "
      "first), lower the learning rate or use loss scaling, or turn the "
      "debug.floatingPointBehaviour flags off to let it through";
  throw FloatingPointError(msg);
}

} // namespace tessera::engine
