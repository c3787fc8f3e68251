// The payload codec of executable files: how Executable's fields become
// bytes and back (the layout is documented in
// tessera/compiler/ExecutableFormat.hpp). Shared by ExecutableIO.cpp only.
#pragma once

#include "tessera/compiler/ExecutableFormat.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tessera::detail {

/// `what is corrupt: problem; recompile and save it again`.
std::string corruptExecutableMessage(const std::string &what,
                                     const std::string &problem);

/// Decodes part \p part of the payload from its uncompressed \p bytes into
/// the fields of \p exe that the part holds, without validating them.
/// \p origin is where the part starts in the payload, for messages.
void decodePayloadPart(int part, std::span<const std::byte> bytes,
                       std::uint64_t origin, Executable &exe,
                       const std::string &what);

/// The same from the zstd frame \p frame (which nothing may follow), whose
/// content size the caller has checked to be \p claimed. The part is
/// decompressed in small windows as it is decoded, never held whole.
void decodeCompressedPayloadPart(int part, std::span<const std::byte> frame,
                                 std::uint64_t claimed, std::uint64_t origin,
                                 Executable &exe, const std::string &what);

} // namespace tessera::detail
