// The lowering driver: decides where each value lives, creates inputs and
// variables lazily with their first user's preferred layout, inserts
// inter-IPU copies, and hands each op to LoweringOps.cpp.
#include "LoweringInternal.hpp"

#include "tessera/device/Target.hpp"
#include "tessera/ir/Verifier.hpp"
#include "tessera/ops/Codelets.hpp"
#include "tessera/ops/Elementwise.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace tessera::ir {

const Tensor &LoweredModule::tensor(ValueId id) const {
  if (id >= tensors_.size() || !tensors_[id].valid())
    throw IrError("%" + std::to_string(id) +
                  " has no tensor: it is not a lowered value of the module "
                  "(an unused constant, or a value fused into its user's "
                  "map: list it in LoweringOptions::keep to keep one)");
  return tensors_[id];
}

unsigned LoweredModule::ipu(ValueId id) const {
  (void)tensor(id);
  return ipus_[id];
}

class Lowering {
public:
  Lowering(const Module &m, Graph &graph,
           std::vector<program::Sequence *> programs,
           const LoweringOptions &options)
      : m_(m), top_(graph), programs_(std::move(programs)), options_(options) {}
  LoweredModule run();

private:
  Graph &graphFor(unsigned ipu);
  DebugContext nameOf(ValueId id) const;
  Tensor operandOn(ValueId v, unsigned ipu, const Op &op, unsigned index);
  Tensor constantOn(ValueId v, unsigned ipu);
  void createLeaf(ValueId v, unsigned ipu, const Op *op, unsigned index);
  void layOutCastResult(const Op &cast, unsigned ipu);
  /// The IPU \p op runs on: its annotation when the module is sharded.
  unsigned ipuOf(const Op &op) const {
    return out_.sharded_ ? op.annotations.ipu.value_or(0) : 0;
  }
  Tensor copyTo(const Tensor &src, unsigned from, unsigned to,
                const DebugContext &dc);
  Tensor placedLike(const Tensor &src, unsigned from, unsigned to,
                    const DebugContext &dc);
  std::optional<unsigned> boundaryFrom(ValueId v, unsigned ipu) const;
  std::optional<double> inlinable(const Op &op, unsigned index) const;
  void lower(const Op &op);
  // Elementwise fusion.
  struct Leaves {
    std::vector<ValueId> ids;
    std::vector<Tensor> tensors;
  };
  bool fusible(const Op &op) const;
  /// Whether \p op is lowered as one map of the ops fused into it.
  bool rootsFusion(const Op &op) const;
  void planFusion();
  void planInPlaceUpdates();
  ops::expr::Expr exprOf(ValueId v, unsigned ipu, const Op &user,
                         unsigned index, Leaves &leaves);
  void lowerFused(const Op &root, unsigned ipu, const DebugContext &dc);

  unsigned programOf(std::size_t op) const {
    return op < options_.programOf.size() ? options_.programOf[op] : 0;
  }

  const Module &m_;
  Graph &top_;
  std::vector<program::Sequence *> programs_;
  /// The program of the op being lowered.
  program::Sequence *prog_ = nullptr;
  unsigned progIndex_ = 0;
  const LoweringOptions &options_;
  LoweredModule out_;
  std::map<unsigned, std::unique_ptr<Graph>> shards_;
  std::map<std::pair<ValueId, unsigned>, Tensor> constants_;
  /// Per IPU: where its next linearly mapped leaf or constant starts.
  std::map<unsigned, detail::TileSpreader> spreaders_;
  /// (value, reading program) -> its boundary tensor's index.
  std::map<std::pair<ValueId, unsigned>, std::size_t> boundaryIndex_;
  /// (value, IPU, program) -> its copy there.
  std::map<std::tuple<ValueId, unsigned, unsigned>, Tensor> copies_;
  /// Per value: computed inside its user's map (fusion).
  std::vector<bool> fused_;
  /// Per value: the index of the op that computes it, if any.
  std::vector<std::size_t> producer_;
  /// New value -> the variable its fused map writes into.
  std::map<ValueId, ValueId> inPlace_;
  /// Per value: the op that first reads it and the operand it is there
  /// (SIZE_MAX when none does).
  std::vector<std::pair<std::size_t, unsigned>> firstUse_;
  /// A cast's result -> the tensor, laid out for the cast's first user,
  /// that the cast's result is copied into (see layOutCastResult).
  std::map<ValueId, Tensor> castInto_;
};

