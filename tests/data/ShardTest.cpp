// Dataset::shard: each instance's share, in blocks, with its cardinality;
// the shards of all instances together are the whole dataset in order.
#include "DataTestUtil.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

using namespace tessera;
using namespace tessera::data;
using ::testing::ElementsAre;

namespace {

Dataset range(std::size_t n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return Dataset::fromTensors({HostTensor::fromValues<int>({v.size()}, v)});
}

std::vector<int> values(const Dataset &ds) {
  std::vector<int> out;
  Iterator it = ds.iterator();
  while (std::optional<Element> e = it.next())
    out.push_back((*e)[0].item<int>());
  return out;
}

} // namespace

TEST(Shard, EveryNthElementFromTheIndex) {
  EXPECT_THAT(values(range(7).shard(3, 1)), ElementsAre(1, 4));
  EXPECT_EQ(range(7).shard(3, 1).cardinality(), Cardinality::finite(2));
  EXPECT_EQ(range(7).shard(3, 0).cardinality(), Cardinality::finite(3));
}

TEST(Shard, BlocksGoToTheInstanceOwningThoseReplicas) {
  // 2 instances of 2 replicas: steps take elements 0-3, 4-7, ...; instance
  // 1's replicas take 2, 3, then 6, 7.
  const Dataset ds = range(11);
  EXPECT_THAT(values(ds.shard(2, 1, 2)), ElementsAre(2, 3, 6, 7, 10));
  EXPECT_EQ(ds.shard(2, 1, 2).cardinality(), Cardinality::finite(5));
  EXPECT_EQ(ds.shard(2, 0, 2).cardinality(), Cardinality::finite(6));
  EXPECT_THAT(values(ds.shard(2, 0, 2)), ElementsAre(0, 1, 4, 5, 8, 9));
}

TEST(Shard, ImpossibleShardsAreOptionErrors) {
  EXPECT_THROW(range(4).shard(2, 2), OptionError);
  EXPECT_THROW(range(4).shard(0, 0), OptionError);
  EXPECT_THROW(range(4).shard(2, 0, 0), OptionError);
}
