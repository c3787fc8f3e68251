// The options every op accepts: a misspelled key is an OptionError naming
// the key it was probably meant to be, and PopLibs-only keys (documented in
// each op's header as accepted and ignored) change neither the results nor
// the estimates.
#include "OpsTestUtil.hpp"

#include "tessera/ops/Collectives.hpp"
#include "tessera/ops/Conv.hpp"
#include "tessera/ops/DynamicSlice.hpp"
#include "tessera/ops/Elementwise.hpp"
#include "tessera/ops/MatMul.hpp"
#include "tessera/ops/Pooling.hpp"
#include "tessera/ops/Reduce.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tessera;
using namespace tessera::ops;
using tessera::test::HostTensor;
using tessera::test::runOp;
using tessera::test::spread;
using ::testing::HasSubstr;

namespace {

// One op of each family over inputs[0] (and inputs[1]), with \p options.
using Family =
    std::function<Tensor(Graph &, const std::vector<Tensor> &,
                         program::Sequence &, const OptionFlags &options)>;

struct Case {
  const char *name;
  std::vector<HostTensor> inputs;
  Family op;
  OptionFlags misspelled;  ///< one key with a typo
  std::string meant;       ///< the key the typo is close to
  OptionFlags popLibsOnly; ///< every key the op accepts and ignores
};

HostTensor floats(std::vector<std::size_t> shape) {
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  return {FLOAT, std::move(shape), spread(n, -1, 1)};
}

PoolParams poolParams() {
  return PoolParams(PoolingType::MAX, {6, 6}, {2, 2}, {2, 2}, {0, 0}, {0, 0}, 3,
                    2, FLOAT);
}

ConvParams convParams() {
  return ConvParams(FLOAT, 2, {6, 6}, {3, 3}, 3, 4, 1);
}

std::vector<Case> cases() {
  return {
      {"matMul",
       {floats({8, 16}), floats({16, 4})},
       [](Graph &g, const std::vector<Tensor> &in, program::Sequence &p,
          const OptionFlags &o) {
         return matMul(g, in[0], in[1], p, FLOAT, {}, o);
       },
       {{"availableMemoryProportoin", "0.5"}},
       "availableMemoryProportion",
       {{"fullyConnectedPass", "TRAINING_FWD"},
        {"inputRHSIsPreArranged", "false"},
        {"use128BitConvUnitLoad", "true"},
        {"enableMultiStageReduce", "false"},
        {"enableFastReduce", "true"},
        {"remapOutputTensor", "false"},
        {"gatherOutput", "true"},
        {"planConstraints", "{}"}}},
      {"convolution",
       {floats({2, 3, 6, 6}), floats({1, 4, 3, 3, 3})},
       [](Graph &g, const std::vector<Tensor> &in, program::Sequence &p,
          const OptionFlags &o) {
         return convolution(g, in[0], in[1], convParams(), false, p, {}, o);
       },
       {{"partialType", "float"}},
       "partialsType",
       {{"pass", "TRAINING_FWD"},
        {"use128BitConvUnitLoad", "true"},
        {"enableMultiStageReduce", "false"},
        {"enableFastReduce", "true"},
        {"remapOutputTensor", "false"},
        {"enableConvDithering", "true"},
        {"gatherConvOutput", "true"},
        {"planConstraints", "{}"}}},
      {"map",
       {floats({4, 8}), floats({4, 8})},
       [](Graph &g, const std::vector<Tensor> &in, program::Sequence &p,
          const OptionFlags &o) {
         return map(g, expr::_1 + expr::_2, {in[0], in[1]}, p, {}, o);
       },
       {{"enableGenerateCodlet", "true"}},
       "enableGenerateCodelet",
       {{"enableGenerateCodelet", "false"},
        {"forceGenerateCodelet", "true"},
        {"enableExpressionOptimizations", "false"},
        {"enableVectorBroadcastOptimisations", "false"}}},
      {"pool",
       {floats({2, 3, 6, 6})},
       [](Graph &g, const std::vector<Tensor> &in, program::Sequence &p,
          const OptionFlags &o) {
         return pool(g, poolParams(), in[0], p, {}, o);
       },
       {{"optimiseForSpeed", "true"}},
       "optimizeForSpeed",
       {{"poolUseIntrospectiveMapping", "false"},
        {"optimizeForSpeed", "true"}}},
      {"reduce",
       {floats({6, 40})},
       [](Graph &g, const std::vector<Tensor> &in, program::Sequence &p,
          const OptionFlags &o) {
         return reduce(g, in[0], {0}, ReduceParams(Operation::ADD), p, {}, o);
       },
       {{"accumType.interTle", "float"}},
       "accumType.interTile",
       {{"accumType.inVertex", "half"}}},
      {"dynamicSlice",
       {floats({10, 4}), {UNSIGNED_INT, {1}, {3}}},
       [](Graph &g, const std::vector<Tensor> &in, program::Sequence &p,
          const OptionFlags &o) {
         return dynamicSlice(g, in[0], in[1], {0}, {2}, p, {}, o);
       },
       {{"usedForSlise", "true"}},
       "usedForSlice",
       {{"availableMemoryProportion", "0.2"},
        {"indicesAreSorted", "true"},
        {"usedForSlice", "true"},
        {"usedForUpdate", "false"},
        {"operationForUpdate", "none"},
        {"partialType", "float"},
        {"planConstraints", "{}"}}},
  };
}

std::string optionError(const Case &c, const OptionFlags &options) {
  try {
    runOp(4, c.inputs,
          [&](Graph &g, const std::vector<Tensor> &in, program::Sequence &p) {
            return std::vector<Tensor>{c.op(g, in, p, options)};
          });
  } catch (const OptionError &e) {
    return e.what();
  }
  return "no OptionError";
}

} // namespace