namespace {
// A fused map needs a register per node, leaves and constants included,
// which planFusion counts as nodes: up to ops' mapcode::kMaxRegisters (24).
// A gated Adam weight update (step, clamp, select) is 24.
constexpr unsigned kMaxFusedNodes = 24;
} // namespace

// Unary and binary arithmetic whose operands and result all have one
// floating-point type: one map vertex evaluates a tree of them in float.
bool Lowering::fusible(const Op &op) const {
  const OpClass cls = opClass(op.kind);
  if (cls != OpClass::Unary && cls != OpClass::Binary)
    return false;
  const Type t = m_.typeOf(op.results[0]).dtype;
  if (!isFloatingPoint(t))
    return false;
  bool anyTensor = false;
  for (ValueId v : op.operands) {
    if (m_.typeOf(v).dtype != t)
      return false;
    anyTensor |= m_.value(v).kind != ValueKind::Constant;
  }
  return anyTensor;
}

void Lowering::planFusion() {
  const std::size_t n = m_.numValues();
  fused_.assign(n, false);
  producer_.assign(n, SIZE_MAX);
  if (!options_.fuseElementwise)
    return;
  std::vector<unsigned> uses(n, 0), nodes(n, 1);
  std::vector<bool> needed(n, false);
  for (const Op &op : m_.ops())
    for (ValueId v : op.operands)
      ++uses[v];
  for (const Output &o : m_.outputs())
    needed[o.value] = true;
  for (ValueId v : options_.keep)
    if (v < n)
      needed[v] = true;
  // An update is written back to its variable, so it needs a tensor.
  for (const auto &update : options_.updateInPlace)
    if (update.second < n)
      needed[update.second] = true;
  const auto &ops = m_.ops();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op &user = ops[i];
    for (ValueId r : user.results)
      producer_[r] = i;
    if (!fusible(user))
      continue;
    const std::size_t size = numElements(m_.typeOf(user.results[0]).shape);
    unsigned total = 1;
    // Operands are produced earlier (ops are in order), so their trees are
    // known; take them while the tree stays small enough.
    for (ValueId v : user.operands) {
      const std::size_t p = producer_[v];
      const bool candidate = p != SIZE_MAX && uses[v] == 1 && !needed[v] &&
                             fusible(ops[p]) &&
                             ops[p].annotations.ipu == user.annotations.ipu &&
                             programOf(p) == programOf(i) &&
                             numElements(m_.typeOf(v).shape) == size &&
                             total + nodes[v] <= kMaxFusedNodes;
      fused_[v] = candidate;
      total += candidate ? nodes[v] : 1;
    }
    nodes[user.results[0]] = total;
  }
}

bool Lowering::rootsFusion(const Op &op) const {
  return std::any_of(op.operands.begin(), op.operands.end(),
                     [&](ValueId v) { return fused_[v]; });
}

// A variable's update is written in place when its map is the last op (in
// lowering order, a fused op counting as its root) to read the variable.
void Lowering::planInPlaceUpdates() {
  if (options_.updateInPlace.empty())
    return;
  const auto &ops = m_.ops();
  // The root whose lowering runs each op: itself, or its fused user's.
  std::vector<std::size_t> root(ops.size());
  std::vector<std::size_t> user(m_.numValues(), SIZE_MAX);
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (ValueId v : ops[i].operands)
      user[v] = i;
  for (std::size_t i = ops.size(); i-- > 0;) {
    const ValueId r = ops[i].results[0];
    root[i] = fused_[r] ? root[user[r]] : i;
  }
  std::vector<std::size_t> lastRead(m_.numValues(), 0);
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (ValueId v : ops[i].operands)
      lastRead[v] = std::max(lastRead[v], root[i]);
  for (const auto &[var, next] : options_.updateInPlace) {
    const std::size_t p = next < producer_.size() ? producer_[next] : SIZE_MAX;
    if (p == SIZE_MAX || fused_[next] || lastRead[var] > p ||
        m_.value(var).kind != ValueKind::Variable ||
        m_.typeOf(var) != m_.typeOf(next))
      continue;
    if (rootsFusion(ops[p]))
      inPlace_[next] = var;
  }
}

