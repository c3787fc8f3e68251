// What the importer's graph walk (Importer.cpp) shares with the operator
// converters (Converters*.cpp).
#pragma once

#include "tessera/ir/Builder.hpp"
#include "tessera/ir/Interpreter.hpp"
#include "tessera/onnx/Importer.hpp"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tessera::onnx::detail {

/// A tensor of the ONNX graph: a value of the module, or a value known at
/// import (folded), or both once a known value has been materialised as a
/// constant.
struct Slot {
  ir::Value value;
  std::optional<ir::HostValue> known;
  ir::ValueType type() const {
    return known ? ir::ValueType{known->dtype, known->shape} : value.type();
  }
};

/// The IR type of an ONNX element type; UnsupportedError naming \p what
/// for types Tessera has no equivalent of.
Type elementType(std::int32_t onnxType, const std::string &what);

/// The checked contents of a TensorProto (dimensions against
/// \p maxElements and the data present; external data is unsupported).
ir::HostValue tensorValue(const ::onnx::TensorProto &t, std::size_t maxElements,
                          const std::string &what);

/// The state of the import while one node is converted.
class Context {
public:
  Context(ir::Module &module, std::int64_t opset, std::size_t maxElements)
      : module_(module), builder_(module), opset_(opset),
        maxElements_(maxElements) {}

  // ---- The graph's tensors ------------------------------------------------
  void define(const std::string &name, Slot slot);
  bool defined(const std::string &name) const {
    return tensors_.count(name) != 0;
  }
  Slot &tensor(const std::string &name);
  /// The tensors that have module values, by name.
  std::map<std::string, ir::ValueId, std::less<>> valueTensors() const;
  ir::Value materialise(Slot &slot, std::optional<Type> dtype = {});

  // ---- The node being converted -------------------------------------------
  void setNode(const ::onnx::NodeProto &node) { node_ = &node; }
  void clearNode() { node_ = nullptr; }
  const ::onnx::NodeProto &node() const { return *node_; }
  std::int64_t opset() const { return opset_; }
  std::size_t maxElements() const { return maxElements_; }
  ir::Builder &builder() { return builder_; }
  ir::Module &module() { return module_; }
  /// "node 'name' (Conv, opset 13)", for messages.
  std::string where() const;
  [[noreturn]] void unsupported(const std::string &what) const;
  [[noreturn]] void shapeError(const std::string &what) const;

  /// Whether input \p i is present (ONNX skips optional inputs with "").
  bool has(int i) const;
  Slot &in(int i);
  /// Input \p i as a module value (a known input becomes a constant).
  ir::Value value(int i) { return materialise(in(i)); }
  ir::ValueType typeOf(int i) { return in(i).type(); }
  /// Input \p i's values, which must be known at import (\p what names
  /// the input in the message otherwise).
  const ir::HostValue &known(int i, const std::string &what);
  std::vector<std::int64_t> knownInts(int i, const std::string &what);
  /// Whether output \p i is used by the graph (named).
  bool wantsOutput(int i) const;
  /// Whether output \p i is read by a later node or is a graph output
  /// (exporters name outputs nothing reads, such as Dropout's mask).
  bool outputConsumed(int i) const;
  void setConsumed(std::set<std::string> names) {
    consumed_ = std::move(names);
  }
  void out(int i, Slot slot);
  void out(int i, ir::Value v) { out(i, Slot{v, {}}); }

  // ---- Training-mode operators (ImportOptions::training) -----------------
  void setTraining(bool training, std::uint64_t seed) {
    training_ = training;
    seed_ = seed;
  }
  bool training() const { return training_; }
  /// The UNSIGNED_INT[2] seed variable of dropout masks (made on first
  /// use; its counter moves on each step) and a modifier per call, so each
  /// Dropout node draws its own masks.
  ir::Value dropoutSeed();
  std::uint32_t nextDropoutModifier() { return dropoutModifier_++; }
  /// Records \p next as \p variable's value after each step.
  void addStateUpdate(ir::Value variable, ir::Value next) {
    stateUpdates_.emplace_back(variable.id(), next.id());
  }
  const std::vector<std::pair<ir::ValueId, ir::ValueId>> &stateUpdates() const {
    return stateUpdates_;
  }

  // ---- Attributes ----------------------------------------------------------
  const ::onnx::AttributeProto *attr(const std::string &name) const;
  std::int64_t attrInt(const std::string &name, std::int64_t dflt) const;
  double attrFloat(const std::string &name, double dflt) const;
  std::string attrString(const std::string &name,
                         const std::string &dflt) const;
  std::optional<std::vector<std::int64_t>>
  attrInts(const std::string &name) const;

  /// An operation on slots: folded on the host when every operand is
  /// known, appended to the module otherwise.
  Slot apply(ir::OpKind kind, std::vector<Slot> operands,
             ir::Attributes attrs = {});
  /// A known value of \p dtype and \p shape.
  static Slot knownSlot(Type dtype, ir::Shape shape, std::vector<double> data);
  /// \p axis (negative counts from the end) checked against \p rank.
  std::size_t axis(std::int64_t axis, std::size_t rank) const;

private:
  ir::Module &module_;
  ir::Builder builder_;
  std::int64_t opset_;
  std::size_t maxElements_;
  std::map<std::string, Slot> tensors_;
  const ::onnx::NodeProto *node_ = nullptr;
  std::set<std::string> consumed_;
  bool training_ = false;
  std::uint64_t seed_ = 0;
  std::optional<ir::Value> dropoutSeed_;
  std::uint32_t dropoutModifier_ = 0;
  std::vector<std::pair<ir::ValueId, ir::ValueId>> stateUpdates_;
};

using Converter = void (*)(Context &);
/// Every converter by op type (Converters*.cpp add theirs).
void addNnConverters(std::map<std::string, Converter, std::less<>> &table);
void addShapeConverters(std::map<std::string, Converter, std::less<>> &table);
const std::map<std::string, Converter, std::less<>> &converters();

std::vector<std::int64_t> toInts(const ir::Shape &shape);
/// Whether \p shape has at most \p maxElements elements (no overflow).
bool fits(const ir::Shape &shape, std::size_t maxElements);
/// Attribute sizes (pads, strides, kernels) above this are rejected.
inline constexpr std::int64_t kMaxAttributeSize = std::int64_t{1} << 24;

} // namespace tessera::onnx::detail
