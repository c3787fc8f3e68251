// Graph building: variables, constants, tile mappings, vertices and their
// fields, handles.
#include "tessera/graph/Graph.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

using namespace tessera;
using ::testing::HasSubstr;

namespace {
Target smallTarget(unsigned tiles = 8) {
  return Target::createIPUTarget(1, "ipu2",
                                 {{"tilesPerIPU", std::to_string(tiles)}});
}
} // namespace

TEST(GraphMapping, SetAndGetTileMappingOfViews) {
  Graph g(smallTarget());
  Tensor m = g.addVariable(FLOAT, {4, 4}, "m");
  for (unsigned r = 0; r < 4; ++r)
    g.setTileMapping(m[r], r);
  TileMapping byRow = g.getTileMapping(m);
  EXPECT_EQ(byRow[2], (std::vector<Interval>{{8, 12}}));
  // Column 1 of the transpose view touches every tile once.
  TileMapping col = g.getTileMapping(m.transpose()[1]);
  for (unsigned t = 0; t < 4; ++t)
    EXPECT_EQ(col[t], (std::vector<Interval>{{t, t + 1}}));
}

TEST(GraphMapping, RemappingPartOfAVariableKeepsTheRest) {
  Graph g(smallTarget());
  Tensor v = g.addVariable(INT, {10}, "v");
  g.setTileMapping(v, 0);
  g.setTileMapping(v.slice(3, 6), 5);
  TileMapping m = g.getTileMapping(v);
  EXPECT_EQ(m[0], (std::vector<Interval>{{0, 3}, {6, 10}}));
  EXPECT_EQ(m[5], (std::vector<Interval>{{3, 6}}));
}

TEST(GraphMapping, UnmappedElementsAreReported) {
  Graph g(smallTarget());
  Tensor v = g.addVariable(FLOAT, {4}, "late");
  g.setTileMapping(v.slice(0, 2), 1);
  try {
    g.getTileMapping(v);
    FAIL();
  } catch (const GraphError &e) {
    EXPECT_THAT(e.what(), HasSubstr("\"late\" element 2 is not mapped"));
  }
  EXPECT_TRUE(g.getTileMapping(v, false)[0].empty());
}

TEST(GraphMapping, TileOutOfRangeSaysTheRange) {
  Graph g(smallTarget(8));
  Tensor v = g.addVariable(FLOAT, {4}, "v");
  try {
    g.setTileMapping(v, 8);
    FAIL();
  } catch (const GraphError &e) {
    EXPECT_THAT(e.what(), HasSubstr("tile 8 is out of range"));
    EXPECT_THAT(e.what(), HasSubstr("0..7"));
  }
}

TEST(GraphMapping, MapTensorLinearlySpreadsInGrains) {
  Graph g(smallTarget(4));
  Tensor v = g.addVariable(FLOAT, {100}, "v");
  mapTensorLinearly(g, v, 1, 8);
  TileMapping m = g.getTileMapping(v);
  // 13 grains of 8 over 4 tiles: 4 grains (32 elements) a tile.
  EXPECT_EQ(m[0], (std::vector<Interval>{{0, 32}}));
  EXPECT_EQ(m[3], (std::vector<Interval>{{96, 100}}));
}

TEST(GraphConstants, CloneKeepsShapeAndMapping) {
  Graph g(smallTarget());
  Tensor c = g.addConstant<float>(HALF, {2, 2}, {1.0f, 2.0f, 3.0f, 4.0f}, "c");
  g.setTileMapping(c[0], 1);
  g.setTileMapping(c[1], 2);
  Tensor k = g.clone(c, "k");
  EXPECT_EQ(k.shape(), c.shape());
  EXPECT_EQ(k.elementType(), HALF);
  EXPECT_EQ(g.getTileMapping(k), g.getTileMapping(c));
  const VariableData &var = g.data().variables[c.runs()[0].var];
  EXPECT_TRUE(var.isConstant);
  ASSERT_EQ(var.initialValue.size(), 8u);
  EXPECT_EQ(static_cast<float>(Half::fromBits(
                static_cast<std::uint16_t>(var.initialValue[6]) |
                static_cast<std::uint16_t>(var.initialValue[7]) << 8)),
            4.0f);
}

TEST(GraphClone, AViewOfOneWholeVariableKeepsItsOrderInMemory) {
  Graph g(smallTarget());
  Tensor v = g.addVariable(FLOAT, {8}, "v");
  g.setTileMapping(v.slice(0, 4), 0);
  g.setTileMapping(v.slice(4, 8), 1);
  // t is the transpose of a 4x2 view: its elements are not in v's order...
  const Tensor t = v.reshape({4, 2}).transpose();
  const Tensor c = g.clone(t, "c");
  EXPECT_EQ(c.shape(), t.shape());
  EXPECT_EQ(g.getTileMapping(c), g.getTileMapping(t));
  // ...and so is element i of the clone, of its own variable.
  ASSERT_EQ(c.runs().size(), t.runs().size());
  for (std::size_t i = 0; i < t.runs().size(); ++i) {
    tessera::Run r = t.runs()[i];
    r.var = c.runs()[0].var;
    EXPECT_EQ(c.runs()[i], r);
  }
  EXPECT_NE(c.runs()[0].var, v.runs()[0].var);
  // A view of part of a variable is cloned into a new one in its own order.
  EXPECT_TRUE(g.clone(v.slice(2, 6)).isContiguous());
}

