#include "tessera/compiler/Executable.hpp"
#include "tessera/compiler/ExecutableFormat.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <tuple>
#include <unistd.h>

namespace tessera {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// A small but complete executable: every field of Executable, and of each
// struct in it, holds a non-default value somewhere, and every index and
// address stays inside what it refers to.
// ---------------------------------------------------------------------------

Step makeStep(StepKind kind, std::uint32_t a, std::uint32_t b = 0,
              std::uint32_t c = 0) {
  Step s;
  s.kind = kind;
  s.a = a;
  s.b = b;
  s.c = c;
  return s;
}

Step withAddr(Step s, std::uint64_t addr, Type type) {
  s.hasAddr = true;
  s.addr = addr;
  s.type = type;
  return s;
}

void addSteps(Executable &e) {
  e.steps = {
      makeStep(StepKind::Compute, 0, 2, 1),
      makeStep(StepKind::Exchange, 0, 2),
      makeStep(StepKind::StreamIn, 0, 2, 1),
      makeStep(StepKind::StreamOut, 1, 3, 1),
      makeStep(StepKind::RemoteIn, 0, 4, 1),
      makeStep(StepKind::RemoteOut, 0, 5, 1),
      withAddr(makeStep(StepKind::RepeatStart, 1, 9), 64, Type::HALF),
      makeStep(StepKind::Sync, 0),
      makeStep(StepKind::RepeatEnd, 1, 7),
      withAddr(makeStep(StepKind::JumpIfZero, 11), 40, Type::INT),
      makeStep(StepKind::Jump, 11),
      withAddr(makeStep(StepKind::Switch, 0, 2, 13), 44, Type::UNSIGNED_INT),
      makeStep(StepKind::Call, 15),
      makeStep(StepKind::Print, 0),
      withAddr(makeStep(StepKind::AbortIf, 1), 48, Type::BOOL),
      makeStep(StepKind::Return, 0),
      withAddr(makeStep(StepKind::JumpIfNonZero, 18), 1020, Type::FLOAT),
      makeStep(StepKind::Abort, 2),
      makeStep(StepKind::End, 0),
  };
  e.steps[6].count = 5;
  for (std::size_t i = 0; i < e.steps.size(); ++i)
    e.steps[i].name = static_cast<std::uint32_t>(i % 3 + 1);
  e.programEntry = {0, 6, 18};
  e.numCounters = 2;
  e.switchTable = {{-1, 12}, {7, 13}};
}

void addCopyOps(Executable &e) {
  e.copyOps = {
      {0, 256, 0, 0, 1, 64},        // exchange, contiguous
      {512, 768, 4, -4, 3, 4},      // exchange, strided both ways
      {1000000, 100, 16, 0, 1, 16}, // stream in: src is a host offset
      {200, 4, 8, 4, 2, 4},         // stream out: dst is a host offset
      {99999, 600, 0, 0, 1, 8},     // remote in: src is a slot offset
      {600, 7777, 0, 0, 1, 8},      // remote out: dst is a slot offset
      {123456, 16, 0, 0, 1, 8},     // host write
      {300, 1 << 30, 0, 0, 1, 4},   // print and host read: dst is host
  };
}

void addVertices(Executable &e) {
  e.vertexClasses = {{"popops::ScaledAdd<float>", -1}, {"MyVertex", 0}};
  e.codelets = {{"my.cpp", "class MyVertex : public Vertex {};", "-O3"}};
  e.vertices = {{1, 3, 2, 123}, {0, 1, 0, 45}};
  e.fields = {{8, 2}, {32, 4}, {1, 0}};
  e.spans = {{512, 6}, {0, 9}};
  e.stateBytes = {std::byte{1}, std::byte{2}, std::byte{0xfe}};
  e.strings = {"", "loop", "abort: x was negative", "main"};
  e.prints = {{"x", Type::HALF, {2, 3}, 7, 1}};
}

void addHostInterface(Executable &e) {
  e.streams = {{"in", Type::HALF, 8, true, true},
               {"out", Type::INT, 2, false, false}};
  e.hostAccesses = {{"w", Type::UNSIGNED_INT, 2, true, 6, 1},
                    {"r", Type::FLOAT, 1, false, 7, 1}};
  e.remoteBuffers = {{"rb", Type::SHORT, 8, 3}};
}

void addEstimates(Executable &e) {
  e.tileCycleTiles = {0, 1, 2, 3};
  e.tileCycles = {10, 20, 30, 40};
  for (std::size_t i = 0; i < e.steps.size(); ++i) {
    StepEstimate est;
    est.ipuCycles = {i + 1, 2 * i + 1};
    est.firstTileCycle = static_cast<std::uint32_t>(i % 3);
    est.numTileCycles = 1;
    est.bytesExchanged = 100 * i;
    e.estimates.push_back(est);
  }
  for (std::uint64_t t = 0; t < 4; ++t)
    e.tileMemory.push_back({t + 1, t + 2, t + 3, t + 4, t + 5, t + 6});
  VariableInfo weights, tmp;
  weights.rank = 2, weights.bytes = 256, weights.tiles = 4;
  tmp.name = 1, tmp.rank = 1, tmp.shapeBegin = 2, tmp.bytes = 7, tmp.tiles = 1;
  tmp.liveBegin = 3, tmp.liveEnd = 9, tmp.type = Type::CHAR;
  tmp.alwaysLive = false;
  e.variables = {weights, tmp};
  e.variableNames = {"weights", "tmp"};
  e.variableShapes = {16, 4, 7};
  e.computeSetNames = {"fwd/add", "fwd/mul"};
  e.compilePhases = {{"checking graph", 0.25, 1000, 2000},
                     {"laying out memory", 1.5, 3000, 4000}};
}

Executable richExecutable() {
  Executable e;
  e.arch = "ipu2";
  e.numIPUs = 2;
  e.tilesPerIPU = 2;
  e.replicationFactor = 2;
  e.bytesPerTile = 1024;
  e.clockHz = 1.33e9;
  e.tileBase = {0, 256, 512, 768, 1024};
  e.initRegions = {{16, 0, 8}, {300, 8, 4}};
  for (int i = 0; i < 12; ++i)
    e.initData.push_back(static_cast<std::byte>(0xa0 + i));
  addSteps(e);
  addCopyOps(e);
  addVertices(e);
  addHostInterface(e);
  addEstimates(e);
  return e;
}

// ---------------------------------------------------------------------------
// Field-by-field equality, written independently of the encoder.
// ---------------------------------------------------------------------------

auto tied(const Step &s) {
  return std::tie(s.kind, s.type, s.hasAddr, s.a, s.b, s.c, s.addr, s.count,
                  s.name);
}
auto tied(const CopyOp &o) {
  return std::tie(o.src, o.dst, o.srcStride, o.dstStride, o.count, o.elemBytes);
}
auto tied(const FieldValue &f) { return std::tie(f.addr, f.size); }
auto tied(const VertexInstance &v) {
  return std::tie(v.vertexClass, v.tile, v.firstField, v.cycles);
}
auto tied(const VertexClassRef &c) { return std::tie(c.name, c.codelet); }
auto tied(const CodeletSourceRef &c) {
  return std::tie(c.name, c.source, c.flags);
}
auto tied(const StreamInfo &s) {
  return std::tie(s.handle, s.type, s.numElements, s.hostToDevice, s.broadcast);
}
auto tied(const HostAccessInfo &h) {
  return std::tie(h.handle, h.type, h.numElements, h.write, h.firstOp,
                  h.numOps);
}
auto tied(const RemoteBufferInfo &r) {
  return std::tie(r.handle, r.type, r.numElements, r.repeats);
}
auto tied(const PrintInfo &p) {
  return std::tie(p.title, p.type, p.shape, p.firstOp, p.numOps);
}
auto tied(const InitRegion &r) {
  return std::tie(r.addr, r.dataOffset, r.size);
}
auto tied(const TileMemory &m) {
  return std::tie(m.alwaysLive, m.notAlwaysLive, m.constants, m.temporaries,
                  m.vertexState, m.code);
}
auto tied(const VariableInfo &v) {
  return std::tie(v.name, v.rank, v.shapeBegin, v.bytes, v.tiles, v.liveBegin,
                  v.liveEnd, v.type, v.alwaysLive);
}
auto tied(const CompilePhase &p) {
  return std::tie(p.name, p.seconds, p.rssBytes, p.peakRssBytes);
}
auto tied(const StepEstimate &s) {
  return std::tie(s.ipuCycles, s.firstTileCycle, s.numTileCycles,
                  s.bytesExchanged);
}

template <class T>
void expectSameVector(const std::vector<T> &a, const std::vector<T> &b,
                      const char *name) {
  SCOPED_TRACE(name);
  ASSERT_EQ(a.size(), b.size());
  if constexpr (std::is_class_v<T> && !std::is_same_v<T, std::string> &&
                !std::is_same_v<T, std::pair<std::int32_t, std::uint32_t>>) {
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(tied(a[i]) == tied(b[i])) << "element " << i;
  } else {
    // Whole-vector comparison: initData can hold megabytes.
    EXPECT_TRUE(a == b);
  }
}

#define EXPECT_SAME_VECTOR(f) expectSameVector(a.f, b.f, #f)

void expectSameExecutable(const Executable &a, const Executable &b) {
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.numIPUs, b.numIPUs);
  EXPECT_EQ(a.tilesPerIPU, b.tilesPerIPU);
  EXPECT_EQ(a.replicationFactor, b.replicationFactor);
  EXPECT_EQ(a.bytesPerTile, b.bytesPerTile);
  EXPECT_EQ(a.clockHz, b.clockHz);
  EXPECT_SAME_VECTOR(tileBase);
  EXPECT_SAME_VECTOR(initRegions);
  EXPECT_SAME_VECTOR(initData);
  EXPECT_SAME_VECTOR(steps);
  EXPECT_SAME_VECTOR(programEntry);
  EXPECT_EQ(a.numCounters, b.numCounters);
  EXPECT_SAME_VECTOR(switchTable);
  EXPECT_SAME_VECTOR(copyOps);
  EXPECT_SAME_VECTOR(vertexClasses);
  EXPECT_SAME_VECTOR(codelets);
  EXPECT_SAME_VECTOR(vertices);
  EXPECT_SAME_VECTOR(fields);
  EXPECT_SAME_VECTOR(spans);
  EXPECT_SAME_VECTOR(stateBytes);
  EXPECT_SAME_VECTOR(strings);
  EXPECT_SAME_VECTOR(prints);
  EXPECT_SAME_VECTOR(streams);
  EXPECT_SAME_VECTOR(hostAccesses);
  EXPECT_SAME_VECTOR(remoteBuffers);
  EXPECT_SAME_VECTOR(estimates);
  EXPECT_SAME_VECTOR(tileCycleTiles);
  EXPECT_SAME_VECTOR(tileCycles);
  EXPECT_SAME_VECTOR(tileMemory);
  EXPECT_SAME_VECTOR(variables);
  EXPECT_SAME_VECTOR(variableNames);
  EXPECT_SAME_VECTOR(variableShapes);
  EXPECT_SAME_VECTOR(computeSetNames);
  EXPECT_SAME_VECTOR(compilePhases);
}

