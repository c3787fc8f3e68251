// IDX reading: plain and gzip files, the element types, and bad files.
#include "../support/SpecialFiles.hpp"

#include "tessera/data/Idx.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

using namespace tessera;
using ::testing::HasSubstr;

namespace {

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("tessera-idx-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

std::string idxBytes() {
  // 2 x 3 unsigned bytes.
  std::string s{0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3};
  for (int c : {1, 2, 3, 4, 5, 255})
    s.push_back(static_cast<char>(c));
  return s;
}

// The SerializationError reading `bytes` as an IDX file gives.
std::string idxError(const std::string &bytes) {
  const std::string p = tempPath("hostile");
  std::ofstream(p, std::ios::binary) << bytes;
  std::string msg = "no error";
  try {
    data::readIdxTensor(p);
  } catch (const SerializationError &e) {
    msg = e.what();
  }
  std::filesystem::remove(p);
  return msg;
}

} // namespace

TEST(Idx, HeaderWhoseSizeOverflowsIsAnErrorBeforeAllocating) {
  // INT elements, shape [2^31, 2^31]: 2^62 elements of 4 bytes wrap to 0.
  const std::string wraps{0, 0, 0x0c, 2, '\x80', 0, 0, 0, '\x80', 0, 0, 0};
  EXPECT_THAT(idxError(wraps), HasSubstr("more than 16 GiB"));
  // Bytes, shape [2^32 - 1] x 3: the element count itself overflows.
  std::string count{0, 0, 0x08, 3};
  count += std::string(12, '\xff') + "abcdef";
  EXPECT_THAT(idxError(count), HasSubstr("more than 16 GiB"));
  // A size within the ceiling but past the data: the bytes that follow.
  const std::string large{0, 0, 0x08, 1, 0x10, 0, 0, 0, 1, 2, 3};
  EXPECT_THAT(idxError(large),
              HasSubstr("268435456 elements, 268435456 bytes) but only 3"));
}

TEST(Idx, EmptyArrayReadsAsAnEmptyTensor) {
  const std::string p = tempPath("empty");
  std::ofstream(p, std::ios::binary)
      << std::string{0, 0, 0x08, 2, 0, 0, 0, 0, 0, 0, 0, 5};
  const data::HostTensor t = data::readIdxTensor(p);
  EXPECT_EQ(t.shape(), (data::Shape{0, 5}));
  EXPECT_EQ(t.numElements(), 0u);
  std::filesystem::remove(p);
}

TEST(Idx, FifoIsAnErrorInsteadOfAWait) {
  test::Fifo fifo("images.idx.gz");
  const std::string msg = test::errorOrBlocked(
      fifo.path(), [&] { data::readIdxTensor(fifo.path()); });
  EXPECT_THAT(msg, HasSubstr("IDX file \"" + fifo.path() +
                             "\" is a FIFO (named pipe), not a regular file"));
}

TEST(Idx, ReadsPlainAndGzipFiles) {
  const std::string plain = tempPath("plain"), gz = tempPath("data.gz");
  std::ofstream(plain, std::ios::binary) << idxBytes();
  gzFile f = gzopen(gz.c_str(), "wb");
  const std::string b = idxBytes();
  gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
  gzclose(f);
  for (const std::string &p : {plain, gz}) {
    data::IdxArray a = data::readIdx(p);
    EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(a.values, (std::vector<float>{1, 2, 3, 4, 5, 255}));
    std::filesystem::remove(p);
  }
}

TEST(Idx, TruncatedAndForeignFilesAreErrors) {
  const std::string p = tempPath("bad");
  std::ofstream(p, std::ios::binary) << idxBytes().substr(0, 14);
  try {
    data::readIdx(p);
    FAIL();
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("truncated"));
    EXPECT_THAT(e.what(), HasSubstr("6 elements"));
  }
  std::ofstream(p, std::ios::binary) << "hello world";
  EXPECT_THROW(data::readIdx(p), Error);
  std::filesystem::remove(p);
}

TEST(Idx, MissingDatasetNamesTheDebianPackage) {
  try {
    data::loadFashionMnist("/nonexistent-folder");
    FAIL();
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("dataset-fashion-mnist"));
  }
}

TEST(Idx, FashionMnistFromDebianHasItsKnownShape) {
  if (!std::filesystem::exists(data::fashionMnistDirectory()))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  data::IdxArray labels = data::readIdx(data::fashionMnistDirectory() +
                                        "/t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(labels.shape, std::vector<std::size_t>{10000});
}
