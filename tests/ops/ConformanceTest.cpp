// The ops conformance harness: every row of Conformance*Rows.cpp as named
// gtest cases. Forward/<op>_<type>_<N>tiles and Gradient/... run the op on
// the IPU Model and compare with the row's expectations; Estimate/<op>_<type>
// compiles the op twice and once at twice the size and checks the cycle
// estimates.
#include "Conformance.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/device/Device.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/ops/Codelets.hpp"
#include "tessera/ops/NonLinearity.hpp"
#include "tessera/ops/Pooling.hpp"
#include "tessera/ops/Reduce.hpp"
#include "tessera/support/Convert.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <ostream>
#include <set>

namespace tessera::conformance {
namespace {

struct Built {
  std::vector<Tensor> outputs;
  program::Sequence prog;
};

// The op's graph: inputs mapped linearly and host-writable, outputs
// host-readable.
Built buildCase(Graph &g, const OpCase &c) {
  ops::addCodelets(g);
  std::vector<Tensor> ins;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    Tensor t = g.addVariable(c.inputs[i].type, c.inputs[i].shape,
                             "in" + std::to_string(i));
    // On 1472 tiles even small inputs spread over many tiles, one element
    // a tile, so the plans that combine tiles run; fewer tiles get the
    // usual grains of 128 bytes. On 4 tiles the op sees its inputs through
    // reversed views (negative strides), as ops must take any view.
    if (g.getTarget().getNumTiles() >= 1472)
      mapTensorLinearly(g, t, 1, 1);
    else
      mapTensorLinearly(g, t);
    if (t.rank() >= 1 && g.getTarget().getNumTiles() == 4)
      t = t.reverse(0);
    g.createHostWrite("in" + std::to_string(i), t);
    ins.push_back(t);
  }
  Built b;
  b.outputs = c.build(g, ins, b.prog);
  for (std::size_t k = 0; k < b.outputs.size(); ++k)
    g.createHostRead("out" + std::to_string(k), b.outputs[k]);
  return b;
}

Device deviceFor(const Machine &m) {
  IPUModel model;
  model.tilesPerIPU = m.tiles;
  model.numIPUs = m.replicas;
  return model.createDevice();
}

// One value as \p type stores it; integers exactly (floats would round
// large unsigned offsets).
void storeElement(Type type, double x, std::byte *dst) {
  if (type == INT) {
    const auto v = static_cast<std::int32_t>(x);
    convertElements(INT, &v, type, dst, 1);
  } else if (type == UNSIGNED_INT) {
    const auto v = static_cast<std::uint32_t>(x);
    convertElements(UNSIGNED_INT, &v, type, dst, 1);
  } else {
    const auto v = static_cast<float>(x);
    convertElements(FLOAT, &v, type, dst, 1);
  }
}

void writeInput(Engine &e, std::size_t i, const HostInput &in,
                unsigned replica) {
  const Values &v =
      in.replicas.size() == 1 ? in.replicas[0] : in.replicas.at(replica);
  const std::size_t size = typeSize(in.type);
  std::vector<std::byte> raw(v.size() * size);
  for (std::size_t k = 0; k < v.size(); ++k)
    storeElement(in.type, v[k], raw.data() + k * size);
  e.writeTensor("in" + std::to_string(i), replica, raw.data(),
                raw.data() + raw.size());
}

Values readOutput(Engine &e, std::size_t k, const Tensor &t, unsigned r) {
  const Type type = t.elementType();
  std::vector<std::byte> raw(t.numElements() * typeSize(type));
  e.readTensor("out" + std::to_string(k), r, raw.data(),
               raw.data() + raw.size());
  Values v(t.numElements());
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = elementAsDouble(type, raw.data() + i * typeSize(type));
  return v;
}

} // namespace

Outcome runCase(const Machine &m, const OpCase &c) {
  Device device = deviceFor(m);
  Graph g(device.getTarget(), replication_factor(m.replicas));
  Built b = buildCase(g, c);
  Engine e(g, b.prog);
  e.load(device);
  for (unsigned r = 0; r < m.replicas; ++r)
    for (std::size_t i = 0; i < c.inputs.size(); ++i)
      writeInput(e, i, c.inputs[i], r);
  e.run();
  Outcome o;
  for (std::size_t k = 0; k < b.outputs.size(); ++k) {
    o.outputs.emplace_back();
    for (unsigned r = 0; r < m.replicas; ++r)
      o.outputs.back().push_back(readOutput(e, k, b.outputs[k], r));
  }
  return o;
}

