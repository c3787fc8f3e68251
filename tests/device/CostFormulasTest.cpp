#include "tessera/device/CostFormulas.hpp"

#include <gtest/gtest.h>

using namespace tessera;

TEST(CostFormulas, AMultiVertexIsItsBusiestWorkerPlusASixthOfTheStarts) {
  const Target t = Target::createIPUTarget(1);
  const std::uint64_t start = t.costs().supervisorCyclesPerVertex;
  const auto sixth = [](std::uint64_t c) { return (c + 5) / 6; };
  EXPECT_EQ(cost::multiVertexWorkerCycles(t, {}, 6), 0u);
  EXPECT_EQ(cost::multiVertexWorkerCycles(t, {40}, 6), 40u);
  // Up to six shares, a worker each: the longest decides.
  EXPECT_EQ(cost::multiVertexWorkerCycles(t, {10, 70, 30}, 6),
            70 + sixth(2 * start));
  // Eight shares on six workers, longest first to the least loaded:
  // 80 | 70 | 60 | 50 | 40 | 30, then 20 joins 30 and 10 joins 40.
  EXPECT_EQ(
      cost::multiVertexWorkerCycles(t, {10, 20, 30, 40, 50, 60, 70, 80}, 6),
      80 + sixth(7 * start));
  EXPECT_EQ(cost::multiVertexWorkerCycles(t, {50, 50, 50}, 2),
            100 + (2 * start + 1) / 2);
}
