// Executable files: a checksummed header, a zstd-compressed payload in
// parts decoded on two threads (ExecutableCodec.cpp), and a validation
// pass that lets the engine trust what it loads.
// The layout is documented in tessera/compiler/ExecutableFormat.hpp.

#include "tessera/compiler/ExecutableFormat.hpp"

#include "ExecutableCodec.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"
#include "tessera/support/Logging.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <istream>
#include <iterator>
#include <memory>
#include <ostream>
#include <span>
#include <string_view>
#include <thread>
#include <utility>

namespace tessera {
namespace {

constexpr std::string_view kMagic = "TESSERAX";
constexpr int kCompressionLevel = 3;
constexpr std::string_view kRedo = "; recompile and save it again";

void putLE(std::byte *p, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    p[i] = static_cast<std::byte>(v >> (8 * i));
}

std::uint64_t getLE(const std::byte *p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= std::to_integer<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

std::string corruptMessage(const std::string &what,
                           const std::string &problem) {
  return detail::corruptExecutableMessage(what, problem);
}

} // namespace

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

namespace {

std::string_view stepKindName(StepKind k) {
  static constexpr std::string_view names[] = {
      "Compute",   "Exchange", "StreamIn",   "StreamOut",     "RemoteIn",
      "RemoteOut", "Jump",     "JumpIfZero", "JumpIfNonZero", "RepeatStart",
      "RepeatEnd", "Switch",   "Call",       "Return",        "Print",
      "Abort",     "AbortIf",  "Sync",       "CrossReplica",  "End"};
  static_assert(std::size(names) == std::size_t(StepKind::End) + 1);
  return names[static_cast<std::size_t>(k)];
}

// [offset, offset + size) lies inside [0, limit), without overflow.
bool fits(std::uint64_t offset, std::uint64_t size, std::uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

// Whether every byte a strided copy touches on one side lies in [0, limit).
bool stridedFits(std::uint64_t base, std::int64_t stride, std::uint32_t count,
                 std::uint32_t elemBytes, std::uint64_t limit) {
  if (count == 0 || elemBytes == 0)
    return true;
  const std::uint64_t step = stride < 0 ? 0 - static_cast<std::uint64_t>(stride)
                                        : static_cast<std::uint64_t>(stride);
  const std::uint64_t steps = count - 1;
  if (steps != 0 && step > limit / steps)
    return false;
  const std::uint64_t span = step * steps;
  if (stride >= 0)
    return fits(base, span, limit) && fits(base + span, elemBytes, limit);
  return base >= span && fits(base, elemBytes, limit);
}

class Validator {
  using OpRange = std::pair<std::uint64_t, std::uint64_t>; // [first, end)

public:
  Validator(const Executable &exe, const std::string &what)
      : e_(exe), what_(what) {}

  void run() {
    checkTarget();
    checkHostFootprint();
    checkMemory();
    for (std::size_t i = 0; i < e_.steps.size(); ++i)
      checkStep(i, e_.steps[i]);
    checkCodeTables();
    checkHostInterface();
    checkCopyOps();
    checkEstimates();
    checkVariables();
  }

private:
  [[noreturn]] void fail(const std::string &problem) const {
    throw SerializationError(corruptMessage(what_, problem));
  }
  static std::string str(std::uint64_t v) { return std::to_string(v); }
  std::string stepName(std::size_t i) const {
    return "step " + str(i) + " (" +
           std::string(stepKindName(e_.steps[i].kind)) + ")";
  }

  // `who` makes the user's description only when a check fails: building
  // strings for every step of a large executable would cost more than the
  // checks.
  template <class Who>
  void checkIndex(std::uint64_t index, std::size_t size, Who &&who,
                  std::string_view table) const {
    if (index >= size)
      fail(std::string(who()) + " refers to " + std::string(table) + " " +
           str(index) + " but there are only " + str(size));
  }
  template <class Who>
  void checkRange(std::uint64_t first, std::uint64_t count, std::size_t size,
                  Who &&who, std::string_view table) const {
    if (!fits(first, count, size))
      fail(std::string(who()) + " uses " + std::string(table) + " " +
           str(first) + " to " + str(first + count) +
           " (exclusive) but there are only " + str(size));
  }
  void checkScalarAddr(std::size_t i, const Step &s) const {
    if (!fits(s.addr, typeSize(s.type), memBytes_))
      fail(stepName(i) + " reads a " + std::string(typeName(s.type)) +
           " at address " + str(s.addr) + " but a replica has " +
           str(memBytes_) + " bytes of memory");
  }

  void checkTarget() {
    if (e_.numIPUs == 0 || e_.replicationFactor == 0)
      fail("it targets " + str(e_.numIPUs) + " IPUs with replication factor " +
           str(e_.replicationFactor) + "; both must be at least 1");
    if (!std::isfinite(e_.clockHz) || e_.clockHz < 0)
      fail("its clock frequency " + std::to_string(e_.clockHz) +
           " Hz is not a finite non-negative number");
    const std::uint64_t tiles =
        std::uint64_t{e_.numIPUs} * std::uint64_t{e_.tilesPerIPU};
    const bool noMemory = tiles == 0 && e_.tileBase.empty();
    if (!noMemory && e_.tileBase.size() - 1 != tiles)
      fail("it has " + str(e_.tileBase.size()) + " tile base offsets but its " +
           str(e_.numIPUs) + " IPUs of " + str(e_.tilesPerIPU) +
           " tiles need " + str(tiles + 1));
    if (!e_.tileBase.empty() && e_.tileBase[0] != 0)
      fail("its first tile starts at byte " + str(e_.tileBase[0]) +
           " instead of 0");
    for (std::size_t t = 0; t + 1 < e_.tileBase.size(); ++t)
      if (e_.tileBase[t + 1] < e_.tileBase[t])
        fail("tile " + str(t + 1) + " starts at byte " +
             str(e_.tileBase[t + 1]) + ", before tile " + str(t) + " at byte " +
             str(e_.tileBase[t]));
    numTiles_ = tiles;
    memBytes_ = e_.replicaBytes();
  }

  // What the engine allocates from counts the file states: each must be
  // checked before anything is allocated (Runtime's constructor and load).
  void checkHostFootprint() const {
    const std::uint64_t R = e_.replicationFactor;
    if (R > kMaxExecutableReplicas)
      fail("it asks for " + str(R) + " replicas; the most Tessera runs is " +
           str(kMaxExecutableReplicas));
    if (e_.numCounters > e_.steps.size())
      fail("it has " + str(e_.numCounters) + " loop counters but only " +
           str(e_.steps.size()) +
           " steps, and each counter belongs to a "
           "RepeatStart step");
    if (memBytes_ % kReplicaAlignment != 0)
      fail("a replica's memory of " + str(memBytes_) +
           " bytes is not a multiple of " + str(kReplicaAlignment));
    // Per replica, in units no larger than kMaxExecutableDeviceBytes, so
    // that the sums below cannot overflow.
    std::uint64_t bytes = memBytes_;
    for (std::size_t b = 0; b < e_.remoteBuffers.size(); ++b) {
      const RemoteBufferInfo &rb = e_.remoteBuffers[b];
      std::uint64_t n = 0;
      if (__builtin_mul_overflow(rb.numElements, rb.repeats, &n) ||
          __builtin_mul_overflow(n, std::uint64_t{typeSize(rb.type)}, &n) ||
          n > kMaxExecutableDeviceBytes -
                  std::min(bytes, kMaxExecutableDeviceBytes))
        bytes = kMaxExecutableDeviceBytes + 1;
      else
        bytes += n;
    }
    if (bytes > kMaxExecutableDeviceBytes / R)
      fail("its " + str(R) + " replicas need " +
           (bytes > kMaxExecutableDeviceBytes
                ? std::string("more than ") + str(kMaxExecutableDeviceBytes)
                : str(bytes * R)) +
           " bytes of device and remote buffer memory; the most Tessera "
           "simulates is " +
           str(kMaxExecutableDeviceBytes));
    const std::uint64_t objects =
        e_.vertices.size() + e_.streams.size() + e_.remoteBuffers.size();
    if (objects > kMaxReplicatedObjects / R)
      fail("its " + str(R) + " replicas need " + str(objects * R) +
           " vertices, stream connections and remote buffers; the most "
           "Tessera makes is " +
           str(kMaxReplicatedObjects));
  }

  void checkMemory() const {
    for (std::size_t i = 0; i < e_.initRegions.size(); ++i) {
      const InitRegion &r = e_.initRegions[i];
      if (!fits(r.addr, r.size, memBytes_))
        fail("initial region " + str(i) + " covers bytes " + str(r.addr) +
             " + " + str(r.size) + " but a replica has " + str(memBytes_) +
             " bytes");
      if (!fits(r.dataOffset, r.size, e_.initData.size()))
        fail("initial region " + str(i) + " takes bytes " + str(r.dataOffset) +
             " + " + str(r.size) + " of the initial data, which has " +
             str(e_.initData.size()));
    }
  }

  // Marks copy ops [first, first + count) as having device addresses on the
  // given sides; checkCopyOps checks each op once, however often it is used.
  // The ranges are kept as they come (a few per step), not as a count per
  // op: ResNet-50's 7.8 M ops would take 124 MB of counts to load.
  template <class Who>
  void useOps(std::uint64_t first, std::uint64_t count, bool srcDevice,
              bool dstDevice, Who &&who) {
    checkRange(first, count, e_.copyOps.size(), who, "copy ops");
    if (count == 0)
      return;
    if (srcDevice)
      srcUses_.emplace_back(first, first + count);
    if (dstDevice)
      dstUses_.emplace_back(first, first + count);
  }

  void checkStep(std::size_t i, const Step &s) {
    const std::size_t numSteps = e_.steps.size();
    const auto who = [&] { return stepName(i); };
    if (s.name >= e_.strings.size() && !(s.name == 0 && e_.strings.empty()))
      checkIndex(
          s.name, e_.strings.size(), [&] { return who() + "'s name"; },
          "string");
    if (s.hasAddr)
      checkScalarAddr(i, s);
    switch (s.kind) {
    case StepKind::Compute:
      checkRange(s.a, s.b, e_.vertices.size(), who, "vertices");
      if (s.count)
        checkRange(s.addr, s.count, e_.vertices.size(), who,
                   "host kernel vertices");
      if (!e_.computeSetNames.empty())
        checkIndex(s.c, e_.computeSetNames.size(), who, "compute set");
      break;
    case StepKind::Exchange:
      useOps(s.a, s.b, true, true, who);
      break;
    case StepKind::StreamIn:
    case StepKind::StreamOut:
      checkIndex(s.a, e_.streams.size(), who, "stream");
      useOps(s.b, s.c, s.kind == StepKind::StreamOut,
             s.kind == StepKind::StreamIn, who);
      break;
    case StepKind::RemoteIn:
    case StepKind::RemoteOut:
      checkIndex(s.a, e_.remoteBuffers.size(), who, "remote buffer");
      useOps(s.b, s.c, s.kind == StepKind::RemoteOut,
             s.kind == StepKind::RemoteIn, who);
      break;
    case StepKind::JumpIfZero:
    case StepKind::JumpIfNonZero:
      checkScalarAddr(i, s);
      [[fallthrough]];
    case StepKind::Jump:
    case StepKind::Call:
      checkIndex(s.a, numSteps, who, "target step");
      break;
    case StepKind::RepeatStart:
    case StepKind::RepeatEnd:
      checkIndex(s.a, e_.numCounters, who, "counter");
      checkIndex(s.b, numSteps, who, "target step");
      break;
    case StepKind::Switch:
      checkScalarAddr(i, s);
      checkRange(s.a, s.b, e_.switchTable.size(), who, "switch entries");
      checkIndex(s.c, numSteps, who, "target step");
      break;
    case StepKind::Print:
      checkIndex(s.a, e_.prints.size(), who, "print");
      break;
    case StepKind::AbortIf:
      checkScalarAddr(i, s);
      [[fallthrough]];
    case StepKind::Abort:
      checkIndex(s.a, e_.strings.size(), who, "string");
      break;
    case StepKind::CrossReplica:
      useOps(s.a, s.b, true, true, who);
      checkRange(s.c, s.count, e_.replicaPairs.size(), who, "replica pairs");
      break;
    case StepKind::Return:
    case StepKind::Sync:
    case StepKind::End:
      break;
    }
  }

  void checkCodeTables() const {
    const std::size_t numSteps = e_.steps.size();
    for (std::size_t p = 0; p < e_.programEntry.size(); ++p)
      checkIndex(
          e_.programEntry[p], numSteps, [&] { return "program " + str(p); },
          "first step");
    for (std::size_t k = 0; k < e_.switchTable.size(); ++k)
      checkIndex(
          e_.switchTable[k].second, numSteps,
          [&] { return "switch entry " + str(k); }, "target step");
    for (std::size_t k = 0; k < e_.replicaPairs.size(); ++k)
      if (e_.replicaPairs[k].first >= e_.replicationFactor ||
          e_.replicaPairs[k].second >= e_.replicationFactor)
        fail(
            "replica pair " + str(k) + " names replica " +
            str(std::max(e_.replicaPairs[k].first, e_.replicaPairs[k].second)) +
            " but there are only " + str(e_.replicationFactor));
    for (std::size_t c = 0; c < e_.vertexClasses.size(); ++c) {
      const std::int32_t codelet = e_.vertexClasses[c].codelet;
      if (codelet < -1 || (codelet >= 0 && static_cast<std::size_t>(codelet) >=
                                               e_.codelets.size()))
        fail("vertex class " + str(c) + " (" + e_.vertexClasses[c].name +
             ") refers to codelet " + std::to_string(codelet) +
             " but there are only " + str(e_.codelets.size()));
    }
    for (std::size_t v = 0; v < e_.vertices.size(); ++v) {
      const VertexInstance &vi = e_.vertices[v];
      const auto who = [&] { return "vertex " + str(v); };
      checkIndex(vi.vertexClass, e_.vertexClasses.size(), who, "vertex class");
      checkIndex(vi.tile, numTiles_, who, "tile");
      if (vi.firstField > e_.fields.size())
        fail(who() + "'s fields start at " + str(vi.firstField) +
             " but there are only " + str(e_.fields.size()));
    }
  }

  void checkHostInterface() {
    for (std::size_t h = 0; h < e_.hostAccesses.size(); ++h) {
      const HostAccessInfo &a = e_.hostAccesses[h];
      useOps(a.firstOp, a.numOps, !a.write, a.write,
             [&] { return "host access " + str(h) + " (" + a.handle + ")"; });
    }
    for (std::size_t p = 0; p < e_.prints.size(); ++p) {
      const PrintInfo &pi = e_.prints[p];
      useOps(pi.firstOp, pi.numOps, true, false,
             [&] { return "print " + str(p) + " (" + pi.title + ")"; });
    }
  }

  void checkCopyOps() {
    forEachUsed(srcUses_, [&](std::size_t k, const CopyOp &op) {
      if (!stridedFits(op.src, op.srcStride, op.count, op.elemBytes, memBytes_))
        failOp(k, "reads", op.src, op.srcStride);
    });
    forEachUsed(dstUses_, [&](std::size_t k, const CopyOp &op) {
      if (!stridedFits(op.dst, op.dstStride, op.count, op.elemBytes, memBytes_))
        failOp(k, "writes", op.dst, op.dstStride);
      // A compiled op writes each destination byte once, so it moves no
      // more than a replica holds; a crafted one (stride 0, a huge count)
      // would make the engine stage and copy without bound.
      const std::uint64_t bytes = std::uint64_t{op.count} * op.elemBytes;
      if (bytes > memBytes_)
        fail("copy op " + str(k) + " writes " + str(op.count) +
             " elements of " + str(op.elemBytes) + " bytes, " + str(bytes) +
             " in all, more than the replica's " + str(memBytes_) + " bytes");
    });
  }
  // Calls f(k, op) once for each copy op inside any of \p ranges, in order.
  template <class F> void forEachUsed(std::vector<OpRange> &ranges, F &&f) {
    std::sort(ranges.begin(), ranges.end());
    std::uint64_t next = 0; // ops below it are done
    for (const auto &[first, end] : ranges) {
      for (std::uint64_t k = std::max(first, next); k < end; ++k)
        f(k, e_.copyOps[k]);
      next = std::max(next, end);
    }
  }
  [[noreturn]] void failOp(std::size_t k, const std::string &verb,
                           std::uint64_t addr, std::int64_t stride) const {
    const CopyOp &op = e_.copyOps[k];
    fail("copy op " + str(k) + " " + verb + " " + str(op.count) +
         " elements of " + str(op.elemBytes) + " bytes from address " +
         str(addr) + " with stride " + std::to_string(stride) +
         ", outside the replica's " + str(memBytes_) + " bytes");
  }

  void checkScopes() const {
    if (!e_.stepScopes.empty() && e_.stepScopes.size() != e_.steps.size())
      fail("it has " + str(e_.stepScopes.size()) + " step scopes for " +
           str(e_.steps.size()) + " steps");
    for (std::size_t i = 0; i < e_.stepScopes.size(); ++i)
      if (e_.stepScopes[i] != Executable::kNoScope)
        checkIndex(
            e_.stepScopes[i], e_.strings.size(),
            [&] { return "the scope of " + stepName(i); }, "string");
  }

  // The profile and the memory report look up each variable's name and
  // shape.
  void checkVariables() const {
    for (std::size_t i = 0; i < e_.variables.size(); ++i) {
      const VariableInfo &v = e_.variables[i];
      const auto who = [&] { return "variable " + str(i); };
      checkIndex(v.name, e_.variableNames.size(), who, "name");
      checkRange(v.shapeBegin, v.rank, e_.variableShapes.size(), who,
                 "shape entries");
    }
  }

  void checkEstimates() const {
    checkScopes();
    if (!e_.estimates.empty() && e_.estimates.size() != e_.steps.size())
      fail("it has " + str(e_.estimates.size()) + " step estimates for " +
           str(e_.steps.size()) + " steps");
    const std::size_t tileCycles =
        std::min(e_.tileCycles.size(), e_.tileCycleTiles.size());
    for (std::size_t i = 0; i < e_.estimates.size(); ++i)
      checkRange(
          e_.estimates[i].firstTileCycle, e_.estimates[i].numTileCycles,
          tileCycles, [&] { return "the estimate of step " + str(i); },
          "tile cycle entries");
    for (std::size_t i = 0; i < e_.tileCycleTiles.size(); ++i)
      checkIndex(
          e_.tileCycleTiles[i], numTiles_,
          [&] { return "tile cycle entry " + str(i); }, "tile");
    if (!e_.tileMemory.empty() && e_.tileMemory.size() != numTiles_)
      fail("it has memory facts for " + str(e_.tileMemory.size()) +
           " tiles but targets " + str(numTiles_));
  }

  const Executable &e_;
  const std::string &what_;
  std::uint64_t numTiles_ = 0, memBytes_ = 0;
  std::vector<OpRange> srcUses_, dstUses_;
};

} // namespace

// ---------------------------------------------------------------------------
// Header, compression and files
// ---------------------------------------------------------------------------

namespace {

std::uint64_t hashBytes(const void *data, std::size_t size) {
  return XXH64(data, size, 0);
}

// Bytes a stream holds after its position, or -1 where it cannot say (a
// pipe). Asked of the buffer, so the stream's state and exceptions are
// left alone.
std::int64_t bytesLeft(std::istream &in) {
  std::streambuf *buf = in.rdbuf();
  if (!buf || !in.good())
    return -1;
  const auto here = buf->pubseekoff(0, std::ios::cur, std::ios::in);
  if (here == std::streampos(-1))
    return -1;
  const auto end = buf->pubseekoff(0, std::ios::end, std::ios::in);
  buf->pubseekpos(here, std::ios::in);
  return end == std::streampos(-1) ? -1 : std::int64_t(end - here);
}

// The compressed payload, uninitialised until read.
struct Compressed {
  std::unique_ptr<std::byte[]> data;
  std::size_t size = 0;
  std::span<const std::byte> bytes() const { return {data.get(), size}; }
};

// Reads up to `size` bytes, so a header that claims more than the stream
// holds costs no more memory than the stream has: at once where the stream
// says how much it holds (a file), else in bounded chunks.
Compressed readUpTo(std::istream &in, std::uint64_t size) {
  Compressed c;
  const std::int64_t left = bytesLeft(in);
  std::uint64_t capacity =
      std::min<std::uint64_t>(size, std::uint64_t{1} << 20);
  if (left >= 0)
    capacity = std::min<std::uint64_t>(size, std::uint64_t(left));
  c.data.reset(new std::byte[capacity]);
  while (c.size < size && in) {
    if (c.size == capacity) {
      // Only a stream that could not say its size gets here.
      capacity = std::min<std::uint64_t>(size, capacity * 2);
      std::unique_ptr<std::byte[]> grown(new std::byte[capacity]);
      std::memcpy(grown.get(), c.data.get(), c.size);
      c.data = std::move(grown);
    }
    in.read(reinterpret_cast<char *>(c.data.get() + c.size),
            static_cast<std::streamsize>(capacity - c.size));
    c.size += static_cast<std::size_t>(in.gcount());
    if (left >= 0 && c.size == capacity)
      break;
  }
  return c;
}

// Before anything is read or allocated: the payload the header claims is
// under the ceiling, and no more than zstd can expand the compressed bytes.
void checkClaimedSizes(const detail::ExecutableFileHeader &header,
                       const std::string &what) {
  const std::uint64_t claimed = header.payloadBytes;
  if (claimed > kMaxExecutablePayloadBytes)
    throw SerializationError(corruptMessage(
        what, "its header says the payload is " + std::to_string(claimed) +
                  " bytes uncompressed, more than the " +
                  std::to_string(kMaxExecutablePayloadBytes) +
                  " bytes Tessera reads"));
  const std::uint64_t minCompressed =
      (claimed + kMaxZstdExpansion - 1) / kMaxZstdExpansion;
  if (header.compressedBytes < minCompressed)
    throw SerializationError(corruptMessage(
        what, "its header says " + std::to_string(header.compressedBytes) +
                  " compressed bytes expand to " + std::to_string(claimed) +
                  ", more than zstd can expand them (" +
                  std::to_string(kMaxZstdExpansion) + " times at most)"));
}

// One frame of the compressed payload and the size it records.
struct Frame {
  std::span<const std::byte> bytes;
  std::uint64_t contentBytes = 0;
};
using Frames = std::array<Frame, kExecutablePayloadParts>;

// Splits the compressed payload into its frames, each of which records the
// size it decompresses to (the writer's ZSTD_compress always does): they
// must add up to the header's, checked before decompressing. The last frame
// takes the rest; its decoder reports bytes after its end.
Frames splitFrames(std::span<const std::byte> compressed, std::uint64_t claimed,
                   const std::string &what) {
  const auto fail = [&](const std::string &problem) {
    throw SerializationError(corruptMessage(what, problem));
  };
  Frames frames;
  std::uint64_t total = 0;
  for (int k = 0; k < kExecutablePayloadParts; ++k) {
    const std::string which = "the compressed payload's frame " +
                              std::to_string(k + 1) + " of " +
                              std::to_string(kExecutablePayloadParts);
    if (compressed.empty())
      fail(which + " is missing");
    std::size_t n = compressed.size();
    if (k + 1 < kExecutablePayloadParts) {
      n = ZSTD_findFrameCompressedSize(compressed.data(), compressed.size());
      if (ZSTD_isError(n))
        fail(which + " is not a whole zstd frame (" + ZSTD_getErrorName(n) +
             ")");
    }
    const unsigned long long size =
        ZSTD_getFrameContentSize(compressed.data(), n);
    if (size == ZSTD_CONTENTSIZE_ERROR)
      fail(which + " does not start a zstd frame");
    if (size == ZSTD_CONTENTSIZE_UNKNOWN)
      fail(which + " does not record its size");
    frames[k] = {compressed.first(n), size};
    total =
        size > claimed - std::min(total, claimed) ? claimed + 1 : total + size;
    compressed = compressed.subspan(n);
  }
  if (total != claimed) {
    std::string sizes;
    for (const Frame &f : frames)
      sizes += (sizes.empty() ? "" : " + ") + std::to_string(f.contentBytes);
    fail("the compressed payload's zstd frames say they hold " + sizes +
         " bytes but the header says " + std::to_string(claimed));
  }
  return frames;
}

// Decodes the parts, the first on a thread of its own; a failure of the
// first part is reported before one of the second, as a reader going
// through the file in order would.
Executable decodeFrames(const Frames &frames, const std::string &what) {
  static_assert(kExecutablePayloadParts == 2);
  Executable exe;
  std::exception_ptr errors[2];
  double seconds[2] = {};
  const auto decode = [&](int part) {
    const auto start = std::chrono::steady_clock::now();
    try {
      detail::decodeCompressedPayloadPart(
          part, frames[part].bytes, frames[part].contentBytes,
          part == 0 ? 0 : frames[0].contentBytes, exe, what);
    } catch (...) {
      errors[part] = std::current_exception();
    }
    seconds[part] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  };
  std::thread first(decode, 0);
  decode(1);
  first.join();
  for (const std::exception_ptr &e : errors)
    if (e)
      std::rethrow_exception(e);
  logging::debug("decoded the parts of {} in {:.3f} and {:.3f} s", what,
                 seconds[0], seconds[1]);
  return exe;
}

detail::ExecutableFileHeader
parseHeader(const std::array<std::byte, kExecutableHeaderBytes> &h,
            std::size_t got, const std::string &what) {
  const std::string_view magic(reinterpret_cast<const char *>(h.data()),
                               std::min(got, kMagic.size()));
  if (got == 0)
    throw SerializationError(what + " is empty; recompile and save it again");
  if (magic != kMagic.substr(0, magic.size()))
    throw SerializationError(
        what + " is not a Tessera executable (bad magic: it does not start "
               "with \"TESSERAX\"); check the path, or compile and save it");
  if (got < kExecutableHeaderBytes)
    throw SerializationError(
        what + " is truncated: it holds " + std::to_string(got) +
        " bytes but the header alone takes " +
        std::to_string(kExecutableHeaderBytes) + std::string(kRedo));
  detail::ExecutableFileHeader header;
  header.version = static_cast<std::uint32_t>(getLE(h.data() + 8, 4));
  if (header.version != kExecutableFormatVersion)
    throw SerializationError(what + " was written by format version " +
                             std::to_string(header.version) +
                             " but this Tessera reads version " +
                             std::to_string(kExecutableFormatVersion) +
                             "; recompile it with this version");
  if (getLE(h.data() + 40, 8) != hashBytes(h.data(), 40))
    throw SerializationError(corruptMessage(what, "header checksum mismatch"));
  header.flags = static_cast<std::uint32_t>(getLE(h.data() + 12, 4));
  header.payloadBytes = getLE(h.data() + 16, 8);
  header.compressedBytes = getLE(h.data() + 24, 8);
  header.compressedHash = getLE(h.data() + 32, 8);
  if (header.flags != 0)
    throw SerializationError(what + " uses format flags " +
                             std::to_string(header.flags) +
                             " that this Tessera does not know; recompile it "
                             "with this version");
  checkClaimedSizes(header, what);
  return header;
}

// The compressed payload the header announces is all there.
void checkCompressedLength(const detail::ExecutableFileHeader &header,
                           std::uint64_t got, const std::string &what) {
  if (got < header.compressedBytes)
    throw SerializationError(
        what + " is truncated: the header says " +
        std::to_string(header.compressedBytes) + " compressed bytes but only " +
        std::to_string(got) + " follow" + std::string(kRedo));
}

// Checks, decompresses, decodes and validates the compressed payload.
Executable decodeCompressed(const detail::ExecutableFileHeader &header,
                            std::span<const std::byte> compressed,
                            const std::string &what,
                            std::chrono::steady_clock::time_point t0) {
  if (hashBytes(compressed.data(), compressed.size()) != header.compressedHash)
    throw SerializationError(corruptMessage(what, "checksum mismatch"));
  const Frames frames = splitFrames(compressed, header.payloadBytes, what);
  const auto t1 = std::chrono::steady_clock::now();
  Executable exe = decodeFrames(frames, what);
  const auto t2 = std::chrono::steady_clock::now();
  detail::validateExecutable(exe, what);
  const auto seconds = [](auto a, auto b) {
    return std::chrono::duration<double>(b - a).count();
  };
  logging::debug("read {}: {} compressed bytes in {:.3f} s, {} payload bytes "
                 "decoded in {:.3f} s, validated in {:.3f} s",
                 what, header.compressedBytes, seconds(t0, t1),
                 header.payloadBytes, seconds(t1, t2),
                 seconds(t2, std::chrono::steady_clock::now()));
  return exe;
}

// A file mapped read-only, so that its compressed payload is decoded
// straight from the page cache: reading it would first copy it into as
// many bytes of fresh memory (122 MB for ResNet-50), each page faulted in.
// Files are replaced by renaming (Executable::save, the cache), never
// rewritten in place, so a mapped file does not change under the reader.
class FileMapping {
public:
  FileMapping(const std::string &path, const std::string &what) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      throw SerializationError(what + " cannot be opened (" +
                               std::strerror(errno) +
                               "); check its permissions");
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      size_ = static_cast<std::size_t>(st.st_size);
      // Populated at once: the whole file is read, and faulting its pages
      // in one call costs less than one fault each.
      void *p = size_ == 0 ? nullptr
                           : ::mmap(nullptr, size_, PROT_READ,
                                    MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const std::byte *>(p);
        mapped_ = true;
      }
    }
    ::close(fd);
  }
  ~FileMapping() {
    if (data_)
      ::munmap(const_cast<std::byte *>(data_), size_);
  }
  FileMapping(const FileMapping &) = delete;
  FileMapping &operator=(const FileMapping &) = delete;