TEST(OpOptions, AMisspelledKeyNamesTheKeyItResembles) {
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(optionError(c, c.misspelled),
                HasSubstr("did you mean \"" + c.meant + "\"?"));
  }
}

TEST(OpOptions, PopLibsOnlyKeysChangeNeitherResultsNorEstimates) {
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    auto run = [&](const OptionFlags &options) {
      return runOp(
          4, c.inputs,
          [&](Graph &g, const std::vector<Tensor> &in, program::Sequence &p) {
            return std::vector<Tensor>{c.op(g, in, p, options)};
          });
    };
    const test::RunResult plain = run({});
    const test::RunResult tuned = run(c.popLibsOnly);
    EXPECT_EQ(tuned.outputs, plain.outputs);
    EXPECT_EQ(tuned.cycles, plain.cycles);
  }
}

TEST(OpOptions, IgnoredKeysStillCheckTheirValues) {
  const Case map = cases()[2];
  EXPECT_THAT(optionError(map, {{"enableGenerateCodelet", "sometimes"}}),
              HasSubstr("expected one of \"true\" or \"false\" (the option "
                        "is accepted and ignored)"));
  const Case matMul = cases()[0];
  EXPECT_THAT(optionError(matMul, {{"fullyConnectedPass", "TRAINING"}}),
              HasSubstr("fullyConnectedPass"));
}

TEST(OpOptions, CollectivesAcceptGclsChoiceOfAlgorithm) {
  IPUModel model;
  model.tilesPerIPU = 4;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  addCodelets(g);
  Tensor t = g.addVariable(FLOAT, {8}, VariableMappingMethod::LINEAR);
  program::Sequence p;
  EXPECT_NO_THROW(allReduce(
      g, t, CollectiveOperator::ADD, p, {},
      {{"useReplicatedImplementation", "true"}, {"method", "clockwise_ring"}}));
  try {
    allReduce(g, t, CollectiveOperator::ADD, p, {},
              {{"useReplicatedImplementaton", "true"}});
    ADD_FAILURE() << "no OptionError";
  } catch (const OptionError &e) {
    EXPECT_THAT(e.what(),
                HasSubstr("did you mean \"useReplicatedImplementation\"?"));
  }
  EXPECT_THROW(
      allReduce(g, t, CollectiveOperator::ADD, p, {}, {{"method", "ring"}}),
      OptionError);
}