std::vector<std::uint64_t> stepEstimates(const Machine &m, const OpCase &c) {
  Device device = deviceFor(m);
  Graph g(device.getTarget(), replication_factor(m.replicas));
  Built b = buildCase(g, c);
  const Executable exe = compileGraph(g, {b.prog});
  std::vector<std::uint64_t> cycles;
  for (const StepEstimate &s : exe.estimates)
    cycles.push_back(
        s.ipuCycles.empty()
            ? 0
            : *std::max_element(s.ipuCycles.begin(), s.ipuCycles.end()));
  return cycles;
}

Values spread(std::size_t n, double lo, double hi, unsigned salt) {
  Values v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double u =
        (double((i * 7919 + 13 + salt * 104729) % 997) + 0.37) / 997.0;
    double x = lo + (hi - lo) * u;
    // Nudge values near a multiple of 1/2 away from it, staying in range.
    const double near = std::round(x * 2) / 2;
    if (std::fabs(x - near) < 0.01)
      x = near + (near + 0.03 < hi ? 0.03 : -0.03);
    v[i] = x;
  }
  return v;
}

Values rounded(Type type, Values v) {
  for (double &x : v)
    x = ops::reference::roundTo(type, x);
  return v;
}

std::size_t product(const Shape &shape) {
  return std::accumulate(shape.begin(), shape.end(), std::size_t(1),
                         std::multiplies<>());
}

Values absolute(Values v) {
  for (double &x : v)
    x = std::fabs(x);
  return v;
}

double tol(Type type, double f, double h) {
  return type == FLOAT ? f : type == HALF ? h : 0.0;
}

Values finiteDifference(const Values &x,
                        const std::function<double(const Values &)> &loss,
                        double h) {
  Values g(x.size());
  Values p = x;
  for (std::size_t i = 0; i < x.size(); ++i) {
    p[i] = x[i] + h;
    const double up = loss(p);
    p[i] = x[i] - h;
    const double down = loss(p);
    p[i] = x[i];
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

double dot(const Values &w, const Values &v) {
  double s = 0;
  for (std::size_t i = 0; i < w.size() && i < v.size(); ++i)
    s += w[i] * v[i];
  return s;
}

std::string typeLabel(Type type) {
  std::string s(typeName(type));
  std::replace(s.begin(), s.end(), ' ', '_');
  return s;
}

namespace {

const std::vector<Row> &allRows() {
  static const std::vector<Row> rows = [] {
    std::vector<Row> all;
    for (auto family :
         {elementwiseRows, elementwiseGradientRows, miscElementwiseRows,
          reduceRows, matMulRows, convRows, poolRows, nonLinearityRows,
          lossRows, normRows, randomRows, sliceRows, collectiveRows}) {
      std::vector<Row> r = family();
      all.insert(all.end(), r.begin(), r.end());
    }
    return all;
  }();
  return rows;
}

enum class Check { Run, Estimate };

struct Case {
  const Row *row = nullptr;
  Type type = FLOAT;
  unsigned tiles = 1;
  Check check = Check::Run;
};

// The rows of one kind on every tile count.
std::vector<Case> runCases(Kind kind) {
  std::vector<Case> cases;
  for (const Row &row : allRows())
    if (row.kind == kind)
      for (Type t : row.types)
        for (unsigned tiles : {1u, 4u, 1472u})
          cases.push_back({&row, t, tiles, Check::Run});
  return cases;
}

// Every row's estimates, on one tile, where a larger problem cannot hide
// behind idle tiles.
std::vector<Case> estimateCases() {
  std::vector<Case> cases;
  for (const Row &row : allRows())
    for (Type t : row.types)
      cases.push_back({&row, t, 1, Check::Estimate});
  return cases;
}

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  const Case &c = info.param;
  std::string s = c.row->name + "_" + typeLabel(c.type);
  if (c.check == Check::Run)
    s += "_" + std::to_string(c.tiles) + (c.tiles == 1 ? "tile" : "tiles");
  return s;
}

// Failure messages name the case rather than dumping its bytes.
void PrintTo(const Case &c, std::ostream *os) {
  *os << c.row->name << " in " << typeName(c.type) << " on " << c.tiles
      << (c.check == Check::Run ? " tiles" : " tile, estimates");
}

void expectOutput(const Values &got, const Expected &e, unsigned replica,
                  const std::string &what) {
  const Values &want =
      e.replicas.size() == 1 ? e.replicas[0] : e.replicas.at(replica);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
    } else if (std::isinf(want[i]) || e.tolerance == 0) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
    } else {
      const double scale = e.scale.empty() ? std::fabs(want[i]) : e.scale[i];
      EXPECT_NEAR(got[i], want[i], e.tolerance * std::max(1.0, scale))
          << what << " at " << i;
    }
  }
}

