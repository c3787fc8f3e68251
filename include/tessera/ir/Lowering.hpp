/// \file
/// Lowering: each IR operation becomes calls of the ops library (ops::map,
/// matMul, convolution, pool, nonLinearity, reduce, calcLoss, ...) on a
/// Graph, appended to a program in module order.
///
///     Graph graph(target);
///     program::Sequence prog;
///     ir::LoweredModule lowered = ir::lowerToGraph(module, graph, prog);
///     graph.createHostWrite("x", lowered.tensor(x));
///     graph.createHostRead("loss", lowered.tensor(loss));
///
/// Placement: a module whose operations carry @ipu annotations is sharded:
/// each IPU k of the graph's target gets a virtual graph over its tiles,
/// operations annotated @ipu(k) (IPU 0 when unannotated) create their
/// tensors and vertices there, and a value used on another IPU than its
/// own is copied there once (a Copy program: IPU-link traffic). A module
/// without annotations uses every tile of the graph.
///
/// Layouts: inputs and variables are created when their first user is
/// lowered, with the layout that user prefers (matmul operands by
/// ops::createMatMulInputLHS / RHS, conv2d inputs and weights by
/// ops::createInput / createWeights, gather tables by
/// ops::createSliceableTensor), otherwise mapped linearly; an @ipu
/// annotation on a leaf places it, otherwise it lives on its first user's
/// IPU. Variables get their initialisers' values as initial values.
/// Scalar constants in elementwise operations become constants of the
/// expression rather than tensors. Reshapes, transposes, broadcasts,
/// slices and concatenations are views and copy nothing.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/ir/Builder.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <functional>
#include <map>
#include <vector>

namespace tessera::ir {

struct LoweringOptions {
  /// Options for every ops::matMul (e.g. "availableMemoryProportion").
  OptionFlags matMulOptions;
  /// Options for every ops::convolution and its gradients.
  OptionFlags convOptions;
  /// Give the graph variables of IR variables their initialisers' values.
  bool initialiseVariables = true;
  /// Fuse chains of float elementwise operations into one map each (one
  /// compute set instead of one per operation): a result used once, by an
  /// elementwise operation on the same IPU with as many elements, that is
  /// not a module output, is computed inside its user's map and gets no
  /// tensor of its own.
  bool fuseElementwise = true;
  /// Values that must keep a tensor even where fusion would inline them
  /// (for reading intermediate values in tests and tools).
  std::vector<ValueId> keep;
  /// (variable, new value) pairs, as a training step's updates: where the
  /// new value is a fused map run after every other reader of the
  /// variable, the map writes into the variable, whose tensor the value
  /// then shares (no copy back is needed; LoweredModule::tensor tells).
  std::vector<std::pair<ValueId, ValueId>> updateInPlace;
  /// (variable, like) pairs: the variable is laid out as a clone of like's
  /// tensor when like is lowered first on its IPU (optimizer state as its
  /// weight, so their elementwise updates need no rearranging).
  std::vector<std::pair<ValueId, ValueId>> layoutLike;
  /// Per op (by index in the module), the program it is appended to, for
  /// lowering into several programs; empty: every op into the first. Ops
  /// fuse only within one program, and a value used on another IPU is
  /// copied there once per program that uses it.
  std::vector<unsigned> programOf;
  /// For schedules that run the programs repeatedly and out of module
  /// order (pipelining): when set, an op of program `to` that reads a value
  /// computed in program `from` (or an input fed by it, see inputProgram)
  /// where boundary(from, to, sameIpu) is true does not read it where it
  /// lies: its program gets a boundary tensor of the value, on the op's
  /// IPU, spread over the tiles as the source is, which the caller fills
  /// (LoweredModule::boundaries); lowering adds no copy for it.
  std::function<bool(unsigned from, unsigned to, bool sameIpu)> boundary;
  /// With boundary: the program each listed input is fed in.
  std::map<ValueId, unsigned> inputProgram;
  /// Variables whose tensors get no initial value: the caller loads them
  /// (optimizer state offloaded to remote buffers, for one).
  std::vector<ValueId> uninitialised;
};

/// A value read through a boundary (LoweringOptions::boundary), and the
/// tensor its reading program reads.
struct Boundary {
  ValueId value = 0;
  /// The program computing (or feeding) the value, and the one reading it.
  unsigned from = 0, to = 0;
  Tensor tensor;
};

/// What lowering made: a tensor per value, and where it lives.
class LoweredModule {
public:
  /// The tensor of \p id on its own IPU (IrError for a value that was not
  /// lowered: one of another module, an unused constant, or a value fused
  /// into its user's map; LoweringOptions::keep keeps one).
  const Tensor &tensor(ValueId id) const;
  const Tensor &tensor(const Value &v) const { return tensor(v.id()); }
  /// The IPU the value lives on (0 in an unsharded module).
  unsigned ipu(ValueId id) const;
  /// How many inter-IPU copies lowering inserted.
  std::size_t numCopies() const { return numCopies_; }
  /// How many values fusion computed inside their users' maps.
  std::size_t numFused() const { return numFused_; }
  /// Whether the module was lowered onto per-IPU virtual graphs.
  bool sharded() const { return sharded_; }
  /// The boundary tensors made, in the order first read.
  const std::vector<Boundary> &boundaries() const { return boundaries_; }

private:
  friend class Lowering;
  std::vector<Tensor> tensors_;
  std::vector<unsigned> ipus_;
  std::size_t numCopies_ = 0;
  std::size_t numFused_ = 0;
  bool sharded_ = false;
  std::vector<Boundary> boundaries_;
};

/// Lowers \p module into \p graph, appending its work to \p prog. The
/// module is verified first against the target's IPU count (IrError for
/// an @ipu beyond it); the ops library's errors propagate (a plan that
/// does not fit, for example). ops::addCodelets(graph) is called.
LoweredModule lowerToGraph(const Module &module, Graph &graph,
                           program::Sequence &prog,
                           const LoweringOptions &options = {});
/// As above, each op appended to programs[options.programOf[op]] (IrError
/// for an index beyond \p programs). Programs that run in another order
/// than the module's must keep each update after its variable's readers.
LoweredModule lowerToGraph(const Module &module, Graph &graph,
                           const std::vector<program::Sequence *> &programs,
                           const LoweringOptions &options = {});

} // namespace tessera::ir
