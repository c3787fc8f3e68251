// The payload of an executable file: one description of Executable's fields
// (field() below) that both the writer and the reader walk, so that they
// cannot disagree. Integers are LEB128 varints and the large tables are
// delta coded, so the payload grows with the program's pieces rather than
// with fixed-width records; the reader decompresses it window by window and
// decodes straight into the executable's vectors, never holding it whole.
#include "ExecutableCodec.hpp"

#include "tessera/compiler/ExecutableFormat.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/Memory.hpp"

#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera::detail {
namespace {

// Each struct's fields in declaration order; the sizes trip when a field is
// added so that the lists below (and kExecutableFormatVersion) get updated.
#if defined(__x86_64__) && defined(__GLIBCXX__) && !defined(_GLIBCXX_DEBUG)
static_assert(sizeof(Step) == 40 && sizeof(CopyOp) == 40 &&
                  sizeof(FieldValue) == 16 && sizeof(VertexInstance) == 24 &&
                  sizeof(VertexClassRef) == 40 &&
                  sizeof(CodeletSourceRef) == 96 && sizeof(StreamInfo) == 56 &&
                  sizeof(HostAccessInfo) == 64 &&
                  sizeof(RemoteBufferInfo) == 56 && sizeof(PrintInfo) == 72 &&
                  sizeof(InitRegion) == 24 && sizeof(TileMemory) == 48 &&
                  sizeof(VariableInfo) == 40 && sizeof(StepEstimate) == 40 &&
                  sizeof(CompilePhase) == 56,
              "a serialised struct changed: update field() in "
              "ExecutableCodec.cpp and bump kExecutableFormatVersion");
static_assert(sizeof(Executable) == 784,
              "Executable changed: update field() in ExecutableCodec.cpp and "
              "bump kExecutableFormatVersion");
#endif

template <class T> struct IsVector : std::false_type {};
template <class T> struct IsVector<std::vector<T>> : std::true_type {};
template <class T> struct IsPair : std::false_type {};
template <class A, class B> struct IsPair<std::pair<A, B>> : std::true_type {};
template <class> [[maybe_unused]] inline constexpr bool kNoEncoding = false;

// Vectors whose elements are coded against the element before them: the
// tables that grow with the program, where neighbours are close.
template <class T>
inline constexpr bool kDeltaCoded =
    std::is_same_v<T, FieldValue> || std::is_same_v<T, CopyOp> ||
    std::is_same_v<T, VertexInstance> || std::is_same_v<T, VariableInfo> ||
    std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::uint64_t>;

template <class IO, class T> void field(IO &io, T &x);

template <class IO, class... F> void each(IO &io, F &...f) {
  (field(io, f), ...);
}

// An element of a delta-coded vector given the one before it (a default
// element before the first). A copy's source and destination are predicted
// to follow the previous copy's, and an address to repeat the previous one.
template <class IO, class T, class P> void deltaField(IO &io, T &x, P &p) {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, std::uint32_t> ||
                std::is_same_v<U, std::uint64_t>) {
    io.delta(x, p);
  } else if constexpr (std::is_same_v<U, FieldValue>) {
    io.delta(x.addr, p.addr);
    field(io, x.size);
  } else if constexpr (std::is_same_v<U, VertexInstance>) {
    field(io, x.vertexClass);
    io.delta(x.tile, p.tile);
    io.delta(x.firstField, p.firstField);
    field(io, x.cycles);
  } else if constexpr (std::is_same_v<U, CopyOp>) {
    const std::uint64_t moved = std::uint64_t{p.count} * p.elemBytes;
    io.delta(x.src, p.src + moved);
    io.delta(x.dst, p.dst + moved);
    each(io, x.srcStride, x.dstStride, x.count, x.elemBytes);
  } else if constexpr (std::is_same_v<U, VariableInfo>) {
    // The compiler lays the shapes end to end in variable order.
    io.delta(x.shapeBegin, p.shapeBegin + p.rank);
    each(io, x.name, x.rank, x.bytes, x.tiles, x.liveBegin, x.liveEnd, x.type,
         x.alwaysLive);
  } else {
    static_assert(kNoEncoding<U>, "no delta encoding for this type");
  }
}

