/// \file
/// The file format of a serialised Executable, and the pieces of its reader
/// and writer that tools and tests use directly.
///
/// A file is a 48-byte header followed by the zstd-compressed payload. The
/// header, all integers little-endian:
///
/// | offset | bytes | field                                              |
/// |-------:|------:|----------------------------------------------------|
/// |      0 |     8 | magic "TESSERAX"                                   |
/// |      8 |     4 | format version (kExecutableFormatVersion)          |
/// |     12 |     4 | flags (none defined: must be 0)                    |
/// |     16 |     8 | payload size, uncompressed                         |
/// |     24 |     8 | payload size, compressed                           |
/// |     32 |     8 | xxhash64 (seed 0) of the compressed payload        |
/// |     40 |     8 | xxhash64 (seed 0) of header bytes 0..39            |
///
/// Every version keeps the magic and the version field where they are, so a
/// reader can always say which version wrote a file. The payload is
/// kExecutablePayloadParts parts, each compressed to one zstd frame that
/// records its size, the frames back to back; a reader decodes the parts on
/// threads of their own. Together the parts encode every field of
/// Executable but `registry`: the first part the target, code (vertex
/// tables excepted), host interface, estimates and variables, then the
/// memory (tileBase, initRegions, initData); the second the vertex classes,
/// codelets, vertices, fields, spans and vertex state. Unsigned integers
/// wider than a byte are LEB128 varints (7 bits a byte, low bits first),
/// signed ones zigzag-mapped first; enums and bools are one byte; doubles
/// their IEEE bits, 8 bytes little-endian; strings and vectors a varint
/// count followed by their elements; structs field by field. The elements of
/// vectors of u32, u64, FieldValue, VertexInstance, CopyOp and VariableInfo
/// are delta coded against the element before (a default element before the
/// first): a u32 or u64, a FieldValue's addr, a vertex's tile and firstField
/// are stored as the zigzag-mapped difference (modulo their width) from the
/// previous element's; a CopyOp's src and dst as the difference from the
/// previous op's src and dst plus its count times elemBytes; a VariableInfo's
/// shapeBegin as the difference from the previous one's shapeBegin plus its
/// rank.
#pragma once

#include "tessera/compiler/Executable.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

namespace tessera {

/// The payload encoding and header layout this Tessera writes and reads.
/// Bump it whenever either changes, Executable's fields included.
inline constexpr std::uint32_t kExecutableFormatVersion = 6;

/// Parts of the payload, each compressed to a frame of its own.
inline constexpr int kExecutablePayloadParts = 2;

/// Bytes of the file header that precedes the compressed payload.
inline constexpr std::size_t kExecutableHeaderBytes = 48;

/// Ceilings a file is checked against before the reader or the engine
/// allocates what the file says to: a crafted file (checksums recomputed)
/// is a SerializationError, not an exhausted host.
///
/// The uncompressed payload: 4 GiB.
inline constexpr std::uint64_t kMaxExecutablePayloadBytes = std::uint64_t{4}
                                                            << 30;
/// The most a zstd frame can expand its input: a block decompresses to at
/// most 128 KiB and takes at least 4 bytes (a run-length block). A header
/// whose payload size exceeds the compressed size times this is corrupt.
inline constexpr std::uint64_t kMaxZstdExpansion =
    (std::uint64_t{128} << 10) / 4;
/// Replicas (Executable::replicationFactor).
inline constexpr std::uint32_t kMaxExecutableReplicas = 1024;
/// Host bytes of the simulated memory of all replicas together, remote
/// buffers included: 1 TiB.
inline constexpr std::uint64_t kMaxExecutableDeviceBytes = std::uint64_t{1}
                                                           << 40;
/// Objects the engine makes once per replica (vertices, stream connections
/// and remote buffers), times the replicas: 2^26.
inline constexpr std::uint64_t kMaxReplicatedObjects = std::uint64_t{1} << 26;
/// Replica memory is a multiple of this many bytes, so that every replica
/// starts where the widest element type (8 bytes) may be read.
inline constexpr std::uint64_t kReplicaAlignment = 8;

namespace detail {

/// The header fields a writer chooses; the magic and the header checksum are
/// filled in by encodeExecutableHeader.
struct ExecutableFileHeader {
  std::uint32_t version = kExecutableFormatVersion;
  std::uint32_t flags = 0;
  std::uint64_t payloadBytes = 0;    ///< uncompressed
  std::uint64_t compressedBytes = 0; ///< bytes after the header
  std::uint64_t compressedHash = 0;  ///< xxhash64 of those bytes
};

/// The 48 header bytes for \p header, magic and header checksum included.
std::array<std::byte, kExecutableHeaderBytes>
encodeExecutableHeader(const ExecutableFileHeader &header);

/// The uncompressed payload, part by part.
using ExecutablePayload =
    std::array<std::vector<std::byte>, kExecutablePayloadParts>;

/// The uncompressed payload of \p exe.
ExecutablePayload encodeExecutablePayload(const Executable &exe);

/// Decodes a payload and checks the result with validateExecutable. \p what
/// names the source in messages (`executable file "x.tsx"`).
Executable decodeExecutablePayload(const ExecutablePayload &payload,
                                   const std::string &what);

/// Writes header and compressed payload; \p version is a parameter so tests
/// can write files that claim another version.
void writeExecutableFile(std::ostream &out, const ExecutablePayload &payload,
                         std::uint32_t version = kExecutableFormatVersion);

/// Reads one executable from \p in; \p what names the source in messages.
Executable readExecutableFile(std::istream &in, const std::string &what);

/// Reads the executable that starts \p offset bytes into file \p path, from
/// a read-only mapping of the file where the system allows one (else as a
/// stream), and sets \p end to the offset of the byte after it.
Executable readExecutableFile(const std::string &path, std::uint64_t offset,
                              const std::string &what, std::uint64_t &end);

/// Throws SerializationError unless every index and address range in \p exe
/// stays inside the tables and memory it refers to, and what the engine
/// allocates per replica stays under the ceilings above (numCounters no
/// more than the steps, which each use at most one), so that an engine can
/// run the executable without checking them again. Vertex fields themselves
/// are checked later, by Engine::load, once their vertex classes (which say
/// what each field's value indexes and its element size) are resolved.
void validateExecutable(const Executable &exe, const std::string &what);

} // namespace detail
} // namespace tessera