#undef EXPECT_SAME_VECTOR

// ---------------------------------------------------------------------------
// Helpers for crafting files.
// ---------------------------------------------------------------------------

std::string serialized(const Executable &e) {
  std::ostringstream out;
  e.serialize(out);
  return out.str();
}

std::string fileAround(const detail::ExecutablePayload &payload,
                       std::uint32_t version = kExecutableFormatVersion) {
  std::ostringstream out;
  detail::writeExecutableFile(out, payload, version);
  return out.str();
}

Executable fromBytes(const std::string &bytes) {
  std::istringstream in(bytes);
  return Executable::deserialize(in);
}

// The message of the SerializationError that reading `bytes` throws.
std::string readError(const std::string &bytes) {
  try {
    fromBytes(bytes);
  } catch (const SerializationError &e) {
    return e.what();
  }
  ADD_FAILURE() << "reading did not throw SerializationError";
  return {};
}

std::string decodeError(const Executable &e) {
  const auto payload = detail::encodeExecutablePayload(e);
  try {
    detail::decodeExecutablePayload(payload, "test executable");
  } catch (const SerializationError &err) {
    return err.what();
  }
  ADD_FAILURE() << "decoding did not throw SerializationError";
  return {};
}

// An unsigned integer as the payload stores it: a LEB128 varint.
void putVarint(std::vector<std::byte> &out, std::uint64_t v) {
  for (; v >= 0x80; v >>= 7)
    out.push_back(static_cast<std::byte>(v | 0x80));
  out.push_back(static_cast<std::byte>(v));
}
void putU64(std::vector<std::byte> &out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<std::byte>(v >> (8 * i)));
}

