// Registration of the reduction and top-k vertices with their estimators.
#include "OpsInternal.hpp"
#include "ReduceInternal.hpp"
#include "ReduceKernels.hpp"

#include "tessera/device/Target.hpp"

#include <cctype>
#include <cmath>

namespace tessera::ops {
namespace {

using reducekernel::ReduceVertex;
using reducekernel::TopKVertex;

// Worker cycles of one partial per 64-bit vector, relative to ADD. Estimates:
// SQUARE_ADD is one fused multiply-add per element like ADD; LOG_ADD makes
// two passes (max, then exp and add) and an exp costs a few cycles.
unsigned opCycleFactor(Operation op) {
  return op == Operation::LOG_ADD ? 4 : 1;
}

template <Operation Op, typename InT, typename OutT, bool Update>
void registerReduce(VertexRegistry &registry) {
  using V = ReduceVertex<Op, InT, OutT, Update>;
  codelet::VertexDescriber<V> d(
      reduceVertexName(Op, Update, typeOf<InT>(), typeOf<OutT>()));
  d.field("partials", &V::partials)
      .field("out", &V::out)
      .field("meta", &V::meta)
      .field("scale", &V::scale);
  // The op sets each instance's estimate from its worker shares; this one
  // is the whole vertex as one share.
  const ReduceCostShape cost{Op, typeOf<InT>(), typeOf<OutT>(), Update};
  registry.addBuiltin(d.take(), [cost](const VertexInstanceShape &s,
                                       const Target &t) {
    const std::uint32_t outs = s.fieldSizes[1].empty() ? 0 : s.fieldSizes[1][0];
    return reduceWorkerCycles(t, cost, s.fieldSizes[0], outs);
  });
}

template <Operation Op, typename InT, typename OutT>
void registerBoth(VertexRegistry &registry) {
  registerReduce<Op, InT, OutT, false>(registry);
  registerReduce<Op, InT, OutT, true>(registry);
}

template <Operation Op> void registerFloatOp(VertexRegistry &registry) {
  registerBoth<Op, float, float>(registry);
  registerBoth<Op, Half, float>(registry);
  registerBoth<Op, float, Half>(registry);
  registerBoth<Op, Half, Half>(registry);
}

template <Operation Op> void registerIntOp(VertexRegistry &registry) {
  registerBoth<Op, int, int>(registry);
  registerBoth<Op, unsigned, unsigned>(registry);
}

// Per element one load and compare against the current k-th best; each
// candidate that enters the heap and the final sort cost about log2(k)
// compare-and-swap steps of a few cycles. Estimate.
template <typename T> void registerTopK(VertexRegistry &registry) {
  using V = TopKVertex<T>;
  codelet::VertexDescriber<V> d(
      templateName("tessera::ops::TopK", {typeOf<T>()}));
  d.field("values", &V::values)
      .field("indices", &V::indices)
      .field("base", &V::base)
      .field("outValues", &V::outValues)
      .field("outIndices", &V::outIndices)
      .field("largest", &V::largest)
      .field("sorted", &V::sorted);
  registry.addBuiltin(d.take(), [](const VertexInstanceShape &s,
                                   const Target &t) {
    const CostFigures &c = t.costs();
    const std::uint64_t perElement =
        std::max(1u, c.reduceWorkerCyclesPerVector);
    std::uint64_t cycles = c.reduceWorkerCycles;
    const auto &values = s.fieldSizes[0];
    const auto &outs = s.fieldSizes[3];
    for (std::size_t r = 0; r < values.size(); ++r) {
      const std::uint64_t k = r < outs.size() ? outs[r] : 1;
      const auto logK = static_cast<std::uint64_t>(std::ceil(std::log2(k + 1)));
      cycles += 6 + perElement * values[r] + 6 * k * logK;
    }
    return cycles;
  });
}

} // namespace

// Fixed cost, a few cycles to set up each partial's pointers and loop, one
// load-and-accumulate per vector of input, one store (and a load when
// updating) per vector of output.
std::uint64_t reduceWorkerCycles(const Target &t, const ReduceCostShape &v,
                                 const std::vector<std::uint32_t> &partials,
                                 std::uint32_t outputs) {
  const CostFigures &c = t.costs();
  const std::uint64_t perVector =
      std::uint64_t(c.reduceWorkerCyclesPerVector) * opCycleFactor(v.op);
  const std::uint64_t inWidth = t.getVectorWidth(v.in);
  const std::uint64_t outWidth = t.getVectorWidth(v.out);
  std::uint64_t cycles = c.reduceWorkerCycles;
  for (std::uint32_t n : partials)
    cycles += 4 + perVector * ((n + inWidth - 1) / inWidth);
  cycles += (v.update ? 2 : 1) * ((outputs + outWidth - 1) / outWidth);
  return cycles;
}

std::string reduceVertexName(Operation op, bool update, Type in, Type out) {
  // ADD -> ReduceAdd, SQUARE_ADD -> ReduceSquareAdd.
  std::string name = "tessera::ops::Reduce";
  bool upper = true;
  for (char ch : operationName(op)) {
    if (ch == '_') {
      upper = true;
      continue;
    }
    name += upper ? ch : static_cast<char>(std::tolower(ch));
    upper = false;
  }
  return templateName(name + (update ? "Update" : ""), {in, out});
}

void registerReduceVertices(VertexRegistry &registry) {
  registerFloatOp<Operation::ADD>(registry);
  registerFloatOp<Operation::MUL>(registry);
  registerFloatOp<Operation::MIN>(registry);
  registerFloatOp<Operation::MAX>(registry);
  registerFloatOp<Operation::SQUARE_ADD>(registry);
  registerFloatOp<Operation::LOG_ADD>(registry);
  registerIntOp<Operation::ADD>(registry);
  registerIntOp<Operation::MUL>(registry);
  registerIntOp<Operation::MIN>(registry);
  registerIntOp<Operation::MAX>(registry);
  registerIntOp<Operation::SQUARE_ADD>(registry);
  registerBoth<Operation::LOGICAL_AND, bool, bool>(registry);
  registerBoth<Operation::LOGICAL_OR, bool, bool>(registry);
  registerTopK<float>(registry);
  registerTopK<Half>(registry);
  registerTopK<int>(registry);
  registerTopK<unsigned>(registry);
}

} // namespace tessera::ops
