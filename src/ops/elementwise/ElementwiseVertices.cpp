// Registration of the map vertices with their estimators, and the compiler
// from expressions to map bytecode.
#include "MapVertex.hpp"
#include "OpsInternal.hpp"

#include "tessera/device/Target.hpp"
#include "tessera/support/Error.hpp"

#include <cstring>

namespace tessera::ops {
namespace mapcode {
namespace {

class Compiler {
public:
  Compiler(const std::vector<unsigned> &slot, const std::vector<bool> &isBool)
      : slot_(slot), isBool_(isBool) {}

  unsigned emit(const expr::Expr &e) {
    const expr::Expr::Node &n = e.node();
    std::vector<unsigned> r;
    for (const expr::Expr &a : n.args)
      r.push_back(emit(a));
    const unsigned d = next();
    switch (n.kind) {
    case expr::NodeKind::PlaceHolder: {
      const unsigned k = n.index - 1;
      TESSERA_INTERNAL_ASSERT(k < slot_.size(), "placeholder without input");
      push(word(Load, d), slot_[k] | (isBool_[k] ? kBoolInput : 0));
      break;
    }
    case expr::NodeKind::Index:
      push(word(Index, d), 0);
      break;
    case expr::NodeKind::Const:
      push(word(Constant, d), static_cast<std::uint32_t>(p_.constants.size()));
      p_.constants.push_back(n.value);
      break;
    case expr::NodeKind::Cast:
      push(word(Cast, d, r[0]), static_cast<std::uint32_t>(n.type));
      break;
    case expr::NodeKind::Unary:
      push(word(Unary, d, r[0]), n.op);
      break;
    case expr::NodeKind::Binary:
      push(word(Binary, d, r[0], r[1]), n.op);
      break;
    case expr::NodeKind::Ternary:
      push(word(n.op == 0 ? Select : Clamp, d, r[0], r[1]), r[2]);
      break;
    }
    return d;
  }

  Program take() { return std::move(p_); }

private:
  unsigned next() {
    if (regs_ == kMaxRegisters)
      throw UnsupportedError("map: the expression has more than " +
                             std::to_string(kMaxRegisters) +
                             " nodes; split it into several maps");
    return regs_++;
  }
  void push(std::uint32_t w, std::uint32_t extra) {
    p_.code.push_back(w);
    p_.code.push_back(extra);
  }

  const std::vector<unsigned> &slot_;
  const std::vector<bool> &isBool_;
  unsigned regs_ = 0;
  Program p_;
};

} // namespace

Program compile(const expr::Expr &e, const std::vector<unsigned> &inputSlot,
                const std::vector<bool> &isBool) {
  Compiler c(inputSlot, isBool);
  c.emit(e);
  return c.take();
}

} // namespace mapcode

namespace {

template <typename InT, typename OutT>
void registerMap(VertexRegistry &registry) {
  using V = MapVertex<InT, OutT>;
  codelet::VertexDescriber<V> d(
      templateName("tessera::ops::Map", {typeOf<InT>(), typeOf<OutT>()}));
  d.field("in", &V::in)
      .field("flags", &V::flags)
      .field("out", &V::out)
      .sharedField("code", &V::code)
      .sharedField("constants", &V::constants)
      .field("indexBase", &V::indexBase);
  // Poplar's elementwise figures: a fixed cost per vertex plus a few cycles
  // per 64-bit vector for each operation of the expression.
  // mapImpl gives each map vertex an estimate from its code's operations
  // and its workers' shares; this one, for a vertex without, counts every
  // instruction of the code and splits the work evenly over the workers.
  registry.addBuiltin(d.take(), [](const VertexInstanceShape &s,
                                   const Target &t) {
    const CostFigures &c = t.costs();
    const std::uint64_t fixed = c.binaryOpWorkerCycles;
    const unsigned instr = s.fieldSizes[3].empty() ? 1 : s.fieldSizes[3][0] / 2;
    const std::uint64_t all = mapcode::mapWorkerCycles(
        c.binaryOpWorkerCycles, c.binaryOpWorkerCyclesPerVector, instr,
        s.fieldSizes[2], t.getVectorWidth(typeOf<OutT>()));
    return fixed + (all - fixed + MultiVertex::numWorkers() - 1) /
                       MultiVertex::numWorkers();
  });
}

template <typename InT> void registerMapsFrom(VertexRegistry &registry) {
  registerMap<InT, float>(registry);
  registerMap<InT, Half>(registry);
  registerMap<InT, int>(registry);
  registerMap<InT, unsigned>(registry);
  registerMap<InT, bool>(registry);
}

} // namespace

void registerElementwiseVertices(VertexRegistry &registry) {
  registerMapsFrom<float>(registry);
  registerMapsFrom<Half>(registry);
  registerMapsFrom<int>(registry);
  registerMapsFrom<unsigned>(registry);
  registerMapsFrom<bool>(registry);
}

} // namespace tessera::ops