std::size_t payloadBytes(const detail::ExecutablePayload &payload) {
  std::size_t n = 0;
  for (const auto &part : payload)
    n += part.size();
  return n;
}

constexpr std::uint64_t kHuge = std::uint64_t{1} << 60;

// ---------------------------------------------------------------------------
// Round trips.
// ---------------------------------------------------------------------------

TEST(ExecutableIO, RichExecutableRoundTripsEveryField) {
  const Executable original = richExecutable();
  const Executable loaded = fromBytes(serialized(original));
  expectSameExecutable(original, loaded);
  EXPECT_EQ(loaded.registry, nullptr);
}

TEST(ExecutableIO, DefaultExecutableRoundTrips) {
  const Executable original;
  expectSameExecutable(original, fromBytes(serialized(original)));
}

TEST(ExecutableIO, SerialisingTwiceGivesTheSameBytes) {
  EXPECT_EQ(serialized(richExecutable()), serialized(richExecutable()));
}

TEST(ExecutableIO, LargeIncompressibleInitialDataRoundTrips) {
  Executable e = richExecutable();
  constexpr std::size_t kBytes = 3 << 20; // more than one read chunk
  std::mt19937_64 rng(7);
  e.initData.resize(kBytes);
  for (std::byte &b : e.initData)
    b = static_cast<std::byte>(rng());
  e.initRegions.push_back({0, 0, 1024});
  expectSameExecutable(e, fromBytes(serialized(e)));
}

TEST(ExecutableIO, StreamCanHoldTwoExecutablesBackToBack) {
  const Executable first = richExecutable();
  Executable second = richExecutable();
  second.arch = "ipu21";
  std::stringstream io;
  first.serialize(io);
  second.serialize(io);
  expectSameExecutable(first, Executable::deserialize(io));
  expectSameExecutable(second, Executable::deserialize(io));
}

// The delta coding of the large tables wraps modulo the fields' widths:
// neighbours at opposite ends of the range, and the extremes of every
// field, come back as they were. Copy ops no step uses, table entries no
// vertex reads and estimates are not checked against memory, so they can
// hold any value.
TEST(ExecutableIO, ExtremeValuesInDeltaCodedTablesRoundTrip) {
  Executable e = richExecutable();
  constexpr std::uint64_t kMax64 = UINT64_MAX;
  constexpr std::uint32_t kMax32 = UINT32_MAX;
  e.copyOps.push_back({kMax64, 0, INT64_MIN, INT64_MAX, kMax32, kMax32});
  e.copyOps.push_back({0, kMax64, INT64_MAX, INT64_MIN, 0, 0});
  e.copyOps.push_back({kMax64 / 2, kMax64 / 2 + 1, -1, 1, 1, 1});
  e.fields.insert(e.fields.end(), {{kMax64, kMax32}, {0, 0}, {kMax64, 1}});
  e.spans.insert(e.spans.end(), {{0, kMax32}, {kMax64, 0}, {1, 1}});
  e.vertices.push_back({1, 0, 3, kMax64});
  e.vertices.push_back({0, 3, 0, 0});
  e.tileCycles = {kMax64, 0, kMax64, 1};
  e.stepScopes.assign(e.steps.size(), Executable::kNoScope);
  e.stepScopes[3] = 0;
  e.stepScopes[4] = 3;
  expectSameExecutable(e, fromBytes(serialized(e)));
  EXPECT_EQ(fromBytes(serialized(e)).stepScopes, e.stepScopes);
}

// Tables far larger than the reader's decompression window, of values that
// do not compress, so that fields straddle every window boundary.
TEST(ExecutableIO, LargeTablesRoundTripAcrossDecompressionWindows) {
  Executable e = richExecutable();
  std::mt19937_64 rng(11);
  const auto any = [&](int bits) { return rng() >> (64 - bits); };
  for (int i = 0; i < 200000; ++i) {
    const int bits = 1 + static_cast<int>(rng() % 64);
    e.spans.push_back({any(bits), static_cast<std::uint32_t>(any(32))});
    e.copyOps.push_back({any(bits), any(bits),
                         static_cast<std::int64_t>(any(64)),
                         static_cast<std::int64_t>(any(bits)),
                         static_cast<std::uint32_t>(any(32)),
                         static_cast<std::uint32_t>(any(8))});
  }
  const std::string bytes = serialized(e);
  ASSERT_GT(bytes.size(), std::size_t{4} << 20);
  expectSameExecutable(e, fromBytes(bytes));
}

