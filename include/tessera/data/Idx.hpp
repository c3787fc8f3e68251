/// \file
/// IDX files (the MNIST and Fashion-MNIST format), plain or gzip-compressed:
/// a magic number giving the element type and rank, the dimensions, then
/// the elements in row-major order, big-endian.
#pragma once

#include "tessera/data/HostTensor.hpp"
#include "tessera/support/Type.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::data {

/// The most element bytes an IDX file may declare: 16 GiB, the most any
/// data file may hold once decompressed (the reader keeps the whole file and
/// the tensor in memory). A header's dimensions are multiplied with overflow
/// checks and the product is checked against this and against the bytes
/// that actually follow the header before anything is allocated.
inline constexpr std::uint64_t kMaxIdxBytes = std::uint64_t{16} << 30;

/// An IDX array: its shape and its elements converted to float.
struct IdxArray {
  std::vector<std::size_t> shape;
  std::vector<float> values;
  std::size_t numElements() const { return values.size(); }
};

/// Reads an IDX file (".gz" or not). Errors (SerializationError) name the
/// file and what is wrong: missing, not a regular file, truncated (an IDX
/// header promising more than follows, or a cut gzip stream), a bad magic
/// number, a size past kMaxIdxBytes.
IdxArray readIdx(const std::string &path);

/// Reads an IDX file (".gz" or not) keeping its element type: unsigned
/// bytes as UNSIGNED_CHAR, signed bytes as SIGNED_CHAR, shorts as SHORT,
/// ints as INT, floats as FLOAT; doubles become FLOAT. Errors as readIdx.
HostTensor readIdxTensor(const std::string &path);

/// Where Debian's dataset-fashion-mnist package installs the data set
/// (TESSERA_FASHION_MNIST_DIR overrides it).
std::string fashionMnistDirectory();

/// The four Fashion-MNIST arrays, images scaled to [0, 1]. A missing file is
/// an error naming the Debian package that provides it.
struct Mnist {
  IdxArray trainImages, trainLabels, testImages, testLabels;
};
Mnist loadFashionMnist(const std::string &directory = fashionMnistDirectory());

} // namespace tessera::data
