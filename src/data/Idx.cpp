#include "tessera/data/Idx.hpp"

#include "Files.hpp"
#include "tessera/data/Dataset.hpp"
#include "tessera/support/Convert.hpp"
#include "tessera/support/Error.hpp"

#include <bit>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace tessera::data {
namespace {

std::uint32_t bigEndian32(const unsigned char *p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) |
         (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]);
}

struct IdxElementType {
  std::size_t fileBytes; // bytes of one element in the file
  Type type;             // what it is read as
};

IdxElementType idxElementType(unsigned code, const std::string &path) {
  switch (code) {
  case 0x08:
    return {1, Type::UNSIGNED_CHAR};
  case 0x09:
    return {1, Type::SIGNED_CHAR};
  case 0x0B:
    return {2, Type::SHORT};
  case 0x0C:
    return {4, Type::INT};
  case 0x0D:
    return {4, Type::FLOAT};
  case 0x0E:
    return {8, Type::FLOAT};
  }
  throw SerializationError("IDX file \"" + path +
                           "\" has an unknown element type code " +
                           std::to_string(code) + "; it is not an IDX file");
}

// IDX stores elements big-endian; the host is little-endian (x86, Arm).
void decodeElements(unsigned code, const unsigned char *in, void *out,
                    std::size_t count) {
  static_assert(std::endian::native == std::endian::little);
  switch (code) {
  case 0x08:
  case 0x09:
    if (count > 0) // an empty tensor's data() may be null
      std::memcpy(out, in, count);
    return;
  case 0x0B:
    for (std::size_t i = 0; i < count; ++i)
      static_cast<std::int16_t *>(out)[i] =
          static_cast<std::int16_t>((in[2 * i] << 8) | in[2 * i + 1]);
    return;
  case 0x0C:
  case 0x0D:
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint32_t bits = bigEndian32(in + 4 * i);
      std::memcpy(static_cast<std::byte *>(out) + 4 * i, &bits, 4);
    }
    return;
  default:
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint64_t bits =
          (std::uint64_t(bigEndian32(in + 8 * i)) << 32) |
          bigEndian32(in + 8 * i + 4);
      double d;
      std::memcpy(&d, &bits, 8);
      static_cast<float *>(out)[i] = static_cast<float>(d);
    }
  }
}

// The path of one Fashion-MNIST file, which must exist.
std::string fashionMnistFile(const std::string &directory, const char *name) {
  const std::string path = directory + "/" + name;
  if (!std::filesystem::exists(path))
    throw Error("Fashion-MNIST file \"" + path +
                "\" is missing; install Debian's dataset-fashion-mnist "
                "package (apt-get install dataset-fashion-mnist) or set "
                "TESSERA_FASHION_MNIST_DIR to a folder holding it");
  return path;
}

} // namespace

HostTensor readIdxTensor(const std::string &path) {
  const std::string data = detail::readMaybeGzip(path, "IDX file");
  const auto *bytes = reinterpret_cast<const unsigned char *>(data.data());
  if (data.size() < 4 || bytes[0] != 0 || bytes[1] != 0)
    throw SerializationError("IDX file \"" + path +
                             "\" does not start with an IDX magic number; it "
                             "is not an IDX file");
  const unsigned code = bytes[2], rank = bytes[3];
  const IdxElementType element = idxElementType(code, path);
  const std::size_t header = 4 + 4 * std::size_t(rank);
  if (data.size() < header)
    throw SerializationError(
        "IDX file \"" + path + "\" is truncated: its header needs " +
        std::to_string(header) + " bytes but the file has " +
        std::to_string(data.size()));
  Shape shape;
  // Every product is checked before it is used: dimensions up to 2^32 - 1
  // each overflow 64 bits after two of them, and a wrapped count would
  // allocate a small tensor and decode past its end.
  const std::size_t available = data.size() - header;
  std::uint64_t count = 1;
  bool tooLarge = false;
  for (unsigned d = 0; d < rank; ++d) {
    shape.push_back(bigEndian32(bytes + 4 + 4 * d));
    tooLarge = tooLarge || __builtin_mul_overflow(count, shape.back(), &count);
  }
  std::uint64_t payload = 0;
  tooLarge = tooLarge ||
             __builtin_mul_overflow(count, element.fileBytes, &payload) ||
             payload > kMaxIdxBytes;
  if (tooLarge || available < payload)
    throw SerializationError(
        "IDX file \"" + path + "\" is truncated or corrupt: its header " +
        "promises a " + shapeString(shape) + " array (" +
        (tooLarge ? "more than " + std::to_string(kMaxIdxBytes >> 30) +
                        " GiB, the most an IDX file may hold"
                  : std::to_string(count) + " elements, " +
                        std::to_string(payload) + " bytes") +
        ") but only " + std::to_string(available) + " bytes follow its header");
  HostTensor t;
  t.reset(element.type, shape);
  decodeElements(code, bytes + header, t.data(), count);
  return t;
}

