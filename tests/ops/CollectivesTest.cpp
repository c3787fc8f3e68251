// Collectives across replicas: allReduce (every operator, in place and with
// an output), reduceScatter with uneven sizes and allGather on 2 and 4
// replicas in float, half, int and bool, each replica writing its own
// data; bit-identical results on every replica; the identity on one
// replica; errors; the ring's traffic and its cost on the IPU-links; the
// cost of plain copies between IPUs; the GCL and popops names.
#include "Conformance.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/ops/Codelets.hpp"
#include "tessera/ops/Collectives.hpp"
#include "tessera/ops/Reference.hpp"
#include "tessera/support/Error.hpp"

#include <gcl/Collectives.hpp>
#include <popops/Collectives.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

using namespace tessera;
using namespace tessera::ops;
using namespace tessera::conformance;
using ::testing::HasSubstr;

namespace {

using Op = CollectiveOperator;

// Replica r's input: distinct values on every replica.
std::vector<Values> perReplica(Type type, std::size_t n, unsigned replicas,
                               double lo, double hi) {
  std::vector<Values> v;
  for (unsigned r = 0; r < replicas; ++r)
    v.push_back(rounded(type, spread(n, lo, hi, r + 1)));
  return v;
}

// op over the replicas' values of element i, in double.
double combine(Op op, const std::vector<Values> &x, std::size_t i) {
  return reference::allReduce(op, x).at(i);
}

OpCase allReduceCase(Type type, Op op, std::size_t n, unsigned replicas) {
  OpCase c;
  c.replicas = replicas;
  const auto x = perReplica(type, n, replicas, op == Op::MUL ? 0.5 : -3,
                            op == Op::MUL ? 1.5 : 3);
  c.inputs = {HostInput(type, {n}, x)};
  c.build = [op](Graph &g, const auto &in, program::Sequence &p) {
    return std::vector<Tensor>{allReduce(g, in[0], op, p)};
  };
  const Values want = reference::allReduce(op, x);
  std::vector<Values> magnitudes;
  for (const Values &v : x)
    magnitudes.push_back(absolute(v));
  Values scale = reference::allReduce(Op::ADD, magnitudes);
  for (std::size_t i = 0; i < n; ++i)
    scale[i] = std::max(scale[i], std::fabs(want[i]));
  c.expected = {Expected(rounded(type, want), tol(type, 2e-6, 4e-3), scale)};
  return c;
}

// Every replica's output equals replica 0's, bit for bit.
void expectSameOnEveryReplica(const Outcome &o, const std::string &what) {
  for (const auto &output : o.outputs)
    for (std::size_t r = 1; r < output.size(); ++r)
      EXPECT_EQ(output[r], output[0]) << what << ": replica " << r;
}

Device replicaDevice(unsigned tiles, unsigned replicas, double linkBandwidth) {
  IPUModel model;
  model.tilesPerIPU = tiles;
  model.numIPUs = replicas;
  if (linkBandwidth > 0)
    model.ipuLinkBandwidth = linkBandwidth;
  return model.createDevice();
}

// Compiles allReduce of \p n floats (spread over the tiles) on \p replicas
// replicas and returns the executable.
Executable compileAllReduce(unsigned tiles, unsigned replicas, std::size_t n,
                            double linkBandwidth = 0) {
  Device d = replicaDevice(tiles, replicas, linkBandwidth);
  Graph g(d.getTarget(), replication_factor(replicas));
  ops::addCodelets(g);
  Tensor x = g.addVariable(FLOAT, {n}, "x");
  mapTensorLinearly(g, x);
  program::Sequence p;
  allReduceInPlace(g, x, Op::ADD, p);
  return compileGraph(g, {p});
}

std::uint64_t totalCycles(const Executable &exe) {
  std::uint64_t sum = 0;
  for (const StepEstimate &e : exe.estimates)
    if (!e.ipuCycles.empty())
      sum += *std::max_element(e.ipuCycles.begin(), e.ipuCycles.end());
  return sum;
}

} // namespace

