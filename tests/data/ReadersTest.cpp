// File readers: CSV (header handling, columns, errors with line and
// column), IDX image/label pairs, and Fashion-MNIST from Debian's package.
#include "DataTestUtil.hpp"

#include "../support/SpecialFiles.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <iterator>

using namespace tessera;
using namespace tessera::data;
using namespace tessera::data::test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

// A file removed when the test ends.
class TempFile {
public:
  TempFile(const std::string &name, const std::string &content)
      : path_(tempPath(name)) {
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

std::string csvError(const std::string &content, const CsvOptions &options) {
  TempFile f("bad.csv", content);
  try {
    Dataset::csv(f.path(), options);
  } catch (const SerializationError &e) {
    return e.what();
  }
  return "no error";
}

void writeGzip(const std::string &path, const std::string &bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

// An IDX header: element type code, then the dimensions.
std::string idxHeader(unsigned char code, std::vector<unsigned> dims) {
  std::string s{0, 0, static_cast<char>(code), static_cast<char>(dims.size())};
  for (unsigned d : dims)
    for (int shift : {24, 16, 8, 0})
      s.push_back(static_cast<char>((d >> shift) & 0xff));
  return s;
}

} // namespace

TEST(Csv, ReadsFeaturesAndALabelColumn) {
  TempFile f("iris.csv", "sepal, petal ,\"species\"\r\n"
                         "5.1,1.4,0\r\n"
                         "\n"
                         "  4.9 , \"1.5\",2\r\n"
                         "+6e0,-2,1\n");
  CsvOptions options;
  options.labelColumn = "species";
  Dataset ds = Dataset::csv(f.path(), options);
  EXPECT_EQ(ds.spec().toString(), "(features: float [2], label: int [])");
  EXPECT_EQ(ds.cardinality(), Cardinality::finite(3));
  Iterator it = ds.iterator();
  Element e;
  ASSERT_TRUE(it.next(e));
  EXPECT_THAT(e[0].values<float>(), ElementsAre(5.1f, 1.4f));
  EXPECT_EQ(e[1].item<int>(), 0);
  ASSERT_TRUE(it.next(e));
  EXPECT_THAT(e[0].values<float>(), ElementsAre(4.9f, 1.5f));
  EXPECT_EQ(e[1].item<int>(), 2);
  ASSERT_TRUE(it.next(e));
  EXPECT_THAT(e[0].values<float>(), ElementsAre(6.0f, -2.0f));
  EXPECT_FALSE(it.next(e));
}

TEST(Csv, SelectsColumnsAndReadsFilesWithoutHeaderOrCompressed) {
  TempFile f("cols.csv", "a;b;c\n1;2;3\n4;5;6\n");
  CsvOptions options;
  options.delimiter = ';';
  options.featureColumns = {"c", "a"};
  options.featureType = INT;
  Dataset ds = Dataset::csv(f.path(), options);
  EXPECT_EQ(ds.spec().size(), 1u);
  EXPECT_THAT(drainInts(ds), ElementsAre(3, 1, 6, 4));

  TempFile plain("plain.csv", "1,2,9\n3,4,8\n");
  CsvOptions noHeader;
  noHeader.header = false;
  noHeader.labelColumn = "2";
  Dataset unnamed = Dataset::csv(plain.path(), noHeader);
  EXPECT_EQ(unnamed.cardinality(), Cardinality::finite(2));
  Iterator it = unnamed.iterator();
  EXPECT_EQ(it.next()->components[1].item<int>(), 9);

  const std::string gz = tempPath("data.csv.gz");
  writeGzip(gz, "x,y\n1,2\n");
  EXPECT_EQ(Dataset::csv(gz).cardinality(), Cardinality::finite(1));
  std::filesystem::remove(gz);

  TempFile headerOnly("header.csv", "x,y\n");
  Dataset none = Dataset::csv(headerOnly.path());
  EXPECT_EQ(none.cardinality(), Cardinality::finite(0));
  EXPECT_EQ(none.spec()[0].shape, Shape{2});
}

TEST(Csv, ABadFieldNamesItsLineAndColumn) {
  CsvOptions options;
  options.labelColumn = "label";
  EXPECT_THAT(csvError("x,y,label\n1,2,0\n3,abc,1\n", options),
              HasSubstr("line 3, column 2 (\"y\"): \"abc\" is not a number"));
  EXPECT_THAT(csvError("x,y,label\n1,,0\n", options),
              HasSubstr("line 2, column 2 (\"y\"): is empty"));
  EXPECT_THAT(csvError("x,y,label\n1,2,0.5\n", options),
              HasSubstr("line 2, column 3 (\"label\"): \"0.5\" is not an "
                        "integer, but the column is read as int"));
  EXPECT_THAT(csvError("x,y,label\n1,2,0\n\n1,2\n", options),
              HasSubstr("line 4 has 2 fields but the header names 3 columns"));
  EXPECT_THAT(csvError("x,y,label\n1,\"2,0\n", options),
              HasSubstr("line 2 column 2 opens a quote"));
  EXPECT_THAT(csvError("x,y,label\n1,\"2\"x,0\n", options),
              HasSubstr("line 2 column 2 has text after its closing quote"));
  EXPECT_THAT(csvError("x,y,label\n1,2,1e999\n", options),
              HasSubstr("out of the range"));
  options.labelType = UNSIGNED_CHAR;
  EXPECT_THAT(csvError("x,y,label\n1,2,300\n", options),
              HasSubstr("\"300\" does not fit in unsigned char (0 to 255)"));
  EXPECT_THAT(csvError("", {}), HasSubstr("is empty"));
  CsvOptions noHeader;
  noHeader.header = false;
  EXPECT_THAT(csvError("\n", noHeader), HasSubstr("has no rows"));
}

// A gzip CSV of `rows` rows whose compressed bytes up to `cut` (returned)
// decompress to exactly the first `cutRow` rows: a file cut there ends at a
// row boundary, and only the missing gzip trailer says it is incomplete.
static std::uintmax_t writeRowsWithFlush(const std::string &path, int rows,
                                         int cutRow) {
  gzFile f = gzopen(path.c_str(), "wb");
  std::uintmax_t cut = 0;
  gzputs(f, "x,y\n");
  for (int i = 0; i < rows; ++i) {
    if (i == cutRow) {
      gzflush(f, Z_SYNC_FLUSH);
      cut = std::filesystem::file_size(path);
    }
    gzputs(f, (std::to_string(i) + "," + std::to_string(2 * i) + "\n").c_str());
  }
  gzclose(f);
  return cut;
}

TEST(Csv, GzipCutAtARowBoundaryIsTruncatedNotShort) {
  const std::string gz = tempPath("cut.csv.gz");
  const std::uintmax_t cut = writeRowsWithFlush(gz, 2000, 1000);
  EXPECT_EQ(Dataset::csv(gz).cardinality(), Cardinality::finite(2000));
  std::filesystem::resize_file(gz, cut);
  EXPECT_THAT([&] { Dataset::csv(gz); },
              ::testing::ThrowsMessage<SerializationError>(HasSubstr(
                  "CSV file \"" + gz + "\" is truncated: its gzip stream")));
  std::filesystem::remove(gz);
}

TEST(Csv, GzipWithABadChecksumIsCorrupt) {
  const std::string gz = tempPath("crc.csv.gz");
  writeRowsWithFlush(gz, 100, 50);
  std::string bytes;
  {
    std::ifstream in(gz, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[bytes.size() - 8] ^= 0x01; // the CRC-32 of the trailer
  std::ofstream(gz, std::ios::binary) << bytes;
  EXPECT_THAT([&] { Dataset::csv(gz); },
              ::testing::ThrowsMessage<SerializationError>(
                  HasSubstr("\"" + gz + "\" is corrupt")));
  std::filesystem::remove(gz);
}

TEST(Csv, FifoIsAnErrorInsteadOfAWait) {
  tessera::test::Fifo fifo("rows.csv");
  const std::string msg = tessera::test::errorOrBlocked(
      fifo.path(), [&] { Dataset::csv(fifo.path()); });
  EXPECT_THAT(msg, HasSubstr("CSV file \"" + fifo.path() +
                             "\" is a FIFO (named pipe), not a regular file"));
}

TEST(Csv, UnknownColumnsAndMissingFilesAreErrors) {
  TempFile f("cols.csv", "a,b\n1,2\n");
  CsvOptions options;
  options.labelColumn = "lable";
  try {
    Dataset::csv(f.path(), options);
    FAIL();
  } catch (const OptionError &e) {
    EXPECT_THAT(e.what(), HasSubstr("\"lable\" is not a column"));
    EXPECT_THAT(e.what(), HasSubstr("its columns are \"a\", \"b\""));
  }
  CsvOptions onlyLabel;
  onlyLabel.featureColumns = {};
  onlyLabel.labelColumn = "a";
  TempFile one("one.csv", "a\n1\n");
  EXPECT_THROW(Dataset::csv(one.path(), onlyLabel), OptionError);
  try {
    Dataset::csv(std::filesystem::temp_directory_path().string());
    FAIL();
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("is a folder, not a regular file"));
  }
  try {
    Dataset::csv("/nonexistent/data.csv");
    FAIL();
  } catch (const Error &e) {
    EXPECT_THAT(e.what(),
                HasSubstr("\"/nonexistent/data.csv\" does not exist"));
  }
}

TEST(IdxDataset, PairsImagesWithLabelsGzipOrPlain) {
  std::string images = idxHeader(0x08, {3, 2, 2});
  for (int v : {0, 255, 51, 102, 1, 2, 3, 4, 5, 6, 7, 8})
    images.push_back(static_cast<char>(v));
  std::string labels = idxHeader(0x08, {3}) + std::string{7, 8, 9};
  const std::string imagesPath = tempPath("images.gz");
  writeGzip(imagesPath, images);
  TempFile labelsFile("labels", labels);

  Dataset ds = Dataset::idx(imagesPath, labelsFile.path());
  EXPECT_EQ(ds.spec().toString(), "(image: float [2,2], label: int [])");
  EXPECT_EQ(ds.cardinality(), Cardinality::finite(3));
  Element e = *ds.iterator().next();
  EXPECT_THAT(e[0].values<float>(), ElementsAre(0.0f, 1.0f, 0.2f, 0.4f));
  EXPECT_EQ(e[1].item<int>(), 7);

  IdxOptions raw;
  raw.normalize = false;
  raw.imageShape = {4};
  raw.labelType = FLOAT;
  Dataset rawDs = Dataset::idx(imagesPath, labelsFile.path(), raw);
  EXPECT_EQ(rawDs.spec().toString(),
            "(image: unsigned char [4], label: float [])");

  raw.imageShape = {3};
  EXPECT_THROW(Dataset::idx(imagesPath, labelsFile.path(), raw), ShapeError);
  TempFile shortLabels("labels2", idxHeader(0x08, {2}) + std::string{1, 2});
  try {
    Dataset::idx(imagesPath, shortLabels.path());
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("holds 3 images but the labels file"));
  }
  std::filesystem::remove(imagesPath);
}

TEST(IdxDataset, LabelsMustBeOneDimensionalAndCodesKnown) {
  TempFile images("img", idxHeader(0x08, {2, 1}) + std::string{1, 2});
  TempFile labels("lab2d", idxHeader(0x08, {2, 1}) + std::string{1, 2});
  try {
    Dataset::idx(images.path(), labels.path());
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("labels exactly one"));
  }
  TempFile badCode("code", idxHeader(0x07, {1}) + std::string{1});
  try {
    readIdxTensor(badCode.path());
    FAIL();
  } catch (const SerializationError &e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown element type code 7"));
  }
}

TEST(IdxDataset, KeepsEachElementType) {
  std::string shorts = idxHeader(0x0B, {2}) + std::string{1, 2, '\xff', '\xfe'};
  TempFile f("shorts", shorts);
  HostTensor t = readIdxTensor(f.path());
  EXPECT_EQ(t.type(), SHORT);
  EXPECT_THAT(t.values<short>(), ElementsAre(258, -2));
  std::string floats = idxHeader(0x0D, {1}) + std::string{0x3f, '\xc0', 0, 0};
  TempFile g("floats", floats);
  EXPECT_THAT(readIdxTensor(g.path()).values<float>(), ElementsAre(1.5f));
}

TEST(FashionMnist, MissingFilesNameTheDebianPackage) {
  FashionMnistOptions options;
  options.directory = "/nonexistent-folder";
  for (Split split : {Split::Train, Split::Test}) {
    try {
      fashionMnist(split, options);
      FAIL();
    } catch (const Error &e) {
      EXPECT_THAT(e.what(), HasSubstr("dataset-fashion-mnist"));
      EXPECT_THAT(e.what(), HasSubstr("/nonexistent-folder/"));
    }
  }
}

TEST(FashionMnist, DebianFilesHaveTheKnownCountsAndShapes) {
  if (!std::filesystem::exists(fashionMnistDirectory()))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  Dataset train = fashionMnist(Split::Train);
  EXPECT_EQ(train.cardinality(), Cardinality::finite(60000));
  EXPECT_EQ(train.spec().toString(), "(image: float [28,28,1], label: int [])");
  FashionMnistOptions flat;
  flat.imageShape = {784};
  Dataset test = fashionMnist(Split::Test, flat);
  EXPECT_EQ(test.cardinality(), Cardinality::finite(10000));
  EXPECT_EQ(test.spec()[0].shape, Shape{784});
  // Every label is a class 0..9, every pixel in [0, 1], and all ten
  // classes appear equally often in the test set.
  std::vector<int> perClass(10);
  Iterator it = test.batch(1000).iterator();
  Element e;
  std::size_t images = 0;
  while (it.next(e)) {
    for (int label : e[1].values<int>()) {
      ASSERT_GE(label, 0);
      ASSERT_LT(label, 10);
      ++perClass[std::size_t(label)];
    }
    for (float v : e[0].values<float>()) {
      ASSERT_GE(v, 0.0f);
      ASSERT_LE(v, 1.0f);
    }
    images += e[0].dim(0);
  }
  EXPECT_EQ(images, 10000u);
  for (int n : perClass)
    EXPECT_EQ(n, 1000);
}

TEST(FashionMnist, TheTrainingPipelineOfTheDatasetHeaderRuns) {
  if (!std::filesystem::exists(fashionMnistDirectory()))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  Dataset train = fashionMnist(Split::Train)
                      .shuffle(60000, 42)
                      .batch(32, true)
                      .repeat()
                      .prefetch(autotune);
  EXPECT_EQ(train.spec().toString(),
            "(image: float [32,28,28,1], label: int [32])");
  EXPECT_TRUE(train.cardinality().isInfinite());
  Iterator it = train.iterator();
  Element batch;
  std::vector<int> firstLabels;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(it.next(batch));
    EXPECT_EQ(batch[0].shape(), (Shape{32, 28, 28, 1}));
    for (int label : batch[1].values<int>())
      firstLabels.push_back(label);
  }
  // The same seed gives the same batches in a fresh dataset.
  Iterator again =
      fashionMnist(Split::Train).shuffle(60000, 42).batch(32, true).iterator();
  std::vector<int> againLabels;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(again.next(batch));
    for (int label : batch[1].values<int>())
      againLabels.push_back(label);
  }
  EXPECT_EQ(firstLabels, againLabels);
}