// ---------------------------------------------------------------------------
// Damaged and foreign files.
// ---------------------------------------------------------------------------

TEST(ExecutableIO, TruncatedAtAnyPointThrows) {
  const std::string bytes = serialized(richExecutable());
  ASSERT_GT(bytes.size(), kExecutableHeaderBytes + 100);
  for (std::size_t cut = 0; cut < bytes.size(); cut += 7) {
    SCOPED_TRACE(cut);
    const std::string message = readError(bytes.substr(0, cut));
    EXPECT_THAT(message, HasSubstr(cut == 0 ? "is empty" : "is truncated"));
  }
  EXPECT_THAT(
      readError(bytes.substr(0, bytes.size() - 1)),
      HasSubstr("but only " +
                std::to_string(bytes.size() - 1 - kExecutableHeaderBytes) +
                " follow; recompile and save it again"));
}

TEST(ExecutableIO, TruncatedStreamThatThrowsOnEofGivesSerializationError) {
  const std::string bytes = serialized(richExecutable());
  for (std::size_t cut : {std::size_t{20}, bytes.size() - 3}) {
    std::istringstream in(bytes.substr(0, cut));
    in.exceptions(std::ios::failbit | std::ios::badbit);
    EXPECT_THROW(Executable::deserialize(in), SerializationError);
  }
}

TEST(ExecutableIO, FlippedByteAnywhereThrows) {
  const std::string bytes = serialized(richExecutable());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (unsigned char mask : {0x01, 0x80}) {
      SCOPED_TRACE(i);
      std::string damaged = bytes;
      damaged[i] = static_cast<char>(damaged[i] ^ mask);
      std::istringstream in(damaged);
      EXPECT_THROW(Executable::deserialize(in), SerializationError);
    }
  }
}

TEST(ExecutableIO, FlippedPayloadByteIsReportedAsChecksumMismatch) {
  std::string bytes = serialized(richExecutable());
  bytes[kExecutableHeaderBytes + 10] ^= 0x10;
  EXPECT_THAT(readError(bytes), HasSubstr("is corrupt: checksum mismatch"));
}

TEST(ExecutableIO, ForeignFileHasBadMagic) {
  std::string bytes = serialized(richExecutable());
  std::memcpy(bytes.data(), "PK\x03\x04", 4);
  EXPECT_THAT(readError(bytes),
              HasSubstr("executable stream is not a Tessera executable "
                        "(bad magic"));
  EXPECT_THAT(readError("hello"), HasSubstr("bad magic"));
}

TEST(ExecutableIO, FutureVersionSaysWhichVersions) {
  const auto payload = detail::encodeExecutablePayload(richExecutable());
  EXPECT_THAT(readError(fileAround(payload, 7)),
              HasSubstr("was written by format version 7 but this Tessera "
                        "reads version " +
                        std::to_string(kExecutableFormatVersion) +
                        "; recompile it with this version"));
}

TEST(ExecutableIO, UnknownFlagsAreRejected) {
  const std::string good = serialized(richExecutable());
  detail::ExecutableFileHeader header;
  header.flags = 4;
  header.payloadBytes =
      payloadBytes(detail::encodeExecutablePayload(richExecutable()));
  header.compressedBytes = good.size() - kExecutableHeaderBytes;
  std::memcpy(&header.compressedHash, good.data() + 32, 8);
  const auto h = detail::encodeExecutableHeader(header);
  std::string bytes = good;
  std::memcpy(bytes.data(), h.data(), h.size());
  EXPECT_THAT(readError(bytes), HasSubstr("uses format flags 4"));
}

TEST(ExecutableIO, HugeStringLengthInPayloadThrowsWithoutAllocating) {
  detail::ExecutablePayload payload;
  putVarint(payload[0], kHuge); // arch's length
  payload[0].resize(payload[0].size() + 16, std::byte{'a'});
  const std::string message = readError(fileAround(payload));
  EXPECT_THAT(message, HasSubstr("is corrupt"));
  EXPECT_THAT(message, HasSubstr(std::to_string(kHuge)));
}

TEST(ExecutableIO, HugeVectorCountInPayloadThrowsWithoutAllocating) {
  detail::ExecutablePayload payload;
  std::vector<std::byte> &first = payload[0];
  putVarint(first, 4); // arch
  for (char c : std::string("ipu2"))
    first.push_back(static_cast<std::byte>(c));
  putVarint(first, 1);     // numIPUs
  putVarint(first, 4);     // tilesPerIPU
  putVarint(first, 1);     // replicationFactor
  putVarint(first, 256);   // bytesPerTile
  putU64(first, 0);        // clockHz
  putVarint(first, kHuge); // tileBase's count
  first.resize(first.size() + 64);
  EXPECT_THAT(readError(fileAround(payload)),
              HasSubstr("says " + std::to_string(kHuge) + " elements"));
}

