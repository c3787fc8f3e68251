// datasetBenchmark: the JSON layout, the counts and bytes it reports, and
// its errors for datasets that run out.
#include "tessera/data/Benchmark.hpp"
#include "DataTestUtil.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tessera;
using namespace tessera::data;
using namespace tessera::data::test;
using ::testing::HasSubstr;

TEST(DatasetBenchmark, ReportsEachEpochWithCountsBytesAndRates) {
  // Elements of a float [3] and an int scalar: 16 bytes each.
  auto x = HostTensor::fromValues<float>({10, 3}, std::vector<float>(30, 1));
  auto y = HostTensor::fromValues<int>({10}, std::vector<int>(10, 2));
  int mapped = 0;
  Dataset ds = Dataset::fromTensors({x, y}).repeat().map([&](Element e) {
    ++mapped;
    return e;
  });
  nlohmann::json stats = datasetBenchmark(ds, 3, 25);
  ASSERT_TRUE(stats.contains("epochs"));
  ASSERT_EQ(stats["epochs"].size(), 3u);
  for (const nlohmann::json &epoch : stats["epochs"]) {
    EXPECT_EQ(epoch.size(), 5u);
    EXPECT_EQ(epoch["elements_processed"], 25);
    EXPECT_EQ(epoch["total_bytes_processed"], 25 * 16);
    const double seconds = epoch["time_elapsed"];
    EXPECT_GT(seconds, 0.0);
    EXPECT_NEAR(double(epoch["elements_per_second"]), 25 / seconds,
                1e-6 * 25 / seconds);
    EXPECT_NEAR(double(epoch["bandwidth"]), 25 * 16 / seconds,
                1e-6 * 25 * 16 / seconds);
  }
  EXPECT_EQ(mapped, 75); // it really pulled every element through the map
  // The result serialises to the JSON string Python's json.loads reads.
  EXPECT_THAT(stats.dump(), HasSubstr("\"elements_per_second\""));
}

TEST(DatasetBenchmark, CountsTheBytesOfBatchesAsTheyAre) {
  // Batches of 4 of a float [784] and an int: 4 * (3136 + 4) bytes.
  auto x = HostTensor(FLOAT, {20, 784});
  auto y = HostTensor(INT, {20});
  Dataset ds = Dataset::fromTensors({x, y}).batch(4);
  nlohmann::json stats = datasetBenchmark(ds, 1, 5);
  EXPECT_EQ(stats["epochs"][0]["total_bytes_processed"], 5 * 4 * 3140);
}

TEST(DatasetBenchmark, ADatasetThatRunsOutIsAnError) {
  try {
    datasetBenchmark(range(10), 2, 8);
    FAIL();
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("has 10 elements but 2 epochs of 8 need "
                                    "16; repeat() the dataset"));
  }
  auto gen = [] {
    return [i = 0]() mutable -> std::optional<Element> {
      if (i == 5)
        return std::nullopt;
      return Element{HostTensor::scalar<int>(i++)};
    };
  };
  try {
    datasetBenchmark(Dataset::fromGenerator(gen, {{"", INT, {}}}), 2, 3);
    FAIL();
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("ended after 5 elements, in epoch 1 of 2"));
  }
  EXPECT_THROW(datasetBenchmark(range(10), 0, 8), Error);
  EXPECT_THROW(datasetBenchmark(range(10), 1, 0), Error);
}
