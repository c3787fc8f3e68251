// Shared by shape inference and the verifier: one operation's operand
// types and attributes, with error helpers that prefix the op's name so
// every message says which operation is wrong.
#pragma once

#include "tessera/ir/Module.hpp"

#include <string>
#include <vector>

namespace tessera::ir::detail {

struct InferContext {
  OpKind kind;
  const std::vector<ValueType> &in;
  const Attributes &attrs;
  const std::vector<std::string> &names;

  std::string op() const { return std::string(opKindName(kind)); }
  /// "'x' float[2, 3]" or "operand 1 float[2, 3]".
  std::string describe(std::size_t i) const;
  const Shape &shape(std::size_t i) const { return in[i].shape; }
  Type dtype(std::size_t i) const { return in[i].dtype; }

  [[noreturn]] void shapeError(const std::string &msg) const;
  [[noreturn]] void typeError(const std::string &msg) const;
  [[noreturn]] void attrError(const std::string &msg) const;

  std::int64_t getInt(const char *name) const;
  double getFloat(const char *name) const;
  const std::string &getString(const char *name) const;
  std::vector<std::int64_t> getInts(const char *name) const;
  /// An int list of exactly \p count elements, each >= \p min.
  std::vector<std::size_t> getSizes(const char *name, std::size_t count,
                                    std::size_t min) const;

  /// \p decoder(attrs) (an OpAttrs.hpp decode*), its IrError prefixed with
  /// the op's name.
  template <typename Decoder>
  auto decode(Decoder decoder) const -> decltype(decoder(attrs)) {
    try {
      return decoder(attrs);
    } catch (const IrError &e) {
      attrError(e.what());
    }
  }

  /// Requires operand \p i to be FLOAT or HALF.
  void requireFloat(std::size_t i) const;
  /// Requires operand \p i to be INT or UNSIGNED_INT.
  void requireIndex(std::size_t i) const;
  void requireRank(std::size_t i, std::size_t rank) const;
  void requireSameType(std::size_t i, std::size_t j) const;
  void requireSameShape(std::size_t i, std::size_t j) const;
  /// An axis in [-rank, rank) as a non-negative axis.
  std::size_t axis(std::int64_t a, std::size_t rank) const;
};

/// Shape inference of the families in NnInference.cpp; inferResultTypes
/// (ShapeInference.cpp) picks one per kind.
using InferredTypes = std::vector<ValueType>;
InferredTypes inferConv(const InferContext &c);
InferredTypes inferPool(const InferContext &c);
InferredTypes inferSoftmax(const InferContext &c);
InferredTypes inferDropout(const InferContext &c);
InferredTypes inferNorm(const InferContext &c);
/// Logits and labels: sparse cross-entropy, its gradient, accuracy.
InferredTypes inferLabelled(const InferContext &c);
/// categoricalCrossEntropy, meanSquaredError.
InferredTypes inferRowLoss(const InferContext &c);
InferredTypes inferArgmax(const InferContext &c);
InferredTypes inferElementwiseGrad(const InferContext &c);

/// NumPy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

} // namespace tessera::ir::detail