TEST(GraphClone, AViewNamingAnElementTwiceIsClonedInItsOwnOrder) {
  Graph g(smallTarget());
  Tensor v = g.addVariable(FLOAT, {6}, "v");
  g.setTileMapping(v, 0);
  // Six elements of v, but 2 and 3 twice (in runs of either direction, and
  // with a stride) and 0 and 5 not at all: no view of one variable.
  for (const Tensor &t :
       {concat(v.slice(1, 4), v.slice(2, 5)),
        concat(v.slice(1, 4), v.slice(2, 5).reverse(0)),
        concat(v.slice(2, 4).reverse(0), v.slice(1, 5)),
        concat(v.slice(1, 5).subSample(2, 0), v.slice(1, 5))}) {
    const Tensor c = g.clone(t.reshape({2, 3}), "c");
    EXPECT_TRUE(c.isContiguous()) << t;
  }
  // Reversed and strided runs that name each element once keep the order.
  for (const Tensor &t : {concat(v.slice(3, 6), v.slice(0, 3).reverse(0)),
                          v.reshape({3, 2}).transpose().flatten()}) {
    const Tensor c = g.clone(t);
    ASSERT_EQ(c.runs().size(), t.runs().size()) << t;
    EXPECT_EQ(c.runs()[0].start, t.runs()[0].start) << t;
  }
}

TEST(GraphConstants, ValueCountMustMatchTheShape) {
  Graph g(smallTarget());
  EXPECT_THROW(g.addConstant<float>(FLOAT, {3}, std::vector<float>{1, 2}),
               ShapeError);
  Tensor v = g.addVariable(FLOAT, {3}, "v");
  EXPECT_THROW(g.setInitialValue(v, std::vector<float>{1, 2}), ShapeError);
}

TEST(GraphConstants, InitialValuesLandWhereEachViewElementLies) {
  // Runs of consecutive, reversed, strided and repeated-variable elements:
  // value i goes to the variable element that view element i names.
  Graph g(smallTarget());
  Tensor v = g.addVariable(INT, {10}, "v");
  const Tensor view = concat({v.slice(6, 10), v.slice(0, 3).reverse(0),
                              v.slice(3, 6).subSample(2, 0)});
  g.setInitialValue(view, std::vector<int>{10, 11, 12, 13, 14, 15, 16, 17, 18});
  const VariableData &var = g.data().variables[v.runs()[0].var];
  ASSERT_EQ(var.initialValue.size(), 10 * sizeof(int));
  std::vector<int> got(10);
  std::memcpy(got.data(), var.initialValue.data(), 10 * sizeof(int));
  EXPECT_EQ(got, (std::vector<int>{16, 15, 14, 17, 0, 18, 10, 11, 12, 13}));
}

TEST(GraphConstants, OneInitialValueFillsEveryViewElement) {
  // Whole runs of odd lengths and strided ones; elements outside the view
  // stay zero. Float to half converts as a list of the values would.
  Graph g(smallTarget());
  Tensor v = g.addVariable(HALF, {23}, "v");
  const Tensor view =
      concat({v.slice(0, 13), v.slice(13, 23).subSample(3, 0).reverse(0)});
  g.setInitialValue(view, 1.5f);
  const VariableData &var = g.data().variables[v.runs()[0].var];
  ASSERT_EQ(var.initialValue.size(), 23 * typeSize(HALF));
  std::vector<float> got(23);
  convertElements(HALF, var.initialValue.data(), FLOAT, got.data(), 23);
  std::vector<float> want(23, 0.0f);
  for (std::size_t i = 0; i < 13; ++i)
    want[i] = 1.5f;
  for (std::size_t i : {13, 16, 19, 22})
    want[i] = 1.5f;
  EXPECT_EQ(got, want);
}

TEST(GraphHandles, HandlesAreUnique) {
  Graph g(smallTarget());
  Tensor v = g.addVariable(FLOAT, {3}, "v");
  g.addHostToDeviceFIFO("data", FLOAT, 3);
  EXPECT_THROW(g.createHostWrite("data", v), GraphError);
  EXPECT_THROW(g.addDeviceToHostFIFO("data", FLOAT, 3), GraphError);
  EXPECT_THROW(g.addRemoteBuffer("rb", FLOAT, 0), GraphError);
}

