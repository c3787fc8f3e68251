// Reading data files that may be gzip-compressed.
#pragma once

#include <string>

namespace tessera::data::detail {

/// The whole content of \p path, decompressed if it is gzip (zlib reads
/// plain files unchanged). \p what names the kind of file in errors
/// ("IDX file", "CSV file"): missing, unreadable or corrupt.
std::string readMaybeGzip(const std::string &path, const std::string &what);

} // namespace tessera::data::detail
