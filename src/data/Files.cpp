#include "Files.hpp"

#include "tessera/support/Error.hpp"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>

namespace tessera::data::detail {

std::string readMaybeGzip(const std::string &path, const std::string &what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw Error(what + " \"" + path + "\" does not exist");
  if (std::filesystem::is_directory(path, ec))
    throw Error(what + " \"" + path + "\" is a folder, not a file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw Error("cannot open " + what + " \"" + path + "\"");
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
    if (n < 0)
      throw SerializationError(what + " \"" + path +
                               "\" is corrupt: " + gzerror(f, nullptr));
    if (n == 0)
      break;
    size += static_cast<std::size_t>(n);
  }
  data.resize(size);
  return data;
}

} // namespace tessera::data::detail