ops::expr::Expr Lowering::exprOf(ValueId v, unsigned ipu, const Op &user,
                                 unsigned index, Leaves &leaves) {
  using namespace ops::expr;
  if (!fused_[v]) {
    auto it = std::find(leaves.ids.begin(), leaves.ids.end(), v);
    if (it != leaves.ids.end())
      return PlaceHolder(static_cast<unsigned>(it - leaves.ids.begin()) + 1);
    leaves.ids.push_back(v);
    leaves.tensors.push_back(operandOn(v, ipu, user, index));
    return PlaceHolder(static_cast<unsigned>(leaves.ids.size()));
  }
  const Op &op = m_.ops()[producer_[v]];
  std::vector<Expr> args;
  for (unsigned i = 0; i < op.operands.size(); ++i) {
    if (const auto s = inlinable(op, i))
      args.push_back(Const(*s, m_.typeOf(op.operands[i]).dtype));
    else
      args.push_back(exprOf(op.operands[i], ipu, op, i, leaves));
  }
  if (args.size() == 1)
    return UnaryOp(*unaryOpType(op.kind), args[0]);
  return BinaryOp(*binaryOpType(op.kind), args[0], args[1]);
}

// The root of a fused tree: its whole tree becomes one map.
void Lowering::lowerFused(const Op &root, unsigned ipu,
                          const DebugContext &dc) {
  Leaves leaves;
  // The root is not fused itself, so exprOf of its result would take it as
  // a leaf; expand it as if it were.
  fused_[root.results[0]] = true;
  const ops::expr::Expr e = exprOf(root.results[0], ipu, root, 0, leaves);
  fused_[root.results[0]] = false;
  Tensor t;
  if (auto it = inPlace_.find(root.results[0]); it != inPlace_.end()) {
    const ValueId var = it->second;
    if (!out_.tensors_[var].valid())
      createLeaf(var, ipu, nullptr, 0);
    if (out_.ipus_[var] == ipu) {
      t = out_.tensors_[var];
      ops::mapWithOutput(graphFor(ipu), e, leaves.tensors, t, *prog_, dc);
    }
  }
  if (!t.valid())
    t = ops::map(graphFor(ipu), e, leaves.tensors, *prog_, dc);
  const ValueType &type = m_.typeOf(root.results[0]);
  TESSERA_INTERNAL_ASSERT(
      t.elementType() == type.dtype && t.shape() == type.shape,
      "fused map gave " + t.shapeToString() + " for " + type.toString());
  out_.tensors_[root.results[0]] = t;
  out_.ipus_[root.results[0]] = ipu;
}

Graph &Lowering::graphFor(unsigned ipu) {
  if (!out_.sharded_)
    return top_;
  auto &g = shards_[ipu];
  if (!g) {
    const unsigned perIpu = top_.getTarget().getTilesPerIPU();
    g = std::make_unique<Graph>(
        top_.createVirtualGraph(ipu * perIpu, (ipu + 1) * perIpu));
  }
  return *g;
}

DebugContext Lowering::nameOf(ValueId id) const {
  const std::string &name = m_.value(id).name;
  return DebugContext(name.empty() ? "ir/%" + std::to_string(id) : name);
}