TEST(GraphReplication, ReplicaTargetSplitsTheIpus) {
  Graph g(Target::createIPUTarget(4, "ipu2"), replication_factor(2));
  EXPECT_EQ(g.getTarget().getNumIPUs(), 2u);
  EXPECT_EQ(g.getReplicationFactor(), 2u);
  EXPECT_THROW(Graph(Target::createIPUTarget(4, "ipu2"), replication_factor(3)),
               GraphError);
}

namespace {

// One list of vectors, one list of single elements and a scalar.
const char *kListCodelet = R"(
#include <poplar/Vertex.hpp>
using namespace poplar;
class Lists : public Vertex {
public:
  Vector<Input<Vector<float>>> rows;
  Vector<Input<float>> xs;
  Output<float> out;
  bool compute() {
    *out = 0;
    return true;
  }
};
)";

const FieldBinding &binding(const Graph &g, VertexRef v,
                            const std::string &name) {
  const VertexData &d = g.data().vertices.at(v.getId());
  const auto &fields = d.vertexClass->info.fields;
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (fields[i].name == name)
      return d.fields[i];
  throw std::runtime_error("no field " + name);
}

} // namespace

TEST(GraphConnect, ListsAreStoredInOrderWithoutSpareCapacity) {
  Graph g(smallTarget());
  g.addCodeletSource(kListCodelet, "lists");
  Tensor in = g.addVariable(FLOAT, {10}, "in");
  ComputeSet cs = g.addComputeSet("cs");
  VertexRef v = g.addVertex(cs, "Lists");
  const std::vector<Tensor> rows{in.slice(0, 3), in.slice(3, 4),
                                 in.slice(4, 10)};
  g.connect(v["rows"], rows);
  const FieldBinding &r = binding(g, v, "rows");
  EXPECT_TRUE(r.connected);
  ASSERT_EQ(r.tensors.size(), 3u);
  EXPECT_EQ(r.tensors.capacity(), 3u);
  for (std::size_t i = 0; i < rows.size(); ++i)
    EXPECT_EQ(r.tensors[i].runs(), rows[i].runs());

  // A list of single elements connected to a whole tensor: one each.
  g.connect(v["xs"], in.slice(2, 6));
  const FieldBinding &xs = binding(g, v, "xs");
  ASSERT_EQ(xs.tensors.size(), 4u);
  EXPECT_EQ(xs.tensors.capacity(), 4u);
  EXPECT_EQ(xs.tensors[1].runs(), in.slice(3, 4).runs());

  // One by one up to a declared size: the vector is that size.
  VertexRef w = g.addVertex(cs, "Lists");
  g.setFieldSize(w["xs"], 5);
  for (std::size_t i = 0; i < 5; ++i)
    g.connect(w["xs"][i], in.slice(i, i + 1));
  const FieldBinding &one = binding(g, w, "xs");
  ASSERT_EQ(one.tensors.size(), 5u);
  EXPECT_EQ(one.tensors.capacity(), 5u);
  EXPECT_EQ(one.tensors[4].runs(), in.slice(4, 5).runs());
}

TEST(GraphConnect, ListElementErrorsNameTheFieldAndTheProblem) {
  Graph g(smallTarget());
  g.addCodeletSource(kListCodelet, "lists");
  Tensor f = g.addVariable(FLOAT, {10}, "f");
  Tensor i = g.addVariable(INT, {2}, "i");
  VertexRef v = g.addVertex(g.addComputeSet("cs"), "Lists");
  auto message = [](auto &&fn) {
    try {
      fn();
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] {
              g.connect(v["rows"], {f.slice(0, 2), i});
            }),
            "connect Lists.rows: the field holds float but the tensor holds "
            "int");
  EXPECT_THROW(g.connect(v["rows"], {f.slice(0, 2), i}), TypeError);
  EXPECT_EQ(message([&] {
              g.connect(v["xs"], {f[0], f.slice(1, 3)});
            }),
            "connect Lists.xs: the field is a single element but the tensor "
            "has 2 (shape [2])");
  EXPECT_EQ(message([&] { g.connect(v["rows"], f); }),
            "connect Lists.rows: the field is a list of vectors; connect a "
            "std::vector of tensors, or connect v[\"rows\"][i] one by one");
  g.setFieldSize(v["rows"], 2);
  EXPECT_EQ(message([&] {
              g.connect(v["rows"], {f, f, f});
            }),
            "connect Lists.rows: the field size is 2 but 3 tensors were given");
  EXPECT_EQ(message([&] { g.connect(v["rows"][2], f); }),
            "connect Lists.rows: index 2 is beyond the field size 2 set with "
            "setFieldSize");
  EXPECT_EQ(message([&] { g.connect(v["out"][0], f[0]); }),
            "connect Lists.out: the field is not a list; connect it without "
            "an index");
  EXPECT_EQ(message([&] { g.setFieldSize(v["rows"], std::size_t{1} << 32); }),
            "setFieldSize Lists.rows: the size 4294967296 is beyond the "
            "largest field size, 4294967294");
}