template <class IO, class T> void field(IO &io, T &x) {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, std::string> ||
                std::is_same_v<U, std::vector<std::byte>>) {
    io.bytes(x);
  } else if constexpr (IsVector<U>::value) {
    if constexpr (kDeltaCoded<typename U::value_type>)
      io.deltaSequence(x);
    else
      io.sequence(x);
  } else if constexpr (IsPair<U>::value) {
    each(io, x.first, x.second);
  } else if constexpr (std::is_same_v<U, Step>) {
    each(io, x.kind, x.type, x.hasAddr, x.a, x.b, x.c, x.addr, x.count, x.name);
  } else if constexpr (std::is_same_v<U, VertexClassRef>) {
    each(io, x.name, x.codelet);
  } else if constexpr (std::is_same_v<U, CodeletSourceRef>) {
    each(io, x.name, x.source, x.flags);
  } else if constexpr (std::is_same_v<U, StreamInfo>) {
    each(io, x.handle, x.type, x.numElements, x.hostToDevice, x.broadcast);
  } else if constexpr (std::is_same_v<U, HostAccessInfo>) {
    each(io, x.handle, x.type, x.numElements, x.write, x.firstOp, x.numOps);
  } else if constexpr (std::is_same_v<U, RemoteBufferInfo>) {
    each(io, x.handle, x.type, x.numElements, x.repeats);
  } else if constexpr (std::is_same_v<U, PrintInfo>) {
    each(io, x.title, x.type, x.shape, x.firstOp, x.numOps);
  } else if constexpr (std::is_same_v<U, InitRegion>) {
    each(io, x.addr, x.dataOffset, x.size);
  } else if constexpr (std::is_same_v<U, TileMemory>) {
    each(io, x.alwaysLive, x.notAlwaysLive, x.constants, x.temporaries,
         x.vertexState, x.code);
  } else if constexpr (std::is_same_v<U, CompilePhase>) {
    each(io, x.name, x.seconds, x.rssBytes, x.peakRssBytes);
  } else if constexpr (std::is_same_v<U, StepEstimate>) {
    each(io, x.ipuCycles, x.firstTileCycle, x.numTileCycles, x.bytesExchanged);
  } else if constexpr (std::is_enum_v<U> || std::is_arithmetic_v<U>) {
    io.scalar(x);
  } else {
    static_assert(kNoEncoding<U>, "no payload encoding for this type");
  }
}

// Executable's fields in two parts of about equal decoding work, each
// compressed to a zstd frame of its own so that a reader can decode them on
// two threads: the code, host interface, estimates and initial memory
// (ResNet-50's 6 M copy ops, 1.3 M variables and 90 MB of initial data),
// then the vertices (its 1.7 M vertices, 20 M fields and spans, and 90 MB
// of state).
template <class IO, class E> void partFields(IO &io, E &x, int part) {
  if (part == 0) {
    each(io, x.arch, x.numIPUs, x.tilesPerIPU, x.replicationFactor,
         x.bytesPerTile, x.clockHz);
    each(io, x.steps, x.programEntry, x.numCounters, x.switchTable,
         x.replicaPairs, x.copyOps, x.strings, x.prints, x.stepScopes);
    each(io, x.streams, x.hostAccesses, x.remoteBuffers);
    each(io, x.estimates, x.tileCycleTiles, x.tileCycles, x.tileMemory,
         x.variables, x.variableNames, x.variableShapes, x.computeSetNames,
         x.compilePhases);
    each(io, x.tileBase, x.initRegions, x.initData);
  } else {
    each(io, x.vertexClasses, x.codelets, x.vertices, x.fields, x.spans,
         x.stateBytes);
  }
}