Tensor Lowering::constantOn(ValueId v, unsigned ipu) {
  auto key = std::make_pair(v, ipu);
  auto it = constants_.find(key);
  if (it != constants_.end())
    return it->second;
  // Constants are cheap to duplicate, so each IPU gets its own rather than
  // a copy over the IPU-links.
  Tensor t = detail::addConstantTensor(graphFor(ipu), m_.typeOf(v),
                                       m_.constantOf(v).data, nameOf(v),
                                       &spreaders_[ipu]);
  if (!out_.tensors_[v].valid()) {
    out_.tensors_[v] = t;
    out_.ipus_[v] = ipu;
  }
  return constants_[key] = t;
}

void Lowering::createLeaf(ValueId v, unsigned ipu, const Op *op,
                          unsigned index) {
  const ValueInfo &info = m_.value(v);
  const unsigned home = out_.sharded_ ? info.ipu.value_or(ipu) : 0;
  Graph &g = graphFor(home);
  Tensor t;
  for (const auto &[var, like] : options_.layoutLike)
    if (var == v && out_.tensors_[like].valid() && out_.ipus_[like] == home)
      t = g.clone(out_.tensors_[like], nameOf(v));
  if (!t.valid() && op && home == ipu && op->kind == OpKind::CAST &&
      info.kind == ValueKind::Variable)
    layOutCastResult(*op, ipu);
  if (!t.valid() && op && home == ipu) {
    std::vector<ValueType> types;
    for (ValueId o : op->operands)
      types.push_back(m_.typeOf(o));
    t = detail::preferredLayout(g, *op, index, types, options_, nameOf(v));
  }
  if (!t.valid()) {
    t = g.addVariable(info.type.dtype, info.type.shape, nameOf(v));
    spreaders_[home].map(g, t);
  }
  if (info.kind == ValueKind::Variable && options_.initialiseVariables &&
      std::find(options_.uninitialised.begin(), options_.uninitialised.end(),
                v) == options_.uninitialised.end()) {
    detail::setInitialValues(g, t, m_.variableOf(v).init, info.type.shape);
  }
  out_.tensors_[v] = t;
  out_.ipus_[v] = home;
}

// A variable first read by a cast (mixed precision's float master weights,
// read by a convolution or a matmul): the cast's result is rearranged once,
// as PopLibs rearranges an operand, into a tensor laid out as the cast's
// first user prefers (castInto_). Cast where the variable lies (spread
// linearly), a forward convolution gathered its weights from everywhere
// and an input-gradient convolution's transposed read of them crossed a
// tile at almost every element (ResNet-50 at 224x224: some 85 million more
// one-element exchange pieces than after this). The variable keeps its
// layout, and the cast stays on its tiles: laid out like the convolution's
// weights, the variable's update gathered its operands to the few tiles
// the plan keeps weights on (5% more estimated cycles a step), and a cast
// writing there gathered floats, twice the bytes of the half copy.
void Lowering::layOutCastResult(const Op &cast, unsigned ipu) {
  const ValueId r = cast.results[0];
  const auto [index, operand] = firstUse_[r];
  if (index == SIZE_MAX || fused_[r] || rootsFusion(cast))
    return;
  const Op &user = m_.ops()[index];
  if (ipuOf(user) != ipu)
    return;
  std::vector<ValueType> types;
  for (ValueId o : user.operands)
    types.push_back(m_.typeOf(o));
  const Tensor out = detail::preferredLayout(graphFor(ipu), user, operand,
                                             types, options_, nameOf(r));
  if (out.valid())
    castInto_[r] = out;
}

// A tensor like \p src, on IPU \p to, whose tiles are src's shifted to
// that IPU, so a copy sends each tile's part to its counterpart.
Tensor Lowering::placedLike(const Tensor &src, unsigned from, unsigned to,
                            const DebugContext &dc) {
  const unsigned perIpu = top_.getTarget().getTilesPerIPU();
  const TileMapping srcMap = top_.getTileMapping(src);
  TileMapping dstMap(out_.sharded_ ? perIpu : srcMap.size());
  const unsigned shift = out_.sharded_ ? from * perIpu : 0;
  for (unsigned tile = 0; tile < srcMap.size(); ++tile)
    for (const Interval &iv : srcMap[tile])
      dstMap[tile - shift].push_back(iv);
  Graph &g = graphFor(to);
  Tensor dst = g.addVariable(src.elementType(), src.shape(), dc);
  g.setTileMapping(dst, dstMap);
  return dst;
}