// A huge value, as 8 little-endian bytes or as a varint, written over the
// payload anywhere: a SerializationError or a valid executable, never a
// crash or an allocation of what the value says.
TEST(ExecutableIO, HugeValueAtAnyPayloadOffsetIsHandled) {
  const auto good = detail::encodeExecutablePayload(richExecutable());
  std::vector<std::byte> varint;
  putVarint(varint, kHuge);
  for (std::size_t part = 0; part < good.size(); ++part) {
    for (std::size_t at = 0; at + 9 <= good[part].size(); ++at) {
      SCOPED_TRACE(at);
      for (bool asVarint : {false, true}) {
        auto payload = good;
        for (int i = 0; i < 8; ++i)
          payload[part][at + i] = static_cast<std::byte>(kHuge >> (8 * i));
        if (asVarint)
          std::copy(varint.begin(), varint.end(), payload[part].begin() + at);
        try {
          detail::decodeExecutablePayload(payload, "test payload");
        } catch (const SerializationError &) {
        }
      }
    }
  }
}

TEST(ExecutableIO, HeaderClaimingHugePayloadThrows) {
  const auto payload = detail::encodeExecutablePayload(richExecutable());
  std::string bytes = fileAround(payload);
  detail::ExecutableFileHeader header;
  header.payloadBytes = kHuge;
  header.compressedBytes = bytes.size() - kExecutableHeaderBytes;
  std::memcpy(&header.compressedHash, bytes.data() + 32, 8);
  const auto h = detail::encodeExecutableHeader(header);
  std::memcpy(bytes.data(), h.data(), h.size());
  EXPECT_THAT(readError(bytes),
              HasSubstr("its header says the payload is " +
                        std::to_string(kHuge) +
                        " bytes uncompressed, more "
                        "than the 4294967296 bytes Tessera reads"));
}

TEST(ExecutableIO, HeaderClaimingMoreThanZstdCanExpandIsCorrupt) {
  std::string bytes =
      fileAround(detail::encodeExecutablePayload(richExecutable()));
  detail::ExecutableFileHeader header;
  header.compressedBytes = bytes.size() - kExecutableHeaderBytes;
  header.payloadBytes = header.compressedBytes * kMaxZstdExpansion + 1;
  std::memcpy(&header.compressedHash, bytes.data() + 32, 8);
  const auto h = detail::encodeExecutableHeader(header);
  std::memcpy(bytes.data(), h.data(), h.size());
  EXPECT_THAT(readError(bytes),
              HasSubstr("more than zstd can expand them (32768 times at "
                        "most)"));
}

// The frame's own record of its size is checked before decompressing, so a
// lying header allocates nothing.
TEST(ExecutableIO, HeaderSizeOtherThanTheFramesIsCorrupt) {
  const auto payload = detail::encodeExecutablePayload(richExecutable());
  std::string bytes = fileAround(payload);
  detail::ExecutableFileHeader header;
  header.compressedBytes = bytes.size() - kExecutableHeaderBytes;
  header.payloadBytes = payloadBytes(payload) + 1000;
  std::memcpy(&header.compressedHash, bytes.data() + 32, 8);
  const auto h = detail::encodeExecutableHeader(header);
  std::memcpy(bytes.data(), h.data(), h.size());
  EXPECT_THAT(readError(bytes),
              HasSubstr("the compressed payload's zstd frames say they hold " +
                        std::to_string(payload[0].size()) + " + " +
                        std::to_string(payload[1].size()) +
                        " bytes but the header says " +
                        std::to_string(payloadBytes(payload) + 1000)));
}

TEST(ExecutableIO, HeaderClaimingHugeCompressedSizeIsTruncated) {
  std::string bytes = serialized(richExecutable());
  detail::ExecutableFileHeader header;
  header.payloadBytes = 100;
  header.compressedBytes = kHuge;
  const auto h = detail::encodeExecutableHeader(header);
  std::memcpy(bytes.data(), h.data(), h.size());
  EXPECT_THAT(readError(bytes),
              HasSubstr("the header says " + std::to_string(kHuge) +
                        " compressed bytes but only"));
}

TEST(ExecutableIO, TrailingPayloadBytesAreCorrupt) {
  for (std::size_t part = 0; part < kExecutablePayloadParts; ++part) {
    SCOPED_TRACE(part);
    auto payload = detail::encodeExecutablePayload(richExecutable());
    payload[part].push_back(std::byte{0});
    EXPECT_THAT(readError(fileAround(payload)),
                HasSubstr("1 unexpected bytes follow the last field"));
  }
}

TEST(ExecutableIO, UnknownEnumCodesAreCorrupt) {
  auto payloads = detail::encodeExecutablePayload(richExecutable());
  std::vector<std::byte> &payload = payloads[0];
  // Layout of the first part: arch (1 + 4), numIPUs, tilesPerIPU and
  // replicationFactor (1 each), bytesPerTile 1024 (2), clockHz (8), steps'
  // count (1): the first step's kind follows.
  const std::size_t kindAt = 5 + 3 + 2 + 8 + 1;
  ASSERT_EQ(payload[kindAt], std::byte{0});      // StepKind::Compute
  ASSERT_EQ(payload[kindAt - 1], std::byte{19}); // steps' count
  payload[kindAt] = std::byte{200};
  EXPECT_THAT(readError(fileAround(payloads)), HasSubstr("step kind code 200"));
  payload[kindAt] = std::byte{0};
  payload[kindAt + 1] = std::byte{10};
  EXPECT_THAT(readError(fileAround(payloads)),
              HasSubstr("element type code 10"));
  payload[kindAt + 1] = std::byte{0};
  payload[kindAt + 2] = std::byte{2};
  EXPECT_THAT(readError(fileAround(payloads)), HasSubstr("should be a bool"));
}