// Integers of one byte (bools, enums) are stored as is; wider ones as
// LEB128 varints, signed ones zigzag-mapped first.
template <class T>
inline constexpr bool kOneByte = sizeof(T) == 1 || std::is_enum_v<T>;

template <class T> std::uint64_t zigzag(T v) {
  using S = std::make_signed_t<T>;
  const auto s = static_cast<std::int64_t>(static_cast<S>(v));
  return (static_cast<std::uint64_t>(s) << 1) ^
         static_cast<std::uint64_t>(s >> 63);
}

class Writer {
public:
  template <class T>
  requires std::is_integral_v<T> || std::is_enum_v<T>
  void scalar(T v) {
    if constexpr (std::is_same_v<T, bool>)
      out_.push_back(std::byte{v ? std::uint8_t{1} : std::uint8_t{0}});
    else if constexpr (kOneByte<T>)
      out_.push_back(static_cast<std::byte>(v));
    else if constexpr (std::is_signed_v<T>)
      varint(zigzag(v));
    else
      varint(v);
  }
  void scalar(double v) {
    const auto bits = std::bit_cast<std::uint64_t>(v);
    for (int i = 0; i < 8; ++i)
      out_.push_back(static_cast<std::byte>(bits >> (8 * i)));
  }
  template <class T> void delta(T x, T predicted) {
    varint(zigzag(static_cast<T>(x - predicted)));
  }
  template <class C> void bytes(const C &v) {
    varint(v.size());
    const auto *p = reinterpret_cast<const std::byte *>(v.data());
    out_.insert(out_.end(), p, p + v.size());
  }
  template <class T> void sequence(const std::vector<T> &v) {
    varint(v.size());
    for (const T &e : v)
      field(*this, e);
  }
  template <class T> void deltaSequence(const std::vector<T> &v) {
    varint(v.size());
    const T first{};
    const T *prev = &first;
    for (const T &e : v) {
      deltaField(*this, e, *prev);
      prev = &e;
    }
  }
  std::size_t size() const { return out_.size(); }
  std::vector<std::byte> take() { return std::move(out_); }

private:
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<std::byte>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<std::byte>(v));
  }
  std::vector<std::byte> out_;
};

// Bytes the smallest element of T encodes to (empty strings and vectors,
// zeros): a count can be checked against the bytes left before anything is
// allocated. Delta coding makes no element shorter than this.
template <class T> std::size_t minEncodedBytes() {
  static const std::size_t bytes = [] {
    Writer w;
    const T empty{};
    if constexpr (kDeltaCoded<T>)
      deltaField(w, empty, empty);
    else
      field(w, empty);
    return w.size();
  }();
  return bytes;
}

struct ZstdDCtxFree {
  void operator()(ZSTD_DCtx *c) const { ZSTD_freeDCtx(c); }
};

// At most this many payload bytes per compressed byte are allocated before
// they are produced. Executables compress about 3 to 1; zeros compress far
// better, so a claim above this bound is not refused, only grown into as the
// output arrives.
constexpr std::uint64_t kTrustedRatio = 64;

// The payload's bytes, from memory or decompressed a window at a time.
class Source {
public:
  // \p origin: where these bytes start in the whole payload, for messages.
  Source(std::span<const std::byte> payload, std::uint64_t origin,
         const std::string &what)
      : buf_(payload.data()), end_(payload.size()), origin_(origin),
        claimed_(payload.size()), trusted_(payload.size()), what_(what) {}
  Source(std::span<const std::byte> compressed, std::uint64_t claimed,
         std::uint64_t origin, const std::string &what)
      : ctx_(ZSTD_createDCtx()),
        window_(kWindowBytes), in_{compressed.data(), compressed.size(), 0},
        origin_(origin), claimed_(claimed),
        trusted_(std::min<std::uint64_t>(claimed,
                                         compressed.size() * kTrustedRatio)),
        what_(what) {
    TESSERA_INTERNAL_ASSERT(ctx_ != nullptr, "ZSTD_createDCtx failed");
    buf_ = window_.data();
  }

