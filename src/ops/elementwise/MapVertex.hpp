// Private to ops/: the vertex that runs a fused map, and its evaluator. One
// class per (input type, output type); the arithmetic type E is float for
// float, half and bool data, double when integers are involved, so integer
// results stay exact.
#pragma once

#include "MapCode.hpp"

#include "tessera/Vertex.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace tessera::ops {

template <typename E> inline E geluKernel(E x) {
  const E c = E(0.7978845608028654);
  return E(0.5) * x * (E(1) + std::tanh(c * (x + E(0.044715) * x * x * x)));
}
template <typename E> inline E geluGradKernel(E x) {
  const E c = E(0.7978845608028654);
  const E inner = c * (x + E(0.044715) * x * x * x);
  const E t = std::tanh(inner);
  return E(0.5) * (E(1) + t) +
         E(0.5) * x * (E(1) - t * t) * c * (E(1) + E(3 * 0.044715) * x * x);
}

namespace mapcode {

constexpr unsigned kChunk = 256;

template <typename E>
void unary(expr::UnaryOpType op, const E *__restrict in, E *out, unsigned n) {
  switch (op) {
#define TESSERA_UNARY(ENUM, nm, N, k, g)                                       \
  case expr::UnaryOpType::ENUM:                                                \
    for (unsigned i = 0; i < n; ++i) {                                         \
      const E x = in[i];                                                       \
      out[i] = static_cast<E>(k);                                              \
    }                                                                          \
    return;
#define TESSERA_PREDICATE(ENUM, nm, N, k)                                      \
  case expr::UnaryOpType::ENUM:                                                \
    for (unsigned i = 0; i < n; ++i) {                                         \
      const E x = in[i];                                                       \
      out[i] = static_cast<E>(k);                                              \
    }                                                                          \
    return;
#include "tessera/ops/Elementwise.def"
  }
}

template <typename E>
void binary(expr::BinaryOpType op, const E *a_, const E *b_, E *out,
            unsigned n) {
  switch (op) {
#define TESSERA_BINARY(ENUM, nm, N, k, ga, gb)                                 \
  case expr::BinaryOpType::ENUM:                                               \
    for (unsigned i = 0; i < n; ++i) {                                         \
      const E a = a_[i], b = b_[i];                                            \
      out[i] = static_cast<E>(k);                                              \
    }                                                                          \
    return;
#define TESSERA_COMPARE(ENUM, nm, N, k)                                        \
  case expr::BinaryOpType::ENUM:                                               \
    for (unsigned i = 0; i < n; ++i) {                                         \
      const E a = a_[i], b = b_[i];                                            \
      out[i] = static_cast<E>(k);                                              \
    }                                                                          \
    return;
#include "tessera/ops/Elementwise.def"
  }
}

/// Rounds a value of arithmetic type E as storing it as \p t would.
template <typename E> inline E castTo(Type t, E x) {
  switch (t) {
  case FLOAT:
    return static_cast<E>(static_cast<float>(x));
  case HALF:
    return static_cast<E>(static_cast<float>(Half(static_cast<float>(x))));
  case BOOL:
    return x != 0 ? E(1) : E(0);
  case UNSIGNED_INT:
    return static_cast<E>(static_cast<unsigned>(static_cast<long long>(x)));
  case UNSIGNED_SHORT:
    return static_cast<E>(
        static_cast<unsigned short>(static_cast<long long>(x)));
  case UNSIGNED_CHAR:
    return static_cast<E>(
        static_cast<unsigned char>(static_cast<long long>(x)));
  case SHORT:
    return static_cast<E>(static_cast<short>(static_cast<long long>(x)));
  case CHAR:
  case SIGNED_CHAR:
    return static_cast<E>(static_cast<signed char>(static_cast<long long>(x)));
  case INT:
    return static_cast<E>(static_cast<int>(static_cast<long long>(x)));
  }
  return x;
}

template <typename T, typename E> inline E load(const T &v) {
  if constexpr (std::is_same_v<T, Half>)
    return static_cast<E>(static_cast<float>(v));
  else
    return static_cast<E>(v);
}

template <typename T, typename E> inline T store(E v) {
  if constexpr (std::is_same_v<T, Half>)
    return Half(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, bool>)
    return v != 0;
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<long long>(v));
  else
    return static_cast<T>(v);
}

/// dst[j] = f(src[j]) for j < n: the gathers and scatters between a
/// chunk's registers and its segments. Plain pointers that do not alias let
/// the compiler vectorise the short copies (rows of a dozen elements).
template <typename S, typename D, typename F>
inline void convert(const S *__restrict src, D *__restrict dst, unsigned n,
                    F f) {
  for (unsigned j = 0; j < n; ++j)
    dst[j] = f(src[j]);
}

} // namespace mapcode