  bool mapped() const { return mapped_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }

private:
  const std::byte *data_ = nullptr;
  std::size_t size_ = 0;
  bool mapped_ = false;
};

std::string fileWhat(const std::string &path) {
  return "executable file \"" + path + "\"";
}

} // namespace

namespace detail {

std::array<std::byte, kExecutableHeaderBytes>
encodeExecutableHeader(const ExecutableFileHeader &header) {
  std::array<std::byte, kExecutableHeaderBytes> h{};
  std::memcpy(h.data(), kMagic.data(), kMagic.size());
  putLE(h.data() + 8, header.version, 4);
  putLE(h.data() + 12, header.flags, 4);
  putLE(h.data() + 16, header.payloadBytes, 8);
  putLE(h.data() + 24, header.compressedBytes, 8);
  putLE(h.data() + 32, header.compressedHash, 8);
  putLE(h.data() + 40, hashBytes(h.data(), 40), 8);
  return h;
}

Executable decodeExecutablePayload(const ExecutablePayload &payload,
                                   const std::string &what) {
  Executable exe;
  std::uint64_t origin = 0;
  for (int part = 0; part < kExecutablePayloadParts; ++part) {
    decodePayloadPart(part, payload[part], origin, exe, what);
    origin += payload[part].size();
  }
  validateExecutable(exe, what);
  return exe;
}

void validateExecutable(const Executable &exe, const std::string &what) {
  Validator(exe, what).run();
}

void writeExecutableFile(std::ostream &out, const ExecutablePayload &payload,
                         std::uint32_t version) {
  std::uint64_t payloadBytes = 0;
  std::size_t bound = 0;
  for (const std::vector<std::byte> &part : payload) {
    payloadBytes += part.size();
    bound += ZSTD_compressBound(part.size());
  }
  std::vector<std::byte> compressed(bound);
  std::size_t n = 0;
  for (const std::vector<std::byte> &part : payload) {
    const std::size_t k =
        ZSTD_compress(compressed.data() + n, compressed.size() - n, part.data(),
                      part.size(), kCompressionLevel);
    TESSERA_INTERNAL_ASSERT(!ZSTD_isError(k), std::string("ZSTD_compress: ") +
                                                  ZSTD_getErrorName(k));
    n += k;
  }
  compressed.resize(n);
  ExecutableFileHeader header;
  header.version = version;
  header.payloadBytes = payloadBytes;
  header.compressedBytes = n;
  header.compressedHash = hashBytes(compressed.data(), n);
  const auto h = encodeExecutableHeader(header);
  out.write(reinterpret_cast<const char *>(h.data()), h.size());
  out.write(reinterpret_cast<const char *>(compressed.data()),
            static_cast<std::streamsize>(n));
  if (!out)
    throw SerializationError(
        "could not write an executable of " + std::to_string(h.size() + n) +
        " bytes: the output stream failed; check the disk space and that "
        "the destination is writable");
}

Executable readExecutableFile(std::istream &in, const std::string &what) {
  std::array<std::byte, kExecutableHeaderBytes> h{};
  Compressed compressed;
  ExecutableFileHeader header;
  const auto t0 = std::chrono::steady_clock::now();
  // A stream with exceptions enabled reports a short read by throwing; it is
  // the same truncation, and gets the same error type.
  try {
    in.read(reinterpret_cast<char *>(h.data()), h.size());
    header = parseHeader(h, static_cast<std::size_t>(in.gcount()), what);
    compressed = readUpTo(in, header.compressedBytes);
  } catch (const std::ios_base::failure &e) {
    throw SerializationError(what + " cannot be read (" + e.what() +
                             "); check the file, or recompile and save it "
                             "again");
  }
  checkCompressedLength(header, compressed.size, what);
  return decodeCompressed(header, compressed.bytes(), what, t0);
}

Executable readExecutableFile(const std::string &path, std::uint64_t offset,
                              const std::string &what, std::uint64_t &end) {
  const auto t0 = std::chrono::steady_clock::now();
  const FileMapping file(path, what);
  if (!file.mapped()) {
    // Not mappable (a pipe, say): read it as a stream.
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw SerializationError(what + " cannot be opened (" +
                               std::strerror(errno) +
                               "); check its permissions");
    in.seekg(static_cast<std::streamoff>(offset));
    Executable exe = readExecutableFile(in, what);
    end = static_cast<std::uint64_t>(std::streamoff(in.tellg()));
    return exe;
  }
  std::span<const std::byte> bytes = file.bytes();
  bytes = bytes.subspan(std::min<std::uint64_t>(offset, bytes.size()));
  std::array<std::byte, kExecutableHeaderBytes> h{};
  const std::size_t got = std::min(bytes.size(), h.size());
  if (got != 0)
    std::memcpy(h.data(), bytes.data(), got);
  const ExecutableFileHeader header = parseHeader(h, got, what);
  const std::span<const std::byte> rest = bytes.subspan(got);
  checkCompressedLength(header, rest.size(), what);
  Executable exe = decodeCompressed(
      header, rest.first(static_cast<std::size_t>(header.compressedBytes)),
      what, t0);
  end = offset + kExecutableHeaderBytes + header.compressedBytes;
  return exe;
}

} // namespace detail

// ---------------------------------------------------------------------------
// Executable's entry points
// ---------------------------------------------------------------------------

void Executable::serialize(std::ostream &out) const {
  detail::writeExecutableFile(out, detail::encodeExecutablePayload(*this));
}

Executable Executable::deserialize(std::istream &in) {
  return detail::readExecutableFile(in, "executable stream");
}

// Writes beside the destination and renames, so a reader (another process
// sharing a cache, say) sees either the old file or the whole new one.
void Executable::save(const std::string &path) const {
  namespace fs = std::filesystem;
  removeStaleTemporaries(fs::path(path).parent_path().string(),
                         fs::path(path).filename().string() + ".tmp.");
  const std::string tmp = temporaryFileName(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw SerializationError("cannot write " + fileWhat(path) +
                               ": creating \"" + tmp + "\" failed (" +
                               std::strerror(errno) +
                               "); check that the folder exists and is "
                               "writable");
    std::error_code ignored;
    try {
      serialize(out);
      out.close();
      if (!out)
        throw SerializationError("closing \"" + tmp + "\" failed");
    } catch (const SerializationError &e) {
      fs::remove(tmp, ignored);
      throw SerializationError("cannot write " + fileWhat(path) + ": " +
                               e.what());
    } catch (...) {
      fs::remove(tmp, ignored);
      throw;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw SerializationError("cannot write " + fileWhat(path) +
                             ": renaming \"" + tmp + "\" to it failed (" +
                             ec.message() + ")");
  }
}

Executable Executable::load(const std::string &path) {
  namespace fs = std::filesystem;
  const std::string what = fileWhat(path);
  std::error_code ec;
  if (!fs::exists(fs::status(path, ec)))
    throw SerializationError(what +
                             " does not exist; check the path, or compile "
                             "the program and save it there");
  checkRegularFile(path, "executable file");
  std::uint64_t end = 0;
  Executable exe = detail::readExecutableFile(path, 0, what, end);
  if (end != fs::file_size(path, ec) && !ec)
    throw SerializationError(
        corruptMessage(what, "bytes follow the end of the executable"));
  return exe;
}

} // namespace tessera
