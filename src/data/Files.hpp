// Reading data files that may be gzip-compressed.
#pragma once

#include <cstdint>
#include <string>

namespace tessera::data::detail {

/// The most bytes a data file (IDX, CSV) may hold once decompressed: 16 GiB.
/// The readers hold the whole decompressed file and the tensors parsed from
/// it in memory at once, so a larger file cannot be read on the hosts
/// Tessera runs on; a small gzip file that inflates past this is a
/// decompression bomb or not a data file. Sizes a file's header declares
/// (IDX dimensions) are checked against the bytes actually read, which are
/// at most this.
inline constexpr std::uint64_t kMaxDataFileBytes = std::uint64_t{16} << 30;

/// The whole content of \p path, decompressed if it is gzip (zlib reads
/// plain files unchanged). \p what names the kind of file in errors
/// ("IDX file", "CSV file"): missing, not a regular file (a folder, a FIFO,
/// a device), unreadable, corrupt, truncated (a gzip stream that ends before
/// its trailer) or larger than kMaxDataFileBytes.
std::string readMaybeGzip(const std::string &path, const std::string &what);

} // namespace tessera::data::detail