/// Runs a fused map over its tile's regions: out[i] = f(in[0][i], ...).
/// A region's input of fewer elements than its output repeats each element
/// output size / input size times in a row (one element: a broadcast). A
/// MultiVertex: on the IPU its six workers share the regions (its estimate is
/// the busiest worker's); on the host worker 0 runs them all, which is faster
/// than six small calls.
template <typename InT, typename OutT> class MapVertex : public MultiVertex {
public:
  using E = std::conditional_t<
      (std::is_integral_v<InT> && !std::is_same_v<InT, bool>) ||
          (std::is_integral_v<OutT> && !std::is_same_v<OutT, bool>),
      double, float>;

  /// The tile's regions (runs of the output), each with its inputs:
  /// region r's k-th input is in[r * numIn + k], its k-th BOOL
  /// input flags[r * numFlags + k], its output out[r].
  Vector<Input<Vector<InT>>> in;
  Vector<Input<Vector<bool>>> flags;
  Vector<Output<Vector<OutT>>> out;
  /// The program (a table its tile shares with every vertex of the same
  /// program: FieldInfo::shared).
  Vector<unsigned> code;
  Vector<unsigned> constants; ///< each a double as two words; shared too
  /// Per region: the flat output index of its first element; empty when
  /// the code has no Index instruction.
  Vector<unsigned> indexBase;

  bool compute(unsigned worker) {
    const unsigned regions = static_cast<unsigned>(out.size());
    if (worker != 0 || regions == 0)
      return true;
    numIn_ = static_cast<unsigned>(in.size()) / regions;
    numFlags_ = static_cast<unsigned>(flags.size()) / regions;
    // The regions, in order, are cut into chunks of kChunk elements; a
    // chunk of small regions is gathered into registers and scattered
    // back, so fragmented layouts still run whole vectors per instruction.
    // A region of kOwnChunk elements or more runs in chunks of its own,
    // read and written where it lies: gathering it would cost two more
    // passes over it than the few elements of its last partial vector.
    Segment segs[mapcode::kChunk];
    unsigned numSegs = 0, filled = 0;
    for (unsigned r = 0; r < regions; ++r) {
      if (r + kPrefetchAhead < regions)
        prefetchRegion(r + kPrefetchAhead);
      const unsigned n = static_cast<unsigned>(out[r].size());
      if (n >= kOwnChunk) {
        if (filled)
          chunk(segs, numSegs, filled);
        numSegs = filled = 0;
        for (unsigned off = 0; off < n; off += mapcode::kChunk) {
          const Segment own{r, off, std::min(n - off, mapcode::kChunk)};
          chunk(&own, 1, own.size);
        }
        continue;
      }
      for (unsigned off = 0; off < n;) {
        const unsigned take = std::min(n - off, mapcode::kChunk - filled);
        segs[numSegs++] = {r, off, take};
        filled += take;
        off += take;
        if (filled == mapcode::kChunk) {
          chunk(segs, numSegs, filled);
          numSegs = filled = 0;
        }
      }
    }
    if (filled)
      chunk(segs, numSegs, filled);
    return true;
  }

private:
  static constexpr unsigned kOwnChunk = 32;
  // Regions are often a few hundred bytes scattered over the tiles' memory,
  // too short for the hardware prefetchers to follow: each would wait for
  // its first cache lines. Asking for region r + kPrefetchAhead's lines
  // while region r computes overlaps those waits.
  static constexpr unsigned kPrefetchAhead = 2;

  template <typename Span> static void prefetch(const Span &s, int write) {
    const auto *p = reinterpret_cast<const char *>(s.data());
    const std::size_t bytes = s.size() * sizeof(s[0]);
    for (std::size_t at = 0; at < bytes; at += 64)
      if (write)
        __builtin_prefetch(p + at, 1);
      else
        __builtin_prefetch(p + at, 0);
  }
  void prefetchRegion(unsigned r) const {
    for (unsigned k = 0; k < numIn_; ++k)
      prefetch(in[r * numIn_ + k], 0);
    prefetch(out[r], 1);
  }
  /// Elements [offset, offset + size) of region `region`.
  struct Segment {
    unsigned region, offset, size;
  };
  unsigned numIn_ = 0, numFlags_ = 0;

  void chunk(const Segment *segs, unsigned numSegs, unsigned m) {
    alignas(32) E regs[mapcode::kMaxRegisters][mapcode::kChunk];
    const E *view[mapcode::kMaxRegisters] = {};
    const unsigned numInstr = static_cast<unsigned>(code.size() / 2);
    // The last instruction writes straight into the output when the types
    // agree and the chunk is one run, saving a pass.
    E *direct = nullptr;
    if constexpr (std::is_same_v<OutT, E>)
      if (numSegs == 1)
        direct = out[segs[0].region].data() + segs[0].offset;
    unsigned last = 0;
    for (unsigned i = 0; i < numInstr; ++i) {
      const std::uint32_t w = code[2 * i], extra = code[2 * i + 1];
      const unsigned op = w & 0xff, d = (w >> 8) & 0xff, a = (w >> 16) & 0xff,
                     b = (w >> 24) & 0xff;
      E *dst = (direct && i + 1 == numInstr) ? direct : regs[d];
      last = d;
      switch (op) {
      case mapcode::Load:
        if (extra & mapcode::kBoolInput)
          loadInput(flags, numFlags_, extra & ~mapcode::kBoolInput, segs,
                    numSegs, d, regs, view);
        else
          loadInput(in, numIn_, extra, segs, numSegs, d, regs, view);
        if (dst != regs[d]) {
          std::copy(view[d], view[d] + m, dst);
          view[d] = dst;
        }
        continue;
      case mapcode::Constant:
        std::fill(dst, dst + m, static_cast<E>(constant(extra)));
        break;
      case mapcode::Index:
        for (unsigned s = 0, k = 0; s < numSegs; ++s)
          for (unsigned j = 0; j < segs[s].size; ++j, ++k)
            dst[k] =
                static_cast<E>(indexBase[segs[s].region] + segs[s].offset + j);
        break;
      case mapcode::Unary:
        mapcode::unary<E>(static_cast<expr::UnaryOpType>(extra), view[a], dst,
                          m);
        break;
      case mapcode::Binary:
        mapcode::binary<E>(static_cast<expr::BinaryOpType>(extra), view[a],
                           view[b], dst, m);
        break;
      // The operands in locals: read through view[] in the loop, they would
      // be reloaded after every store and the loop would not vectorise.
      case mapcode::Select: {
        const E *c = view[extra], *x = view[a], *y = view[b];
        for (unsigned k = 0; k < m; ++k)
          dst[k] = c[k] != 0 ? x[k] : y[k];
        break;
      }
      case mapcode::Clamp: {
        const E *x = view[a], *lo = view[b], *hi = view[extra];
        for (unsigned k = 0; k < m; ++k)
          dst[k] = std::min(std::max(x[k], lo[k]), hi[k]);
        break;
      }
      case mapcode::Cast: {
        const E *x = view[a];
        for (unsigned k = 0; k < m; ++k)
          dst[k] = mapcode::castTo<E>(static_cast<Type>(extra), x[k]);
        break;
      }
      }
      view[d] = dst;
    }
    if (direct && view[last] == direct)
      return;
    for (unsigned s = 0, k = 0; s < numSegs; ++s) {
      mapcode::convert(view[last] + k,
                       out[segs[s].region].data() + segs[s].offset,
                       segs[s].size, mapcode::store<OutT, E>);
      k += segs[s].size;
    }
  }

  double constant(unsigned i) const {
    double v;
    std::memcpy(&v, &constants[2 * i], sizeof v);
    return v;
  }

  // Input `slot` of the chunk into register d: read in place when the
  // chunk is one run of an input of its own type, else converted or
  // gathered; an input of one element is broadcast.
  template <typename List>
  void loadInput(const List &list, unsigned perRegion, unsigned slot,
                 const Segment *segs, unsigned numSegs, unsigned d,
                 E (&regs)[mapcode::kMaxRegisters][mapcode::kChunk],
                 const E **view) {
    const auto &f0 = list[segs[0].region * perRegion + slot];
    using T = std::remove_cv_t<std::remove_reference_t<decltype(f0[0])>>;
    if constexpr (std::is_same_v<T, E>)
      if (numSegs == 1 && f0.size() == out[segs[0].region].size()) {
        view[d] = f0.data() + segs[0].offset;
        return;
      }
    for (unsigned s = 0, k = 0; s < numSegs; ++s) {
      const auto &f = list[segs[s].region * perRegion + slot];
      const unsigned n = segs[s].size;
      const unsigned total = static_cast<unsigned>(out[segs[s].region].size());
      if (f.size() == total) {
        mapcode::convert(f.data() + segs[s].offset, regs[d] + k, n,
                         mapcode::load<T, E>);
        k += n;
        continue;
      }
      // Fewer elements than the region: each repeats total / size times.
      const unsigned repeat = total / static_cast<unsigned>(f.size());
      for (unsigned j = 0; j < n;) {
        const unsigned at = segs[s].offset + j;
        const unsigned len = std::min(n - j, repeat - at % repeat);
        std::fill(regs[d] + k + j, regs[d] + k + j + len,
                  mapcode::load<T, E>(f[at / repeat]));
        j += len;
      }
      k += n;
    }
    view[d] = regs[d];
  }
};

} // namespace tessera::ops
