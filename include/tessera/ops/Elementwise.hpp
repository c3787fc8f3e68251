/// \file
/// Elementwise operations (PopLibs' popops): maps of expressions, the named
/// unary and binary operations of Elementwise.def with NumPy broadcasting and
/// scalar overloads, select and clamp, casts, fill, zero, iota and scaled
/// additions. Each appends one compute set to the program: a map of any
/// size expression runs as one vertex per worker region of the output.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/ops/Expr.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <utility>
#include <vector>

namespace tessera {
namespace ops {

using program::Sequence;

/// Options of every function here (they all run through map, mapInPlace or
/// mapWithOutput): none of Tessera's own. Accepted and ignored (PopLibs'
/// choice between generated and library codelets, logged once per process):
/// "enableGenerateCodelet", "forceGenerateCodelet",
/// "enableExpressionOptimizations", "enableVectorBroadcastOptimisations"
/// ("true" or "false"). Any other key is an OptionError with a did-you-mean
/// hint.

/// A new tensor holding \p e applied elementwise to \p ts (broadcast to a
/// common shape by NumPy's rules). The output is mapped like the first
/// input of the output's shape, or linearly.
Tensor map(Graph &graph, const expr::Expr &e, const std::vector<Tensor> &ts,
           Sequence &prog, const DebugContext &dc = {},
           const OptionFlags &options = {});
/// Writes the result into ts[0], which must have the broadcast shape.
void mapInPlace(Graph &graph, const expr::Expr &e,
                const std::vector<Tensor> &ts, Sequence &prog,
                const DebugContext &dc = {}, const OptionFlags &options = {});
/// Writes the result into \p out.
void mapWithOutput(Graph &graph, const expr::Expr &e,
                   const std::vector<Tensor> &ts, const Tensor &out,
                   Sequence &prog, const DebugContext &dc = {},
                   const OptionFlags &options = {});

#define TESSERA_UNARY_API(n)                                                   \
  Tensor n(Graph &graph, const Tensor &a, Sequence &prog,                      \
           const DebugContext &dc = {}, const OptionFlags &options = {});      \
  void n##InPlace(Graph &graph, const Tensor &a, Sequence &prog,               \
                  const DebugContext &dc = {},                                 \
                  const OptionFlags &options = {});                            \
  void n##WithOutput(Graph &graph, const Tensor &a, const Tensor &out,         \
                     Sequence &prog, const DebugContext &dc = {},              \
                     const OptionFlags &options = {});
#define TESSERA_BINARY_API(n)                                                  \
  Tensor n(Graph &graph, const Tensor &a, const Tensor &b, Sequence &prog,     \
           const DebugContext &dc = {}, const OptionFlags &options = {});      \
  void n##InPlace(Graph &graph, const Tensor &a, const Tensor &b,              \
                  Sequence &prog, const DebugContext &dc = {},                 \
                  const OptionFlags &options = {});                            \
  void n##WithOutput(Graph &graph, const Tensor &a, const Tensor &b,           \
                     const Tensor &out, Sequence &prog,                        \
                     const DebugContext &dc = {},                              \
                     const OptionFlags &options = {});                         \
  template <typename T,                                                        \
            typename =                                                         \
                typename std::enable_if<std::is_arithmetic<T>::value>::type>   \
  Tensor n(Graph &graph, const Tensor &a, T b, Sequence &prog,                 \
           const DebugContext &dc = {}, const OptionFlags &options = {}) {     \
    return map(graph,                                                          \
               expr::BinaryOp(binaryOpOf_##n(), expr::_1, expr::Const(b)),     \
               {a}, prog, dc, options);                                        \
  }                                                                            \
  template <typename T,                                                        \
            typename =                                                         \
                typename std::enable_if<std::is_arithmetic<T>::value>::type>   \
  Tensor n(Graph &graph, T a, const Tensor &b, Sequence &prog,                 \
           const DebugContext &dc = {}, const OptionFlags &options = {}) {     \
    return map(graph,                                                          \
               expr::BinaryOp(binaryOpOf_##n(), expr::Const(a), expr::_1),     \
               {b}, prog, dc, options);                                        \
  }

#define TESSERA_UNARY(E, n, N, k, g) TESSERA_UNARY_API(n)
#define TESSERA_PREDICATE(E, n, N, k) TESSERA_UNARY_API(n)
#define TESSERA_BINARY(E, n, N, k, ga, gb)                                     \
  constexpr expr::BinaryOpType binaryOpOf_##n() {                              \
    return expr::BinaryOpType::E;                                              \
  }                                                                            \
  TESSERA_BINARY_API(n)
#define TESSERA_COMPARE(E, n, N, k)                                            \
  constexpr expr::BinaryOpType binaryOpOf_##n() {                              \
    return expr::BinaryOpType::E;                                              \
  }                                                                            \
  TESSERA_BINARY_API(n)
