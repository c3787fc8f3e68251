#include "Files.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"

#include <zlib.h>

#include <algorithm>
#include <memory>

#include <unistd.h>

namespace tessera::data::detail {

namespace {

// zlib reports a stream that ends before its trailer as Z_BUF_ERROR and
// still returns the bytes it inflated, so only gzerror after the last read
// (and gzclose) tell a truncated file from a whole one.
[[noreturn]] void throwGzipError(const std::string &what,
                                 const std::string &path, int err,
                                 const char *message) {
  if (err == Z_BUF_ERROR)
    throw SerializationError(
        what + " \"" + path +
        "\" is truncated: its gzip stream ends before its end marker (" +
        message + "); copy or download the file again");
  throw SerializationError(what + " \"" + path + "\" is corrupt (" + message +
                           "); copy or download the file again");
}

} // namespace

std::string readMaybeGzip(const std::string &path, const std::string &what) {
  const int fd = openRegularFile(path, what);
  gzFile f = gzdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    throw SerializationError("cannot open " + what + " \"" + path +
                             "\": out of memory for the decompressor");
  }
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(f, gzclose);
  std::string data;
  std::size_t size = 0;
  for (;;) {
    if (data.size() - size < (1 << 16))
      data.resize(std::max<std::size_t>(2 * data.size(), 1 << 20));
    // gzread takes an unsigned count and returns an int.
    const std::size_t chunk =
        std::min<std::size_t>(data.size() - size, 1 << 30);
    const int n = gzread(f, data.data() + size, static_cast<unsigned>(chunk));
    int err = Z_OK;
    const char *message = gzerror(f, &err);
    if (n < 0 || (err != Z_OK && err != Z_STREAM_END))
      throwGzipError(what, path, err, message);
    if (n == 0)
      break;
    size += static_cast<std::size_t>(n);
    if (size > kMaxDataFileBytes)
      throw SerializationError(
          what + " \"" + path + "\" holds more than " +
          std::to_string(kMaxDataFileBytes >> 30) +
          " GiB once decompressed, the most a data file may hold; split it "
          "into smaller files");
  }
  data.resize(size);
  const int closed = gzclose(closer.release());
  if (closed != Z_OK)
    throwGzipError(what, path, closed, "closing the stream failed");
  return data;
}

} // namespace tessera::data::detail