  std::uint64_t offset() const { return base_ + pos_; }
  // The offset in the whole payload, for messages.
  std::uint64_t payloadOffset() const { return origin_ + offset(); }
  std::uint64_t left() const { return claimed_ - offset(); }
  // Whether \p bytes more of the payload may be allocated for before they
  // have been produced.
  bool trusted(std::uint64_t bytes) const {
    return offset() <= trusted_ && bytes <= trusted_ - offset();
  }
  const std::byte *data() const { return buf_ + pos_; }
  // Bytes readable at data() without decompressing more.
  std::size_t buffered() const { return end_ - pos_; }
  void skip(std::size_t n) { pos_ += n; }
  // Makes \p n bytes readable at data() where the payload has them; returns
  // how many are (fewer only at its end).
  std::size_t fill(std::size_t n) {
    if (end_ - pos_ >= n || !ctx_)
      return end_ - pos_;
    std::memmove(window_.data(), window_.data() + pos_, end_ - pos_);
    base_ += pos_;
    end_ -= pos_;
    pos_ = 0;
    while (end_ < n && !done_) {
      ZSTD_outBuffer out{window_.data(), window_.size(), end_};
      inflate(out);
      end_ = out.pos;
    }
    return end_ - pos_;
  }
  // Copies \p n bytes to \p dst; a long run is decompressed straight there.
  void read(std::byte *dst, std::size_t n) {
    const std::size_t have = std::min(end_ - pos_, n);
    if (have != 0) // an empty payload's data() may be null
      std::memcpy(dst, buf_ + pos_, have);
    pos_ += have;
    if (have == n)
      return;
    if (!ctx_)
      failEnd();
    base_ += end_;
    pos_ = end_ = 0;
    for (std::size_t done = have; done < n;) {
      ZSTD_outBuffer out{dst + done, n - done, 0};
      inflate(out);
      base_ += out.pos;
      done += out.pos;
    }
  }
  // The payload ended where its description did: the frame is complete and
  // nothing follows it.
  void finish() {
    if (left() != 0)
      fail(std::to_string(left()) +
           " unexpected bytes follow the last field of the payload");
    if (!ctx_)
      return;
    fill(1);
    if (in_.pos != in_.size)
      fail(std::to_string(in_.size - in_.pos) +
           " bytes follow the compressed payload's last frame");
  }
  [[noreturn]] void failEnd() const {
    fail("the payload ends inside a field at byte " +
         std::to_string(payloadOffset()) + " of " +
         std::to_string(origin_ + claimed_));
  }
  [[noreturn]] void fail(const std::string &problem) const {
    throw SerializationError(corruptExecutableMessage(what_, problem));
  }

private:
  static constexpr std::size_t kWindowBytes = std::size_t{1} << 20;

  // Decompresses into \p out; fails at the frame's end (the payload ran
  // out inside a field) or on corrupt data.
  void inflate(ZSTD_outBuffer &out) {
    if (done_)
      failEnd();
    const std::size_t inBefore = in_.pos, outBefore = out.pos;
    const std::size_t r = ZSTD_decompressStream(ctx_.get(), &out, &in_);
    if (ZSTD_isError(r))
      fail(std::string("the payload does not decompress (") +
           ZSTD_getErrorName(r) + ")");
    const std::uint64_t produced = base_ + out.pos;
    if (produced > claimed_)
      fail("a frame of the payload decompresses to more than the " +
           std::to_string(claimed_) + " bytes it says it holds");
    done_ = r == 0;
    if (!done_ && in_.pos == inBefore && out.pos == outBefore)
      fail("the compressed payload ends mid-frame");
  }