TEST(AllReduce, EveryOperatorOnTwoAndFourReplicasInFloatAndHalf) {
  for (Type type : {FLOAT, HALF})
    for (unsigned replicas : {2u, 4u})
      for (Op op :
           {Op::ADD, Op::MEAN, Op::MUL, Op::MIN, Op::MAX, Op::SQUARE_ADD}) {
        const OpCase c = allReduceCase(type, op, 37, replicas);
        const Outcome o = runCase({4, replicas}, c);
        const std::string what = std::string(collectiveOperatorName(op)) + " " +
                                 typeLabel(type) + " on " +
                                 std::to_string(replicas) + " replicas";
        const Values &want = c.expected[0].replicas[0];
        for (unsigned r = 0; r < replicas; ++r)
          for (std::size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(o.outputs[0][r][i], want[i],
                        c.expected[0].tolerance *
                            std::max(1.0, c.expected[0].scale[i]))
                << what << " replica " << r << " element " << i;
        expectSameOnEveryReplica(o, what);
      }
}

TEST(AllReduce, IntegersAndBoolsAreExact) {
  const std::vector<Values> ints{
      {1, -2, 3, 40, 5}, {10, 20, -30, 4, 0}, {-7, 7, 0, 1, 2}};
  OpCase c;
  c.replicas = 3;
  c.inputs = {
      HostInput(INT, {5}, ints),
      HostInput(BOOL, {4},
                std::vector<Values>{{1, 1, 0, 0}, {1, 0, 1, 0}, {1, 1, 1, 0}})};
  c.build = [](Graph &g, const auto &in, program::Sequence &p) {
    return std::vector<Tensor>{allReduce(g, in[0], Op::ADD, p),
                               allReduce(g, in[0], Op::MIN, p),
                               allReduce(g, in[1], Op::LOGICAL_AND, p),
                               allReduce(g, in[1], Op::LOGICAL_OR, p)};
  };
  const Outcome o = runCase({4, 3}, c);
  for (unsigned r = 0; r < 3; ++r) {
    EXPECT_EQ(o.outputs[0][r], (Values{4, 25, -27, 45, 7}));
    EXPECT_EQ(o.outputs[1][r], (Values{-7, -2, -30, 1, 0}));
    EXPECT_EQ(o.outputs[2][r], (Values{1, 0, 0, 0}));
    EXPECT_EQ(o.outputs[3][r], (Values{1, 1, 1, 0}));
  }
}

TEST(AllReduce, InPlaceAndWithOutputOnAMatrixView) {
  OpCase c;
  c.replicas = 4;
  c.inputs = {HostInput(FLOAT, {3, 5}, perReplica(INT, 15, 4, -20, 20))};
  c.build = [](Graph &g, const auto &in, program::Sequence &p) {
    Tensor out = g.clone(in[0].transpose(), "out");
    allReduceWithOutput(g, in[0].transpose(), out, Op::MAX, p);
    allReduceInPlace(g, in[0], Op::ADD, p);
    return std::vector<Tensor>{in[0], out};
  };
  const Outcome o = runCase({4, 4}, c);
  const auto &x = c.inputs[0].replicas;
  for (unsigned r = 0; r < 4; ++r)
    for (std::size_t i = 0; i < 15; ++i) {
      EXPECT_EQ(o.outputs[0][r][i], combine(Op::ADD, x, i));
      // out is [5, 3]: element (j, k) is the input's (k, j).
      const std::size_t j = i / 3, k = i % 3;
      EXPECT_EQ(o.outputs[1][r][i], combine(Op::MAX, x, k * 5 + j));
    }
}

TEST(AllReduce, FloatSumsAreBitIdenticalOnEveryReplica) {
  // Values whose float sum depends on the order of the additions.
  OpCase c = allReduceCase(FLOAT, Op::ADD, 1000, 4);
  for (Values &v : c.inputs[0].replicas)
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<float>(v[i] * std::pow(10.0, double(i % 7) - 3));
  const Outcome o = runCase({16, 4}, c);
  expectSameOnEveryReplica(o, "sum of values of mixed magnitudes");
}

TEST(ReduceScatter, EachReplicaGetsItsChunkOfUnevenSizesPaddedWithZeros) {
  for (unsigned replicas : {2u, 4u})
    for (std::size_t n : {8u, 10u, 3u}) {
      OpCase c;
      c.replicas = replicas;
      const auto x = perReplica(HALF, n, replicas, -2, 2);
      c.inputs = {HostInput(HALF, {n}, x)};
      c.build = [](Graph &g, const auto &in, program::Sequence &p) {
        return std::vector<Tensor>{
            reduceScatter(g, in[0], Op::ADD, p),
            reduceScatter(g, in[0].reshape({1, in[0].numElements()}), Op::LOCAL,
                          p)};
      };
      const Outcome o = runCase({4, replicas}, c);
      const std::size_t chunk = (n + replicas - 1) / replicas;
      for (unsigned r = 0; r < replicas; ++r) {
        ASSERT_EQ(o.outputs[0][r].size(), chunk);
        for (std::size_t j = 0; j < chunk; ++j) {
          const std::size_t i = r * chunk + j;
          const double sum = i < n ? combine(Op::ADD, x, i) : 0.0;
          const double own = i < n ? x[r][i] : 0.0;
          EXPECT_NEAR(o.outputs[0][r][j], sum, 4e-3 * std::max(1.0, sum))
              << n << " elements, replica " << r << " element " << j;
          EXPECT_EQ(o.outputs[1][r][j], own) << "LOCAL keeps its own";
        }
      }
    }
}

TEST(AllGather, EveryReplicaGetsEveryReplicasValuesInOrder) {
  for (unsigned replicas : {2u, 4u})
    for (Type type : {FLOAT, HALF, UNSIGNED_INT}) {
      OpCase c;
      c.replicas = replicas;
      const auto x = perReplica(type, 6, replicas, 0, 50);
      c.inputs = {HostInput(type, {2, 3}, x)};
      c.build = [](Graph &g, const auto &in, program::Sequence &p) {
        Tensor all = allGather(g, in[0], p);
        EXPECT_EQ(all.shape(), (Shape{g.getReplicationFactor(), 2, 3}));
        return std::vector<Tensor>{all};
      };
      const Outcome o = runCase({4, replicas}, c);
      Values want;
      for (const Values &v : x)
        want.insert(want.end(), v.begin(), v.end());
      for (unsigned r = 0; r < replicas; ++r)
        EXPECT_EQ(o.outputs[0][r], want)
            << typeLabel(type) << " on replica " << r;
    }
}

TEST(Collectives, OneReplicaIsTheIdentity) {
  OpCase c;
  c.inputs = {HostInput(FLOAT, {2, 3}, Values{1, 2, 3, 4, 5, 6})};
  c.build = [](Graph &g, const auto &in, program::Sequence &p) {
    Tensor gathered = allGather(g, in[0], p);
    EXPECT_EQ(gathered.shape(), (Shape{1, 2, 3}));
    return std::vector<Tensor>{allReduce(g, in[0], Op::MEAN, p),
                               reduceScatter(g, in[0], Op::SQUARE_ADD, p),
                               gathered};
  };
  const Outcome o = runCase({4, 1}, c);
  EXPECT_EQ(o.outputs[0][0], (Values{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(o.outputs[1][0], (Values{1, 4, 9, 16, 25, 36}));
  EXPECT_EQ(o.outputs[2][0], (Values{1, 2, 3, 4, 5, 6}));
}

TEST(CollectivesReference, ReduceScatterPadsWithZerosAndLocalKeepsItsOwn) {
  const std::vector<Values> x{{1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}};
  EXPECT_EQ(reference::reduceScatter(Op::ADD, x, 0), (Values{11, 22, 33}));
  EXPECT_EQ(reference::reduceScatter(Op::ADD, x, 1), (Values{44, 55, 0}));
  EXPECT_EQ(reference::reduceScatter(Op::LOCAL, x, 1), (Values{40, 50, 0}));
  EXPECT_EQ(reference::allReduce(Op::MEAN, x),
            (Values{5.5, 11, 16.5, 22, 27.5}));
  EXPECT_EQ(reference::allReduce(Op::SQUARE_ADD, x)[0], 101);
}

TEST(CollectivesErrors, TypesShapesAndOptionsSayWhatIsWrong) {
  Device d = replicaDevice(4, 2, 0);
  Graph g(d.getTarget(), replication_factor(2));
  ops::addCodelets(g);
  Tensor i = g.addVariable(INT, {4}, "i"), b = g.addVariable(BOOL, {4}, "b");
  Tensor f = g.addVariable(FLOAT, {4}, "f"), s = g.addVariable(SHORT, {4});
  Tensor empty = g.addVariable(FLOAT, {0, 3}, "empty");
  for (const Tensor &t : {i, b, f, s})
    mapTensorLinearly(g, t);
  program::Sequence p;
  auto message = [&](auto &&call) {
    try {
      call();
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message([&] { allReduce(g, i, Op::MEAN, p); }),
              HasSubstr("MEAN needs a float or half tensor but it has type "
                        "int"));
  EXPECT_THROW(allReduce(g, i, Op::MEAN, p), TypeError);
  EXPECT_THAT(message([&] { reduceScatter(g, b, Op::ADD, p); }),
              HasSubstr("ADD needs numbers but the tensor is bool"));
  EXPECT_THAT(message([&] { allReduceInPlace(g, f, Op::LOGICAL_OR, p); }),
              HasSubstr("LOGICAL_OR needs a bool tensor but it has type "
                        "float"));
  EXPECT_THROW(allGather(g, s, p), TypeError);
  EXPECT_THAT(message([&] { allGather(g, empty, p); }),
              HasSubstr("no elements (shape [0, 3])"));
  EXPECT_THROW(allGather(g, empty, p), ShapeError);
  EXPECT_THROW(allReduce(g, f, Op::ADD, p, {}, {{"method", "ring"}}),
               OptionError);
  Tensor wrong = g.addVariable(FLOAT, {5}, "wrong");
  EXPECT_THAT(message([&] { allReduceWithOutput(g, f, wrong, Op::ADD, p); }),
              HasSubstr("the output is float [5] but the input is float [4]"));
  EXPECT_THROW(allReduceWithOutput(g, f, wrong, Op::ADD, p), ShapeError);
}

TEST(CollectivesCost, TheRingSendsTwoThirdsOfTheTensorOnEachOfFourReplicas) {
  // An allReduce on R replicas sends 2 (R - 1) / R of the tensor per
  // replica, besides the few bytes that tell replicas their index.
  const std::size_t n = 6000;
  const Executable exe = compileAllReduce(16, 4, n);
  std::uint64_t ring = 0, small = 0;
  for (std::size_t k = 0; k < exe.steps.size(); ++k) {
    if (exe.steps[k].kind != StepKind::CrossReplica)
      continue;
    const std::uint64_t bytes = exe.estimates[k].bytesExchanged;
    (bytes > 64 ? ring : small) += bytes;
  }
  EXPECT_EQ(ring, 2 * 3 * (n / 4) * 4);
  EXPECT_GT(small, 0u);
  EXPECT_LE(small, 2u * 8);
}

TEST(CollectivesCost, EstimatesArePositiveDeterministicAndGrowWithSize) {
  const std::uint64_t small = totalCycles(compileAllReduce(4, 2, 1000));
  EXPECT_GT(small, 0u);
  EXPECT_EQ(totalCycles(compileAllReduce(4, 2, 1000)), small);
  EXPECT_GT(totalCycles(compileAllReduce(4, 2, 100000)), small);
  EXPECT_GT(totalCycles(compileAllReduce(4, 4, 100000)),
            totalCycles(compileAllReduce(4, 2, 100000)));
}

TEST(CollectivesCost, CrossReplicaTrafficIsCostedOnTheIpuLinks) {
  // Spread over many tiles, each tile's exchange is small and the link
  // carries the bytes: a CrossReplica step takes at least bytes / (link
  // bytes per cycle), and a slower link makes it slower by that much.
  const std::size_t n = 400000;
  const double slow = 10e9; // bytes per second
  const Executable fast = compileAllReduce(1472, 2, n);
  const Executable slowExe = compileAllReduce(1472, 2, n, slow);
  const double clock = Target::createIPUTarget(1).getTileClockFrequency();
  std::size_t checked = 0;
  for (std::size_t k = 0; k < fast.steps.size(); ++k) {
    if (fast.steps[k].kind != StepKind::CrossReplica ||
        fast.estimates[k].bytesExchanged < 1000)
      continue;
    const double bytes = double(fast.estimates[k].bytesExchanged);
    const std::uint64_t a = fast.estimates[k].ipuCycles[0];
    const std::uint64_t b = slowExe.estimates[k].ipuCycles[0];
    EXPECT_GE(double(a), bytes / (320e9 / clock));
    EXPECT_GE(double(b), bytes / (slow / clock));
    EXPECT_NEAR(double(b - a), bytes / (slow / clock) - bytes / (320e9 / clock),
                2.0);
    ++checked;
  }
  EXPECT_EQ(checked, 2u); // one reduce-scatter and one all-gather step
}

TEST(CollectivesCost, CopiesBetweenIpusAreCostedOnTheIpuLinks) {
  // A plain Copy from IPU 0 to IPU 1 of a two-IPU target pays for the link;
  // a copy within IPU 0 does not depend on it.
  auto copyCycles = [](double linkBandwidth, unsigned dstTile) {
    IPUModel model;
    model.tilesPerIPU = 1472;
    model.numIPUs = 2;
    model.ipuLinkBandwidth = linkBandwidth;
    Device d = model.createDevice();
    Graph g(d.getTarget());
    Tensor x = g.addVariable(FLOAT, {1472 * 64}, "x");
    Tensor y = g.addVariable(FLOAT, {1472 * 64}, "y");
    g.setTileMapping(x, 0);
    g.setTileMapping(y, dstTile);
    const Executable exe = compileGraph(g, {program::Copy(x, y)});
    return totalCycles(exe);
  };
  const double clock = Target::createIPUTarget(1).getTileClockFrequency();
  const double bytes = 1472 * 64 * 4;
  const std::uint64_t fast = copyCycles(320e9, 1472 + 5);
  const std::uint64_t slow = copyCycles(1e9, 1472 + 5);
  EXPECT_GE(double(slow), bytes / (1e9 / clock));
  EXPECT_NEAR(double(slow - fast),
              bytes / (1e9 / clock) - bytes / (320e9 / clock), 2.0);
  EXPECT_EQ(copyCycles(320e9, 5), copyCycles(1e9, 5));
}

TEST(CollectivesCompat, GclAndPopopsNamesRunTheSameOps) {
  OpCase c;
  c.replicas = 2;
  c.inputs = {HostInput(FLOAT, {4},
                        std::vector<Values>{{1, 2, 3, 4}, {10, 20, 30, 40}})};
  c.build = [](Graph &g, const auto &in, program::Sequence &p) {
    Tensor sum =
        gcl::allReduceCrossReplica(g, in[0], gcl::CollectiveOperator::ADD, p);
    Tensor mean = popops::replicatedAllReduce(
        g, in[0], popops::CollectiveOperator::MEAN, p);
    Tensor part = gcl::reduceScatterCrossReplica(
        g, in[0], gcl::CollectiveOperator::MAX, p);
    Tensor all = gcl::allGatherCrossReplica(g, in[0], p);
    gcl::allReduceInPlaceCrossReplica(g, in[0], gcl::CollectiveOperator::MIN,
                                      p);
    return std::vector<Tensor>{sum, mean, part, all, in[0]};
  };
  const Outcome o = runCase({4, 2}, c);
  EXPECT_EQ(o.outputs[0][1], (Values{11, 22, 33, 44}));
  EXPECT_EQ(o.outputs[1][0], (Values{5.5, 11, 16.5, 22}));
  EXPECT_EQ(o.outputs[2][0], (Values{10, 20}));
  EXPECT_EQ(o.outputs[2][1], (Values{30, 40}));
  EXPECT_EQ(o.outputs[3][0], (Values{1, 2, 3, 4, 10, 20, 30, 40}));
  EXPECT_EQ(o.outputs[4][1], (Values{1, 2, 3, 4}));
}