IdxArray readIdx(const std::string &path) {
  const HostTensor t = readIdxTensor(path);
  IdxArray a;
  a.shape = t.shape();
  a.values.resize(t.numElements());
  convertElements(t.type(), t.data(), Type::FLOAT, a.values.data(),
                  t.numElements());
  return a;
}

std::string fashionMnistDirectory() {
  if (const char *d = std::getenv("TESSERA_FASHION_MNIST_DIR"); d && *d)
    return d;
  return "/usr/share/datasets/fashion-mnist";
}

Mnist loadFashionMnist(const std::string &directory) {
  auto load = [&](const char *name) {
    return readIdx(fashionMnistFile(directory, name));
  };
  Mnist m{load("train-images-idx3-ubyte.gz"),
          load("train-labels-idx1-ubyte.gz"), load("t10k-images-idx3-ubyte.gz"),
          load("t10k-labels-idx1-ubyte.gz")};
  for (auto *images : {&m.trainImages, &m.testImages})
    for (float &v : images->values)
      v /= 255.0f;
  return m;
}

Dataset Dataset::idx(const std::string &imagesPath,
                     const std::string &labelsPath, const IdxOptions &options) {
  HostTensor images = readIdxTensor(imagesPath);
  HostTensor labels = readIdxTensor(labelsPath);
  if (images.rank() == 0 || labels.rank() != 1)
    throw ShapeError("idx: the images file \"" + imagesPath + "\" holds " +
                     shapeString(images.shape()) + " and the labels file \"" +
                     labelsPath + "\" holds " + shapeString(labels.shape()) +
                     "; images need at least one dimension and labels "
                     "exactly one");
  if (images.dim(0) != labels.dim(0))
    throw ShapeError("idx: the images file \"" + imagesPath + "\" holds " +
                     std::to_string(images.dim(0)) +
                     " images but the labels file \"" + labelsPath +
                     "\" holds " + std::to_string(labels.dim(0)) +
                     " labels; pair each images file with its own labels");
  const std::size_t count = images.dim(0);
  Shape imageShape(images.shape().begin() + 1, images.shape().end());
  if (!options.imageShape.empty()) {
    if (numElements(options.imageShape) != numElements(imageShape))
      throw ShapeError("idx: an image of \"" + imagesPath + "\" is " +
                       shapeString(imageShape) + " (" +
                       std::to_string(numElements(imageShape)) +
                       " elements) but imageShape " +
                       shapeString(options.imageShape) + " holds " +
                       std::to_string(numElements(options.imageShape)) +
                       "; give a shape with the same element count");
    imageShape = options.imageShape;
  }
  Shape shape{count};
  shape.insert(shape.end(), imageShape.begin(), imageShape.end());
  if (options.normalize) {
    HostTensor scaled = images.cast(Type::FLOAT);
    if (images.type() == Type::UNSIGNED_CHAR)
      for (float &v : scaled.values<float>())
        v /= 255.0f;
    images = std::move(scaled);
  }
  images.reshape(std::move(shape));
  std::vector<HostTensor> tensors;
  tensors.push_back(std::move(images));
  tensors.push_back(labels.cast(options.labelType));
  return fromTensors(std::move(tensors), {"image", "label"});
}

Dataset fashionMnist(Split split, const FashionMnistOptions &options) {
  const bool train = split == Split::Train;
  const std::string images =
      fashionMnistFile(options.directory, train ? "train-images-idx3-ubyte.gz"
                                                : "t10k-images-idx3-ubyte.gz");
  const std::string labels =
      fashionMnistFile(options.directory, train ? "train-labels-idx1-ubyte.gz"
                                                : "t10k-labels-idx1-ubyte.gz");
  IdxOptions idx;
  idx.imageShape = options.imageShape;
  return Dataset::idx(images, labels, idx);
}

} // namespace tessera::data