TEST(ExecutableIO, IntegerTooWideForItsFieldIsCorrupt) {
  const auto prefix = [] {
    detail::ExecutablePayload payload;
    putVarint(payload[0], 4); // arch
    for (char c : std::string("ipu2"))
      payload[0].push_back(static_cast<std::byte>(c));
    return payload;
  };
  auto payload = prefix();
  putVarint(payload[0], std::uint64_t{1} << 32); // numIPUs
  EXPECT_THAT(readError(fileAround(payload)),
              HasSubstr("the integer at payload byte 5 does not fit in its "
                        "32-bit field"));
  // Ten bytes carry 70 bits: the tenth may only add bit 63.
  payload = prefix();
  payload[0].insert(payload[0].end(), 9, std::byte{0xff});
  payload[0].push_back(std::byte{0x02});
  EXPECT_THAT(readError(fileAround(payload)),
              HasSubstr("does not fit in its 32-bit field"));
  payload = prefix();
  payload[0].insert(payload[0].end(), 12, std::byte{0x80});
  EXPECT_THAT(readError(fileAround(payload)),
              HasSubstr("the integer at payload byte 5 runs past 10 bytes"));
}

// Files whose compressed payload has been rebuilt with a valid checksum but
// without its frames as written: one frame per part, nothing after them.
class ReframedFile : public ::testing::Test {
protected:
  // A file of \p compressed bytes, its header consistent with them.
  static std::string fileOf(const std::string &compressed,
                            std::uint64_t payloadBytes) {
    detail::ExecutableFileHeader header;
    header.payloadBytes = payloadBytes;
    header.compressedBytes = compressed.size();
    header.compressedHash = XXH64(compressed.data(), compressed.size(), 0);
    const auto h = detail::encodeExecutableHeader(header);
    return std::string(reinterpret_cast<const char *>(h.data()), h.size()) +
           compressed;
  }
  void SetUp() override {
    payload_ = detail::encodeExecutablePayload(richExecutable());
    compressed_ = fileAround(payload_).substr(kExecutableHeaderBytes);
    firstFrame_ =
        ZSTD_findFrameCompressedSize(compressed_.data(), compressed_.size());
    ASSERT_FALSE(ZSTD_isError(firstFrame_));
    ASSERT_LT(firstFrame_, compressed_.size());
  }
  detail::ExecutablePayload payload_;
  std::string compressed_;
  std::size_t firstFrame_ = 0;
};

TEST_F(ReframedFile, TheFrameOfAPartIsMissing) {
  EXPECT_THAT(
      readError(fileOf(compressed_.substr(0, firstFrame_), payload_[0].size())),
      HasSubstr("the compressed payload's frame 2 of 2 is missing"));
}

TEST_F(ReframedFile, AFirstFrameCutShortIsCorrupt) {
  EXPECT_THAT(readError(fileOf(compressed_.substr(0, firstFrame_ - 4),
                               payload_[0].size())),
              HasSubstr("the compressed payload's frame 1 of 2 is not a "
                        "whole zstd frame"));
}

TEST_F(ReframedFile, BytesAfterTheLastFrameAreCorrupt) {
  EXPECT_THAT(readError(fileOf(compressed_ + "abc", payloadBytes(payload_))),
              HasSubstr("3 bytes follow the compressed payload's last frame"));
}

TEST_F(ReframedFile, PartsInOneFrameAreCorrupt) {
  std::vector<std::byte> whole = payload_[0];
  whole.insert(whole.end(), payload_[1].begin(), payload_[1].end());
  std::string frame(ZSTD_compressBound(whole.size()), '\0');
  frame.resize(
      ZSTD_compress(frame.data(), frame.size(), whole.data(), whole.size(), 3));
  EXPECT_THAT(readError(fileOf(frame, whole.size())),
              HasSubstr("frame 2 of 2 is missing"));
}

// ---------------------------------------------------------------------------
// Structural validation: each broken invariant is caught at load.
// ---------------------------------------------------------------------------

struct Breakage {
  const char *what;
  std::function<void(Executable &)> breakIt;
  const char *expected;
};