  std::unique_ptr<ZSTD_DCtx, ZstdDCtxFree> ctx_;
  std::vector<std::byte> window_;
  ZSTD_inBuffer in_{};
  const std::byte *buf_ = nullptr;
  std::size_t pos_ = 0, end_ = 0;
  std::uint64_t base_ = 0; // bytes of this part before buf_
  std::uint64_t origin_ = 0;
  std::uint64_t claimed_ = 0, trusted_ = 0;
  bool done_ = false;
  const std::string &what_;
};

// Large tables are faulted in at once as they are reserved (cheaper than a
// fault per page; ResNet-50 decodes 0.9 GB of them).
void prefault(void *p, std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20))
    populateMemory(p, bytes);
}

class Reader {
public:
  explicit Reader(Source &src) : src_(src) {}

  template <class T>
  requires std::is_integral_v<T> || std::is_enum_v<T>
  void scalar(T &v) {
    if constexpr (kOneByte<T>) {
      const std::uint64_t at = src_.payloadOffset();
      if (src_.fill(1) < 1)
        src_.failEnd();
      const auto raw = std::to_integer<std::uint8_t>(*src_.data());
      src_.skip(1);
      v = checkedByte<T>(raw, at);
    } else if constexpr (std::is_signed_v<T>) {
      using U = std::make_unsigned_t<T>;
      const std::uint64_t z = varint<U>();
      v = static_cast<T>(static_cast<U>((z >> 1) ^ (0 - (z & 1))));
    } else {
      v = static_cast<T>(varint<T>());
    }
  }
  void scalar(double &v) {
    std::byte raw[8];
    src_.read(raw, 8);
    std::uint64_t bits = 0;
    for (int i = 0; i < 8; ++i)
      bits |= std::to_integer<std::uint64_t>(raw[i]) << (8 * i);
    v = std::bit_cast<double>(bits);
  }
  template <class T> void delta(T &x, T predicted) {
    const std::uint64_t z = varint<T>();
    x = static_cast<T>(predicted + static_cast<T>((z >> 1) ^ (0 - (z & 1))));
  }
  // Strings and byte vectors: allocated at once where the payload is
  // trusted to hold them, else grown as their bytes arrive.
  template <class C> void bytes(C &v) {
    const std::uint64_t n = count(1);
    v.clear();
    const std::uint64_t step = src_.trusted(n) ? n : std::uint64_t{1} << 20;
    v.reserve(static_cast<std::size_t>(std::min(step, n)));
    prefault(v.data(), std::min(step, n));
    for (std::uint64_t done = 0; done < n;) {
      const auto k = static_cast<std::size_t>(std::min(step, n - done));
      v.resize(static_cast<std::size_t>(done) + k);
      src_.read(reinterpret_cast<std::byte *>(v.data()) + done, k);
      done += k;
    }
  }
  template <class T> void sequence(std::vector<T> &v) {
    elements(v, [&](T &e, std::size_t) { field(*this, e); });
  }
  template <class T> void deltaSequence(std::vector<T> &v) {
    const T first{};
    elements(v, [&](T &e, std::size_t i) {
      deltaField(*this, e, i == 0 ? first : v[i - 1]);
    });
  }

private:
  template <class T> T checkedByte(std::uint8_t raw, std::uint64_t at) const {
    const auto where = [&] { return "byte " + std::to_string(at); };
    if constexpr (std::is_same_v<T, bool>) {
      if (raw > 1)
        src_.fail(where() + " should be a bool but is " + std::to_string(raw));
      return raw == 1;
    } else if constexpr (std::is_same_v<T, Type>) {
      if (raw >= numTypes)
        src_.fail(where() + " holds element type code " + std::to_string(raw) +
                  " but there are only " + std::to_string(numTypes) + " types");
      return static_cast<Type>(raw);
    } else if constexpr (std::is_same_v<T, StepKind>) {
      if (raw > static_cast<std::uint64_t>(StepKind::End))
        src_.fail(where() + " holds step kind code " + std::to_string(raw) +
                  ", which no Tessera step has");
      return static_cast<StepKind>(raw);
    } else {
      return static_cast<T>(raw);
    }
  }

