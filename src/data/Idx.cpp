#include "tessera/data/Idx.hpp"

#include "tessera/support/Error.hpp"

#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

namespace tessera::data {
namespace {

// The whole (decompressed) file. gzread reads plain files as they are, so
// one path serves both.
std::string readAll(const std::string &path) {
  if (!std::filesystem::exists(path))
    throw Error("IDX file \"" + path + "\" does not exist");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw Error("cannot open IDX file \"" + path + "\"");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(f, gzclose);
  std::string data;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof buf);
    if (n < 0)
      throw Error("IDX file \"" + path + "\" is corrupt: " +
                  gzerror(f, nullptr));
    if (n == 0)
      break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  return data;
}

std::uint32_t bigEndian32(const unsigned char *p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) |
         (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]);
}

std::size_t elementBytes(unsigned code, const std::string &path) {
  switch (code) {
  case 0x08: // unsigned byte
  case 0x09: // signed byte
    return 1;
  case 0x0B: // short
    return 2;
  case 0x0C: // int
  case 0x0D: // float
    return 4;
  case 0x0E: // double
    return 8;
  }
  throw Error("IDX file \"" + path + "\" has an unknown element type code " +
              std::to_string(code) + "; it is not an IDX file");
}

float element(unsigned code, const unsigned char *p) {
  switch (code) {
  case 0x08:
    return static_cast<float>(p[0]);
  case 0x09:
    return static_cast<float>(static_cast<signed char>(p[0]));
  case 0x0B:
    return static_cast<float>(static_cast<std::int16_t>((p[0] << 8) | p[1]));
  case 0x0C:
    return static_cast<float>(static_cast<std::int32_t>(bigEndian32(p)));
  case 0x0D: {
    const std::uint32_t bits = bigEndian32(p);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  default: {
    const std::uint64_t bits =
        (std::uint64_t(bigEndian32(p)) << 32) | bigEndian32(p + 4);
    double d;
    std::memcpy(&d, &bits, 8);
    return static_cast<float>(d);
  }
  }
}

} // namespace

IdxArray readIdx(const std::string &path) {
  const std::string data = readAll(path);
  const auto *bytes = reinterpret_cast<const unsigned char *>(data.data());
  if (data.size() < 4 || bytes[0] != 0 || bytes[1] != 0)
    throw Error("IDX file \"" + path +
                "\" does not start with an IDX magic number; it is not an "
                "IDX file");
  const unsigned code = bytes[2], rank = bytes[3];
  const std::size_t size = elementBytes(code, path);
  const std::size_t header = 4 + 4 * std::size_t(rank);
  if (data.size() < header)
    throw Error("IDX file \"" + path + "\" is truncated: its header needs " +
                std::to_string(header) + " bytes but the file has " +
                std::to_string(data.size()));
  IdxArray a;
  std::size_t count = 1;
  for (unsigned d = 0; d < rank; ++d) {
    a.shape.push_back(bigEndian32(bytes + 4 + 4 * d));
    count *= a.shape.back();
  }
  if (data.size() - header < count * size)
    throw Error("IDX file \"" + path + "\" is truncated: its header promises " +
                std::to_string(count) + " elements (" +
                std::to_string(count * size) + " bytes) but only " +
                std::to_string(data.size() - header) + " bytes follow");
  a.values.resize(count);
  for (std::size_t i = 0; i < count; ++i)
    a.values[i] = element(code, bytes + header + i * size);
  return a;
}

std::string fashionMnistDirectory() {
  if (const char *d = std::getenv("TESSERA_FASHION_MNIST_DIR"); d && *d)
    return d;
  return "/usr/share/datasets/fashion-mnist";
}

Mnist loadFashionMnist(const std::string &directory) {
  auto load = [&](const char *name) {
    const std::string path = directory + "/" + name;
    if (!std::filesystem::exists(path))
      throw Error("Fashion-MNIST file \"" + path +
                  "\" is missing; install Debian's dataset-fashion-mnist "
                  "package (apt-get install dataset-fashion-mnist) or set "
                  "TESSERA_FASHION_MNIST_DIR to a folder holding it");
    return readIdx(path);
  };
  Mnist m{load("train-images-idx3-ubyte.gz"), load("train-labels-idx1-ubyte.gz"),
          load("t10k-images-idx3-ubyte.gz"), load("t10k-labels-idx1-ubyte.gz")};
  for (auto *images : {&m.trainImages, &m.testImages})
    for (float &v : images->values)
      v /= 255.0f;
  return m;
}

} // namespace tessera::data
