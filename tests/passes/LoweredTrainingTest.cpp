// Forward and backward passes built by autodiff, lowered and run on the IPU
// Model, agree with the double-precision interpreter; and the interpreter
// can train a model on the host.
#include "GradientCheck.hpp"
#include "ir/LoweringTestUtil.hpp"

#include <gtest/gtest.h>

using namespace tessera;
using namespace tessera::ir;

namespace {

struct Model {
  Module m;
  Value loss, accuracy;
  passes::Gradients grads;
  Feeds feeds;
};

void buildMlp(Model &mdl, bool sharded) {
  Builder b(mdl.m);
  const std::size_t batch = 16, in = 24, hidden = 32, classes = 10;
  Value x = b.input("x", FLOAT, {batch, in});
  Value labels = b.input("labels", INT, {batch});
  Value w1 = b.variable("w1", {in, hidden}, init::glorotUniform(1));
  Value b1 = b.variable("b1", {hidden}, init::constant(0.1));
  Value w2 = b.variable("w2", {hidden, hidden}, init::heNormal(2));
  Value b2 = b.variable("b2", {hidden}, init::zeros());
  Value w3 = b.variable("w3", {hidden, classes}, init::glorotNormal(3));
  Value b3 = b.variable("b3", {classes}, init::zeros());
  Value h;
  {
    ShardScope s(b, 0);
    h = relu(matmul(x, w1) + b1);
  }
  {
    ShardScope s(b, sharded ? 1 : 0);
    h = gelu(matmul(h, w2) + b2);
    Value logits = matmul(h, w3) + b3;
    mdl.loss = reduceMean(sparseSoftmaxCrossEntropy(logits, labels));
    mdl.accuracy = accuracy(logits, labels);
  }
  b.output("loss", mdl.loss);
  mdl.grads = passes::autodiff(mdl.m, mdl.loss);
  mdl.feeds["x"] = {FLOAT, {batch, in}, test::testValues(batch * in, 7)};
  std::vector<double> l(batch);
  for (std::size_t i = 0; i < batch; ++i)
    l[i] = double((i * 3) % classes);
  mdl.feeds["labels"] = {INT, {batch}, l};
}

void expectLoweredMatchesInterpreter(const Model &mdl, unsigned ipus,
                                     double rel) {
  std::vector<ValueId> read{mdl.loss.id(), mdl.accuracy.id()};
  for (const auto &[v, g] : mdl.grads.entries())
    read.push_back(g.id());
  const Evaluation want = interpret(mdl.m, mdl.feeds);
  test::LoweredRun got = test::runLowered(mdl.m, mdl.feeds, read, ipus, 16);
  for (ValueId id : read)
    test::expectClose(got.values.at(id), want.at(id), rel, mdl.m.describe(id));
}

} // namespace

TEST(LoweredTraining, MlpForwardAndBackwardMatchTheInterpreter) {
  Model mdl;
  buildMlp(mdl, false);
  ASSERT_EQ(mdl.grads.entries().size(), 6u);
  expectLoweredMatchesInterpreter(mdl, 1, 1e-5);
}

TEST(LoweredTraining, ShardedMlpForwardAndBackwardMatchTheInterpreter) {
  Model mdl;
  buildMlp(mdl, true);
  expectLoweredMatchesInterpreter(mdl, 2, 1e-5);
}

TEST(LoweredTraining, CnnForwardAndBackwardMatchTheInterpreter) {
  Model mdl;
  Builder b(mdl.m);
  Value x = b.input("x", FLOAT, {4, 3, 8, 8});
  Value labels = b.input("labels", INT, {4});
  Value k1 = b.variable("k1", {8, 3, 3, 3}, init::heNormal(1));
  Value g1 = b.variable("g1", {8}, init::ones());
  Value be1 = b.variable("be1", {8}, init::zeros());
  Value k2 = b.variable("k2", {8, 4, 3, 3}, init::heUniform(2));
  Value w = b.variable("w", {8, 5}, init::glorotUniform(3));
  Value h = conv2d(x, k1, {.padLower = {1, 1}, .padUpper = {1, 1}});
  h = relu(batchNorm(h, g1, be1).y);
  h = maxPool(h, {.kernel = {2, 2}, .strides = {2, 2}});
  h = conv2d(
      h, k2,
      {.strides = {2, 2}, .padLower = {1, 1}, .padUpper = {0, 0}, .groups = 2});
  h = dropout(tanh(h), 0.2, 11);
  h = avgPool(h, {.kernel = {2, 2}, .strides = {1, 1}, .padUpper = {1, 1}});
  h = maxPool(h, {.kernel = {2, 2}, .strides = {2, 2}});
  Value logits = matmul(flatten(h), w);
  mdl.loss = reduceMean(sparseSoftmaxCrossEntropy(logits, labels));
  mdl.accuracy = accuracy(logits, labels);
  mdl.grads = passes::autodiff(mdl.m, mdl.loss);
  mdl.feeds["x"] = {FLOAT, {4, 3, 8, 8}, test::testValues(4 * 3 * 64, 5)};
  mdl.feeds["labels"] = {INT, {4}, {1, 4, 0, 2}};
  expectLoweredMatchesInterpreter(mdl, 1, 1e-4);
}

TEST(LoweredTraining, InterpreterSgdLowersTheLoss) {
  Model mdl;
  buildMlp(mdl, false);
  Feeds feeds = mdl.feeds;
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    const Evaluation e = interpret(mdl.m, feeds);
    (step == 0 ? first : last) = e[mdl.loss].values[0];
    for (const auto &[v, g] : mdl.grads.entries()) {
      HostValue p = e[v];
      for (std::size_t i = 0; i < p.values.size(); ++i)
        p.values[i] -= 0.5 * e[g].values[i];
      feeds[v.name()] = p;
    }
  }
  EXPECT_LT(last, 0.5 * first);
}