TEST(ExecutableIO, InconsistentExecutablesAreRejected) {
  const std::vector<Breakage> cases = {
      {"copy op range", [](Executable &e) { e.steps[1].b = 9; },
       "step 1 (Exchange) uses copy ops 0 to 9 (exclusive) but there are "
       "only 8"},
      {"vertex range", [](Executable &e) { e.steps[0].a = 1; },
       "step 0 (Compute) uses vertices 1 to 3"},
      {"compute set", [](Executable &e) { e.steps[0].c = 2; },
       "refers to compute set 2"},
      {"first field", [](Executable &e) { e.vertices[0].firstField = 4; },
       "vertex 0's fields start at 4 but there are only 3"},
      {"vertex class", [](Executable &e) { e.vertices[1].vertexClass = 2; },
       "vertex 1 refers to vertex class 2"},
      {"vertex tile", [](Executable &e) { e.vertices[1].tile = 4; },
       "vertex 1 refers to tile 4 but there are only 4"},
      {"codelet", [](Executable &e) { e.vertexClasses[1].codelet = 1; },
       "refers to codelet 1"},
      {"program entry", [](Executable &e) { e.programEntry[2] = 19; },
       "program 2 refers to first step 19 but there are only 19"},
      {"jump target", [](Executable &e) { e.steps[10].a = 100; },
       "step 10 (Jump) refers to target step 100"},
      {"counter", [](Executable &e) { e.steps[8].a = 2; },
       "step 8 (RepeatEnd) refers to counter 2 but there are only 2"},
      {"switch table", [](Executable &e) { e.switchTable[1].second = 30; },
       "switch entry 1 refers to target step 30"},
      {"switch range", [](Executable &e) { e.steps[11].b = 3; },
       "uses switch entries 0 to 3"},
      {"abort string", [](Executable &e) { e.steps[17].a = 4; },
       "step 17 (Abort) refers to string 4"},
      {"step name", [](Executable &e) { e.steps[3].name = 4; },
       "step 3 (StreamOut)'s name refers to string 4"},
      {"stream", [](Executable &e) { e.steps[2].a = 2; }, "refers to stream 2"},
      {"remote buffer", [](Executable &e) { e.steps[5].a = 1; },
       "refers to remote buffer 1"},
      {"print", [](Executable &e) { e.steps[13].a = 1; }, "refers to print 1"},
      {"predicate", [](Executable &e) { e.steps[16].addr = 1021; },
       "step 16 (JumpIfNonZero) reads a float at address 1021"},
      {"tile base count", [](Executable &e) { e.tileBase.pop_back(); },
       "it has 4 tile base offsets but its 2 IPUs of 2 tiles need 5"},
      {"tile base order", [](Executable &e) { e.tileBase[2] = 100; },
       "tile 2 starts at byte 100, before tile 1 at byte 256"},
      {"tile base start", [](Executable &e) { e.tileBase[0] = 8; },
       "its first tile starts at byte 8"},
      {"init region memory",
       [](Executable &e) { e.initRegions[1].addr = 1021; },
       "initial region 1 covers bytes 1021 + 4"},
      {"init region data",
       [](Executable &e) { e.initRegions[0].dataOffset = 5; },
       "initial region 0 takes bytes 5 + 8 of the initial data, which has "
       "12"},
      {"exchange dst", [](Executable &e) { e.copyOps[0].dst = 961; },
       "copy op 0 writes 1 elements of 64 bytes from address 961"},
      {"negative stride", [](Executable &e) { e.copyOps[1].dst = 7; },
       "copy op 1 writes 3 elements of 4 bytes from address 7 with stride -4"},
      {"huge stride", [](Executable &e) { e.copyOps[1].srcStride = INT64_MIN; },
       "copy op 1 reads"},
      {"stream in dst", [](Executable &e) { e.copyOps[2].dst = 1009; },
       "copy op 2 writes"},
      {"stream out src", [](Executable &e) { e.copyOps[3].src = 1017; },
       "copy op 3 reads"},
      {"host write", [](Executable &e) { e.copyOps[6].dst = 2000; },
       "copy op 6 writes"},
      {"host access range", [](Executable &e) { e.hostAccesses[0].numOps = 3; },
       "host access 0 (w) uses copy ops 6 to 9"},
      {"print op", [](Executable &e) { e.copyOps[7].src = 1 << 20; },
       "copy op 7 reads"},
      {"estimates", [](Executable &e) { e.estimates.pop_back(); },
       "it has 18 step estimates for 19 steps"},
      {"tile cycles", [](Executable &e) { e.estimates[2].numTileCycles = 3; },
       "the estimate of step 2 uses tile cycle entries 2 to 5"},
      {"tile cycle tile", [](Executable &e) { e.tileCycleTiles[0] = 9; },
       "tile cycle entry 0 refers to tile 9"},
      {"tile memory", [](Executable &e) { e.tileMemory.pop_back(); },
       "it has memory facts for 3 tiles but targets 4"},
      {"variable name", [](Executable &e) { e.variables[1].name = 2; },
       "variable 1 refers to name 2 but there are only 2"},
      {"variable shape", [](Executable &e) { e.variables[1].rank = 2; },
       "variable 1 uses shape entries 2 to 4 (exclusive) but there are only "
       "3"},
      {"replication", [](Executable &e) { e.replicationFactor = 0; },
       "replication factor 0"},
      {"clock", [](Executable &e) { e.clockHz = -1; }, "clock frequency"},
  };
  for (const Breakage &c : cases) {
    SCOPED_TRACE(c.what);
    Executable e = richExecutable();
    c.breakIt(e);
    const std::string message = decodeError(e);
    EXPECT_THAT(message, HasSubstr(c.expected));
    EXPECT_THAT(message, HasSubstr("test executable is corrupt: "));
  }
}

// Counts the engine allocates from (per replica, per counter) are checked
// against the data they imply and the documented ceilings, so a crafted file
// cannot make Engine's constructor or load exhaust the host.
TEST(ExecutableIO, CountsThatSizeEngineAllocationsAreBounded) {
  const std::vector<Breakage> cases = {
      {"replicas", [](Executable &e) { e.replicationFactor = 0xffffffff; },
       "it asks for 4294967295 replicas; the most Tessera runs is 1024"},
      {"counters", [](Executable &e) { e.numCounters = 0xffffffff; },
       "it has 4294967295 loop counters but only 19 steps"},
      {"remote buffer bytes",
       [](Executable &e) { e.remoteBuffers[0].numElements = kHuge; },
       "its 2 replicas need more than 1099511627776 bytes"},
      {"device bytes",
       [](Executable &e) {
         e.replicationFactor = 1024;
         for (std::size_t t = 1; t < e.tileBase.size(); ++t)
           e.tileBase[t] = t * (std::uint64_t{1} << 28);
       },
       "its 1024 replicas need 1099511676928 bytes of device and remote "
       "buffer memory; the most Tessera simulates is 1099511627776"},
      {"objects",
       [](Executable &e) {
         e.replicationFactor = 1024;
         e.streams.resize(70000);
       },
       "vertices, stream connections and remote buffers; the most Tessera "
       "makes is 67108864"},
      {"replica alignment", [](Executable &e) { e.tileBase.back() += 4; },
       "a replica's memory of 1028 bytes is not a multiple of 8"},
      {"copy op bytes",
       [](Executable &e) {
         e.copyOps[0].count = 100000;
         e.copyOps[0].srcStride = e.copyOps[0].dstStride = 0;
       },
       "copy op 0 writes 100000 elements of 64 bytes, 6400000 in all, more "
       "than the replica's 1024 bytes"},
  };
  for (const Breakage &c : cases) {
    SCOPED_TRACE(c.what);
    Executable e = richExecutable();
    c.breakIt(e);
    EXPECT_THAT(decodeError(e), HasSubstr(c.expected));
  }
}