#include "tessera/ops/Elementwise.def"
#undef TESSERA_UNARY_API
#undef TESSERA_BINARY_API

/// pred ? a : b, elementwise (popops::select).
Tensor select(Graph &graph, const Tensor &a, const Tensor &b,
              const Tensor &pred, Sequence &prog, const DebugContext &dc = {},
              const OptionFlags &options = {});
/// x clamped to [lo, hi], elementwise.
Tensor clamp(Graph &graph, const Tensor &x, const Tensor &lo, const Tensor &hi,
             Sequence &prog, const DebugContext &dc = {},
             const OptionFlags &options = {});

/// \p t converted to \p type.
Tensor cast(Graph &graph, const Tensor &t, Type type, Sequence &prog,
            const DebugContext &dc = {}, const OptionFlags &options = {});
/// Sets every element of \p t to \p value.
void fill(Graph &graph, const Tensor &t, double value, Sequence &prog,
          const DebugContext &dc = {});
/// Sets every element of \p t to zero.
void zero(Graph &graph, const Tensor &t, Sequence &prog,
          const DebugContext &dc = {});
/// Sets the 1-D integer tensor \p t to start, start+1, ...
void iota(Graph &graph, const Tensor &t, std::int64_t start, Sequence &prog,
          const DebugContext &dc = {});

/// a = a + scaleB * b.
void scaledAddTo(Graph &graph, const Tensor &a, const Tensor &b, float scaleB,
                 Sequence &prog, const DebugContext &dc = {},
                 const OptionFlags &options = {});
/// a = scaleA * a + scaleB * b.
void scaledAddTo(Graph &graph, const Tensor &a, float scaleA, const Tensor &b,
                 float scaleB, Sequence &prog, const DebugContext &dc = {},
                 const OptionFlags &options = {});
/// a = a + scaleB * b with a scalar tensor scale.
void scaledAddTo(Graph &graph, const Tensor &a, const Tensor &b,
                 const Tensor &scaleB, Sequence &prog,
                 const DebugContext &dc = {}, const OptionFlags &options = {});
/// a = a - scaleB * b.
void scaledSubtractFrom(Graph &graph, const Tensor &a, const Tensor &b,
                        float scaleB, Sequence &prog,
                        const DebugContext &dc = {},
                        const OptionFlags &options = {});
void scaledSubtractFrom(Graph &graph, const Tensor &a, const Tensor &b,
                        const Tensor &scaleB, Sequence &prog,
                        const DebugContext &dc = {},
                        const OptionFlags &options = {});

/// The gradient of a unary operation: dy * d(op)/dx at x (y = op(x)).
/// Throws UnsupportedError for operations without a gradient.
Tensor unaryGradient(Graph &graph, expr::UnaryOpType op, const Tensor &x,
                     const Tensor &y, const Tensor &dy, Sequence &prog,
                     const DebugContext &dc = {});
/// The gradients of a binary operation with respect to a and b, in the
/// broadcast output shape (reduce them to the operand shapes if broadcast).
std::pair<Tensor, Tensor> binaryGradient(Graph &graph, expr::BinaryOpType op,
                                         const Tensor &a, const Tensor &b,
                                         const Tensor &y, const Tensor &dy,
                                         Sequence &prog,
                                         const DebugContext &dc = {});

} // namespace ops
} // namespace tessera