  // A varint that must fit in T's width. Most are one byte (sizes, small
  // deltas): that case, with ten bytes in the window, takes no checks.
  template <class T> [[gnu::always_inline]] std::uint64_t varint() {
    const std::byte *p = src_.data();
    if (src_.buffered() >= 10 && std::to_integer<std::uint8_t>(p[0]) < 0x80) {
      src_.skip(1);
      return std::to_integer<std::uint8_t>(p[0]);
    }
    return longVarint<T>();
  }
  template <class T> [[gnu::noinline]] std::uint64_t longVarint() {
    const std::size_t avail = src_.fill(10);
    const std::byte *p = src_.data();
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 10; ++i) {
      if (i == avail)
        src_.failEnd();
      const auto b = std::to_integer<std::uint64_t>(p[i]);
      v |= (b & 0x7f) << (7 * i);
      if (b < 0x80) {
        if ((i == 9 && b > 1) || v > std::numeric_limits<T>::max())
          src_.fail("the integer at payload byte " +
                    std::to_string(src_.payloadOffset()) +
                    " does not fit in its " + std::to_string(8 * sizeof(T)) +
                    "-bit field");
        src_.skip(i + 1);
        return v;
      }
    }
    src_.fail("the integer at payload byte " +
              std::to_string(src_.payloadOffset()) + " runs past 10 bytes");
  }

  // A count of elements, each at least minBytes long, that must fit in the
  // bytes left: a corrupt count fails here instead of allocating.
  std::uint64_t count(std::size_t minBytes) {
    const std::uint64_t at = src_.payloadOffset();
    const std::uint64_t n = varint<std::uint64_t>();
    const std::uint64_t left = src_.left();
    if (n > left / minBytes)
      src_.fail("the count at payload byte " + std::to_string(at) + " says " +
                std::to_string(n) + " elements of at least " +
                std::to_string(minBytes) + " bytes, but only " +
                std::to_string(left) + " bytes are left");
    return n;
  }

  // Decodes a counted vector; the elements are reserved at once where the
  // payload is trusted to hold them, else grown as they are decoded.
  template <class T, class Decode>
  void elements(std::vector<T> &v, Decode &&decode) {
    const std::size_t minBytes = minEncodedBytes<T>();
    const std::uint64_t n = count(minBytes);
    v.clear();
    if (src_.trusted(n * minBytes)) {
      v.reserve(static_cast<std::size_t>(n));
      prefault(v.data(), n * sizeof(T));
    }
    for (std::size_t i = 0; i < n; ++i) {
      v.emplace_back();
      decode(v.back(), i);
    }
  }

  Source &src_;
};

void decodePart(Source &src, Executable &exe, int part) {
  Reader r(src);
  partFields(r, exe, part);
  src.finish();
}

} // namespace

std::string corruptExecutableMessage(const std::string &what,
                                     const std::string &problem) {
  return what + " is corrupt: " + problem + "; recompile and save it again";
}

ExecutablePayload encodeExecutablePayload(const Executable &exe) {
  ExecutablePayload payload;
  for (int part = 0; part < kExecutablePayloadParts; ++part) {
    Writer w;
    partFields(w, exe, part);
    payload[part] = w.take();
  }
  return payload;
}

void decodePayloadPart(int part, std::span<const std::byte> bytes,
                       std::uint64_t origin, Executable &exe,
                       const std::string &what) {
  Source src(bytes, origin, what);
  decodePart(src, exe, part);
}

void decodeCompressedPayloadPart(int part, std::span<const std::byte> frame,
                                 std::uint64_t claimed, std::uint64_t origin,
                                 Executable &exe, const std::string &what) {
  Source src(frame, claimed, origin, what);
  decodePart(src, exe, part);
}

} // namespace tessera::detail