Tensor Lowering::copyTo(const Tensor &src, unsigned from, unsigned to,
                        const DebugContext &dc) {
  Tensor dst = placedLike(src, from, to,
                          DebugContext(dc, "to ipu" + std::to_string(to)));
  prog_->add(program::Copy(src, dst));
  ++out_.numCopies_;
  return dst;
}

// The program that computes or feeds \p v, when the current op (on IPU
// \p ipu) reads it through a boundary; none when it reads it where it lies.
std::optional<unsigned> Lowering::boundaryFrom(ValueId v, unsigned ipu) const {
  if (!options_.boundary)
    return std::nullopt;
  const ValueInfo &info = m_.value(v);
  std::optional<unsigned> from;
  if (info.kind == ValueKind::OpResult)
    from = programOf(producer_[v]);
  else if (auto it = options_.inputProgram.find(v);
           it != options_.inputProgram.end())
    from = it->second;
  if (!from || *from == progIndex_ ||
      !options_.boundary(*from, progIndex_, out_.ipus_[v] == ipu))
    return std::nullopt;
  return from;
}

Tensor Lowering::operandOn(ValueId v, unsigned ipu, const Op &op,
                           unsigned index) {
  if (m_.value(v).kind == ValueKind::Constant)
    return constantOn(v, ipu);
  if (!out_.tensors_[v].valid())
    createLeaf(v, ipu, &op, index);
  if (const auto from = boundaryFrom(v, ipu)) {
    const auto key = std::make_pair(v, progIndex_);
    auto it = boundaryIndex_.find(key);
    if (it == boundaryIndex_.end()) {
      const Tensor t = placedLike(out_.tensors_[v], out_.ipus_[v], ipu,
                                  DebugContext(nameOf(v), "boundary"));
      it = boundaryIndex_.emplace(key, out_.boundaries_.size()).first;
      out_.boundaries_.push_back({v, *from, progIndex_, t});
    }
    return out_.boundaries_[it->second].tensor;
  }
  if (out_.ipus_[v] == ipu)
    return out_.tensors_[v];
  // A copy made in another program may not have run before this one.
  auto key = std::make_tuple(v, ipu, progIndex_);
  auto it = copies_.find(key);
  if (it != copies_.end())
    return it->second;
  return copies_[key] = copyTo(out_.tensors_[v], out_.ipus_[v], ipu, nameOf(v));
}

// A scalar constant operand of an elementwise op can be an expression
// constant, unless it is what gives the result its shape.
std::optional<double> Lowering::inlinable(const Op &op, unsigned index) const {
  const OpClass cls = opClass(op.kind);
  if (cls != OpClass::Binary && cls != OpClass::Compare)
    return std::nullopt;
  const ValueId v = op.operands[index], other = op.operands[1 - index];
  if (m_.value(v).kind != ValueKind::Constant ||
      m_.constantOf(v).data.size() != 1 ||
      m_.typeOf(other).shape != m_.typeOf(op.results[0]).shape ||
      (m_.value(other).kind == ValueKind::Constant &&
       m_.constantOf(other).data.size() == 1 && index == 1))
    return std::nullopt;
  return m_.constantOf(v).data[0];
}