TEST(ExecutableIO, HostSideOffsetsAreNotMemoryAddresses) {
  Executable e = richExecutable();
  e.copyOps[2].src = std::uint64_t{1} << 40; // stream in: host offset
  e.copyOps[5].dst = std::uint64_t{1} << 40; // remote out: slot offset
  e.copyOps[6].src = std::uint64_t{1} << 40; // host write: host offset
  expectSameExecutable(e, fromBytes(serialized(e)));
}

// ---------------------------------------------------------------------------
// Files.
// ---------------------------------------------------------------------------

class ExecutableFiles : public ::testing::Test {
protected:
  void SetUp() override {
    // The pid keeps concurrent runs (two build trees, say) apart.
    dir_ = fs::temp_directory_path() /
           ("tessera-exeio-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ExecutableFiles, SaveThenLoadRoundTripsAndLeavesNoTempFile) {
  const Executable original = richExecutable();
  const std::string path = (dir_ / "model.tsx").string();
  original.save(path);
  original.save(path); // replacing an existing file works too
  expectSameExecutable(original, Executable::load(path));
  EXPECT_EQ(
      std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(ExecutableFiles, LoadOfMissingFileNamesThePath) {
  const std::string path = (dir_ / "absent.tsx").string();
  try {
    Executable::load(path);
    FAIL() << "load did not throw";
  } catch (const SerializationError &e) {
    EXPECT_THAT(e.what(),
                HasSubstr("executable file \"" + path + "\" does not exist"));
  }
}

TEST_F(ExecutableFiles, LoadOfTruncatedFileNamesThePathAndSizes) {
  const std::string path = (dir_ / "cut.tsx").string();
  richExecutable().save(path);
  const auto size = fs::file_size(path);
  fs::resize_file(path, kExecutableHeaderBytes + 100);
  try {
    Executable::load(path);
    FAIL() << "load did not throw";
  } catch (const SerializationError &e) {
    EXPECT_THAT(e.what(),
                HasSubstr("executable file \"" + path +
                          "\" is truncated: the header says " +
                          std::to_string(size - kExecutableHeaderBytes) +
                          " compressed bytes but only 100 follow; recompile "
                          "and save it again"));
  }
}

TEST_F(ExecutableFiles, LoadRejectsBytesAfterTheExecutable) {
  const std::string path = (dir_ / "long.tsx").string();
  richExecutable().save(path);
  std::ofstream(path, std::ios::binary | std::ios::app) << "x";
  EXPECT_THROW(Executable::load(path), SerializationError);
}

// Executable::load reads a mapping of the file, not the stream: the same
// damage gets the same messages as from a stream.
TEST_F(ExecutableFiles, LoadOfAFileCutAnywhereSaysItIsTruncated) {
  const std::string bytes = serialized(richExecutable());
  const std::string path = (dir_ / "cut.tsx").string();
  for (std::size_t cut = 0; cut < bytes.size(); cut += 97) {
    SCOPED_TRACE(cut);
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        << bytes.substr(0, cut);
    try {
      Executable::load(path);
      ADD_FAILURE() << "load did not throw";
    } catch (const SerializationError &e) {
      EXPECT_THAT(e.what(), HasSubstr("executable file \"" + path + "\" is " +
                                      (cut == 0 ? "empty" : "truncated")));
    }
  }
}

TEST_F(ExecutableFiles, LoadOfAFileWithAFlippedPayloadByteIsCorrupt) {
  std::string bytes = serialized(richExecutable());
  bytes[bytes.size() - 5] ^= 0x04;
  const std::string path = (dir_ / "flipped.tsx").string();
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    Executable::load(path);
    FAIL() << "load did not throw";
  } catch (const SerializationError &e) {
    EXPECT_THAT(e.what(), HasSubstr("is corrupt: checksum mismatch"));
  }
}

// The executable cache's entries hold an executable after a header of
// their own: the reader maps the file and starts at an offset.
TEST_F(ExecutableFiles, ReadsAnExecutableAtAnOffsetAndSaysWhereItEnds) {
  const Executable original = richExecutable();
  const std::string bytes = serialized(original);
  const std::string prefix = "an entry header of 31 bytes....";
  const std::string path = (dir_ / "entry").string();
  std::ofstream(path, std::ios::binary) << prefix << bytes << "after";
  std::uint64_t end = 0;
  expectSameExecutable(
      original, detail::readExecutableFile(path, prefix.size(), "entry", end));
  EXPECT_EQ(end, prefix.size() + bytes.size());
  EXPECT_THROW(
      detail::readExecutableFile(path, prefix.size() + 1, "entry", end),
      SerializationError);
  EXPECT_THROW(detail::readExecutableFile(path, 1 << 20, "entry", end),
               SerializationError);
}

TEST_F(ExecutableFiles, LoadOfAFolderSaysItIsNotAFile) {
  EXPECT_THROW(Executable::load(dir_.string()), SerializationError);
}

TEST_F(ExecutableFiles, SaveIntoMissingFolderThrows) {
  const std::string path = (dir_ / "no" / "such" / "x.tsx").string();
  try {
    richExecutable().save(path);
    FAIL() << "save did not throw";
  } catch (const SerializationError &e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot write executable file \"" + path));
  }
}

} // namespace
} // namespace tessera