class Conformance : public ::testing::TestWithParam<Case> {};

TEST_P(Conformance, Op) {
  const Case &c = GetParam();
  if (c.check == Check::Estimate) {
    const OpCase small = c.row->make(c.type, c.tiles, 1);
    const Machine m{c.tiles, small.replicas};
    const auto first = stepEstimates(m, small);
    const auto total = [](const std::vector<std::uint64_t> &v) {
      return std::accumulate(v.begin(), v.end(), std::uint64_t(0));
    };
    for (std::size_t k = 0; k < first.size(); ++k)
      EXPECT_GT(first[k], 0u) << "step " << k;
    EXPECT_GT(total(first), 0u);
    EXPECT_EQ(stepEstimates(m, small), first) << "a second compile differs";
    const OpCase large = c.row->make(c.type, c.tiles, 2);
    EXPECT_GT(total(stepEstimates({c.tiles, large.replicas}, large)),
              total(first))
        << "twice the size is not estimated slower";
    return;
  }
  const OpCase op = c.row->make(c.type, c.tiles, 1);
  const Outcome o = runCase({c.tiles, op.replicas}, op);
  ASSERT_EQ(o.outputs.size(), op.expected.size());
  for (std::size_t k = 0; k < op.expected.size(); ++k)
    for (unsigned r = 0; r < op.replicas; ++r)
      expectOutput(o.outputs[k][r], op.expected[k], r,
                   "output " + std::to_string(k) + " on replica " +
                       std::to_string(r));
  if (op.check)
    op.check(o);
}

INSTANTIATE_TEST_SUITE_P(Forward, Conformance,
                         ::testing::ValuesIn(runCases(Kind::Forward)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Gradient, Conformance,
                         ::testing::ValuesIn(runCases(Kind::Gradient)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Estimate, Conformance,
                         ::testing::ValuesIn(estimateCases()), caseName);

TEST(ConformanceTable, EveryRowHasAUniqueNameTypesAndABuilder) {
  std::set<std::string> names;
  for (const Row &row : allRows()) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_FALSE(row.types.empty()) << row.name;
    EXPECT_TRUE(bool(row.make)) << row.name;
  }
}

// The enumerations of operations each have their rows, so an operation
// added to one of them without a row fails here.
TEST(ConformanceTable, EveryOperationOfEveryEnumerationHasARow) {
  std::set<std::string> names;
  for (const Row &row : allRows())
    names.insert(row.name);
  std::vector<std::string> want;
#define TESSERA_UNARY(E, n, N, k, g) want.push_back(#n);
#define TESSERA_PREDICATE(E, n, N, k) want.push_back(#n);
#define TESSERA_BINARY(E, n, N, k, ga, gb) want.push_back(#n);
#define TESSERA_COMPARE(E, n, N, k) want.push_back(#n);
#include "tessera/ops/Elementwise.def"
  for (auto op : {ops::Operation::ADD, ops::Operation::MUL, ops::Operation::MIN,
                  ops::Operation::MAX, ops::Operation::SQUARE_ADD,
                  ops::Operation::LOG_ADD, ops::Operation::LOGICAL_AND,
                  ops::Operation::LOGICAL_OR})
    want.push_back("reduce_" + std::string(ops::operationName(op)));
  for (auto nl :
       {ops::NonLinearityType::RELU, ops::NonLinearityType::GELU,
        ops::NonLinearityType::SIGMOID, ops::NonLinearityType::TANH,
        ops::NonLinearityType::SOFTMAX, ops::NonLinearityType::SOFTMAX_STABLE,
        ops::NonLinearityType::LOG_SOFTMAX}) {
    want.push_back("nonLinearity_" + std::string(ops::nonLinearityName(nl)));
    want.push_back("nonLinearityInputGradient_" +
                   std::string(ops::nonLinearityName(nl)));
  }
  for (auto t :
       {ops::PoolingType::MAX, ops::PoolingType::AVG, ops::PoolingType::SUM})
    want.push_back(std::string("pool_") + ops::poolingTypeName(t));
  for (const char *op : {"ADD", "MEAN", "MUL", "MIN", "MAX", "SQUARE_ADD",
                         "LOGICAL_AND", "LOGICAL_OR"})
    want.push_back(std::string("allReduce_") + op);
  for (const std::string &name : want)
    EXPECT_TRUE(names.count(name)) << "no conformance row for " << name;
}

} // namespace
} // namespace tessera::conformance