void Lowering::lower(const Op &op) {
  if (fused_[op.results[0]]) {
    ++out_.numFused_; // its user's map computes it
    return;
  }
  const unsigned ipu = ipuOf(op);
  detail::LowerContext c{graphFor(ipu),         *prog_,  op, {}, {}, {}, {},
                         nameOf(op.results[0]), options_};
  c.dc =
      DebugContext(DebugContext(std::string(opKindName(op.kind))), c.dc.name);
  if (rootsFusion(op)) {
    lowerFused(op, ipu, c.dc);
    return;
  }
  for (unsigned i = 0; i < op.operands.size(); ++i) {
    c.splat.push_back(inlinable(op, i));
    c.in.push_back(c.splat.back() ? Tensor()
                                  : operandOn(op.operands[i], ipu, op, i));
    c.inTypes.push_back(m_.typeOf(op.operands[i]));
  }
  for (ValueId r : op.results)
    c.outTypes.push_back(m_.typeOf(r));
  std::vector<Tensor> results = detail::lowerOp(c);
  if (auto it = castInto_.find(op.results[0]); it != castInto_.end()) {
    prog_->add(program::Copy(results[0], it->second, false,
                             DebugContext(c.dc, "rearrange")));
    results[0] = it->second;
  }
  TESSERA_INTERNAL_ASSERT(results.size() == op.results.size(),
                          "lowering of " + std::string(opKindName(op.kind)) +
                              " gave the wrong number of results");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ValueType &t = c.outTypes[i];
    TESSERA_INTERNAL_ASSERT(
        results[i].elementType() == t.dtype && results[i].shape() == t.shape,
        "lowering of " + std::string(opKindName(op.kind)) + " gave " +
            results[i].shapeToString() + " for " + t.toString());
    out_.tensors_[op.results[i]] = results[i];
    out_.ipus_[op.results[i]] = ipu;
  }
}

LoweredModule Lowering::run() {
  const unsigned numIpus = top_.getTarget().getNumIPUs();
  verify(m_, {.numIpus = numIpus});
  ops::addCodelets(top_);
  for (const Op &op : m_.ops())
    out_.sharded_ |= op.annotations.ipu.has_value();
  for (ValueId id = 0; id < m_.numValues(); ++id)
    out_.sharded_ |= m_.value(id).ipu.has_value();
  out_.tensors_.assign(m_.numValues(), Tensor());
  out_.ipus_.assign(m_.numValues(), 0);
  for (unsigned p : options_.programOf)
    if (p >= programs_.size())
      throw IrError("lowering: an op's program " + std::to_string(p) +
                    " is beyond the " + std::to_string(programs_.size()) +
                    " programs given");
  planFusion();
  planInPlaceUpdates();
  firstUse_.assign(m_.numValues(), {SIZE_MAX, 0});
  for (std::size_t i = m_.ops().size(); i-- > 0;) {
    const auto &operands = m_.ops()[i].operands;
    for (unsigned k = static_cast<unsigned>(operands.size()); k-- > 0;)
      firstUse_[operands[k]] = {i, k};
  }
  for (std::size_t i = 0; i < m_.ops().size(); ++i) {
    progIndex_ = programOf(i);
    prog_ = programs_.at(progIndex_);
    lower(m_.ops()[i]);
  }
  prog_ = programs_.at(0);
  progIndex_ = 0;
  // Inputs and variables nothing uses still get tensors, for the host to
  // write; constants only when they are outputs.
  for (ValueId id = 0; id < m_.numValues(); ++id) {
    const ValueInfo &v = m_.value(id);
    if (v.kind == ValueKind::Input || v.kind == ValueKind::Variable)
      if (!out_.tensors_[id].valid())
        createLeaf(id, v.ipu.value_or(0), nullptr, 0);
  }
  for (const Output &o : m_.outputs())
    if (!out_.tensors_[o.value].valid())
      constantOn(o.value, m_.value(o.value).ipu.value_or(0));
  return std::move(out_);
}

LoweredModule lowerToGraph(const Module &module, Graph &graph,
                           program::Sequence &prog,
                           const LoweringOptions &options) {
  return Lowering(module, graph, {&prog}, options).run();
}

LoweredModule lowerToGraph(const Module &module, Graph &graph,
                           const std::vector<program::Sequence *> &programs,
                           const LoweringOptions &options) {
  if (programs.empty())
    throw IrError("lowering: no program to lower into");
  return Lowering(module, graph, programs, options).run();
}

} // namespace tessera::ir
