// The compact per-field records a graph keeps for every vertex field.
#include "tessera/graph/GraphData.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/graph/Graph.hpp"

#include <gtest/gtest.h>

#include <cstring>

using namespace tessera;

namespace {
// Distinct one-element views of a variable: views of one run each.
std::vector<Tensor> views(Graph &g, std::size_t n) {
  Tensor x = g.addVariable(FLOAT, {n}, "x");
  std::vector<Tensor> ts;
  for (std::size_t i = 0; i < n; ++i)
    ts.push_back(x.slice(i, i + 1));
  return ts;
}
Graph smallGraph() {
  return Graph(Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "4"}}));
}
} // namespace

TEST(FieldBinding, OneTensorFieldNeedsNoHeapBlock) {
  // A graph holds one per field of every vertex: 72 bytes, the tensor in
  // place, where a std::vector of tensors and one of bytes made 80 bytes
  // and a 48-byte heap block for the common one-tensor field.
  EXPECT_LE(sizeof(FieldBinding), 72u);
  Graph g = smallGraph();
  std::vector<Tensor> ts = views(g, 1);
  FieldTensors f;
  EXPECT_EQ(f.capacity(), 1u);
  f.assignOne(ts[0]);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f.capacity(), 1u);
  EXPECT_EQ(f[0].runs(), ts[0].runs());
  // In place: the element lies inside the record.
  const auto *self = reinterpret_cast<const char *>(&f);
  const auto *elem = reinterpret_cast<const char *>(&f[0]);
  EXPECT_TRUE(elem >= self && elem < self + sizeof f);
}

TEST(FieldBinding, TensorsGrowCopyAndMoveLikeAVector) {
  Graph g = smallGraph();
  std::vector<Tensor> ts = views(g, 5);
  FieldTensors f;
  for (const Tensor &t : ts)
    f.push_back(t);
  ASSERT_EQ(f.size(), 5u);
  f.push_back(f[0]); // an element of its own, while growing
  ASSERT_EQ(f.size(), 6u);
  EXPECT_EQ(f[5].runs(), ts[0].runs());
  FieldTensors copy(f);
  FieldTensors moved(std::move(f));
  EXPECT_EQ(f.size(), 0u);
  ASSERT_EQ(copy.size(), 6u);
  ASSERT_EQ(moved.size(), 6u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(copy[i].runs(), ts[i].runs());
    EXPECT_EQ(moved[i].runs(), ts[i].runs());
  }
  // Shrinking leaves invalid tensors past the end; growing is exact on
  // reserve and fills with invalid tensors.
  moved.resize(2);
  EXPECT_EQ(moved.size(), 2u);
  moved.resize(4);
  EXPECT_FALSE(moved[3].valid());
  FieldTensors exact;
  exact.reserve(3);
  EXPECT_EQ(exact.capacity(), 3u);
  FieldTensors one;
  one.assignOne(ts[1]);
  one = copy;
  EXPECT_EQ(one.size(), 6u);
  copy = FieldTensors();
  EXPECT_TRUE(copy.empty());
  std::size_t n = 0;
  for (const Tensor &t : one)
    n += t.valid();
  EXPECT_EQ(n, 6u);
}

TEST(FieldBinding, StateKeepsBytesAndCount) {
  FieldState s;
  EXPECT_EQ(s.size(), 0u);
  EXPECT_EQ(s.count(), 0u);
  const int values[3] = {7, -1, 42};
  std::memcpy(s.assign(sizeof values, 3), values, sizeof values);
  FieldState copy(s);
  EXPECT_EQ(copy.size(), sizeof values);
  EXPECT_EQ(copy.count(), 3u);
  EXPECT_EQ(std::memcmp(copy.data(), values, sizeof values), 0);
  EXPECT_EQ(copy.end() - copy.begin(), std::ptrdiff_t(sizeof values));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(copy.data()) % 8, 0u);
}

TEST(FieldBinding, SizeReadsLikeAnOptional) {
  FieldSize n;
  EXPECT_FALSE(n);
  n = 0;
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 0u);
  n = FieldSize::kMax;
  EXPECT_EQ(*n, FieldSize::kMax);
}
