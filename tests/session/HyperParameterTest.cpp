// Hyper-parameters written from the host: a learning rate and momentum
// changed between runs give exactly the weights of sessions compiled with
// those values, with and without gradient accumulation (the update under
// its If); the executable does not change with them; checkpoints leave
// them out.
#include "tessera/session/Session.hpp"

#include "tessera/passes/GradientAccumulation.hpp"
#include "tessera/passes/Optimizer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>

using namespace tessera;
using namespace tessera::session;
using data::HostTensor;

namespace {

constexpr std::size_t kMicro = 2, kIn = 3, kPerRun = 4;

// loss = mean((x w + b - y)^2), SGD with momentum; with \p accumulate, the
// weights update once per run of kPerRun micro-batches.
ir::Module linear(double lr, double momentum, bool accumulate) {
  ir::Module m("linear");
  ir::Builder b(m);
  ir::Value x = b.input("x", FLOAT, {kMicro, kIn});
  ir::Value y = b.input("y", FLOAT, {kMicro, 1});
  ir::Value w = b.variable("w", {kIn, 1}, ir::init::values({0.1, -0.2, 0.3}));
  ir::Value bias = b.variable("b", {1}, ir::init::zeros());
  ir::Value loss = reduceMean(meanSquaredError(matmul(x, w) + bias, y));
  b.output("loss", loss);
  passes::makeTrainingStep(m, loss, {.optimizer = passes::SGD{lr, momentum}});
  if (accumulate)
    passes::accumulateGradients(m, {.count = kPerRun});
  return m;
}

// Runs \p run and \p run + 1's micro-batches of y = 2 x0 - x1 + 0.5 x2 + 1.
data::Dataset batches(unsigned run) {
  constexpr std::size_t n = 2 * kPerRun;
  std::vector<float> xs, ys;
  for (std::size_t i = run * kPerRun * kMicro; ys.size() < n * kMicro; ++i) {
    const float a = std::sin(float(i)), c = std::cos(float(i)),
                d = float(i % 7) / 7;
    xs.insert(xs.end(), {a, c, d});
    ys.push_back(2 * a - c + 0.5f * d + 1);
  }
  return data::Dataset::fromTensors(
      {HostTensor::fromValues<float>({n, kMicro, kIn}, xs),
       HostTensor::fromValues<float>({n, kMicro, 1}, ys)});
}

// A compiled session fed with run \p run's batches (then the next run's).
struct Fed {
  Session session;
  Infeed in;
  Outfeed out;
  Fed(const ir::Module &m, unsigned run, const std::string &cache = "")
      : session(m, config(cache), {{"x", "y"}, {"loss"}, kPerRun}),
        in(batches(run)) {
    session.compile();
    session.connect(in, out);
  }
  static Config config(const std::string &cache) {
    Config c;
    c.ipuModel.tilesPerIpu = 16;
    c.executableCachePath = cache;
    return c;
  }
};

const HostTensor &variable(const Checkpoint &c, const std::string &name) {
  for (const auto &[n, t] : c.variables)
    if (n == name)
      return t;
  throw std::runtime_error("no variable " + name);
}

void expectSameWeights(const Checkpoint &a, const Checkpoint &b) {
  for (const char *name : {"w", "b", "w/momentum", "b/momentum"}) {
    const auto x = variable(a, name).values<float>();
    const auto y = variable(b, name).values<float>();
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(x[i], y[i]) << name << "[" << i << "]";
  }
}

class HyperParameters : public ::testing::TestWithParam<bool> {};

} // namespace

// Run 0 at (0.1, 0.9), then (0.03, 0.5) written from the host for run 1:
// bit for bit the weights of a session compiled with (0.03, 0.5) that
// starts run 1 from run 0's weights.
TEST_P(HyperParameters, WrittenBetweenRunsActAsIfCompiledIn) {
  const bool accumulate = GetParam();
  Fed changed(linear(0.1, 0.9, accumulate), 0);
  changed.session.run();
  changed.session.setHyperParameter("learning_rate", 0.03);
  changed.session.setHyperParameter("momentum", 0.5);
  EXPECT_EQ(changed.session.hyperParameter("learning_rate"), 0.03f);
  changed.session.run();

  Fed first(linear(0.1, 0.9, accumulate), 0);
  first.session.run();
  Fed second(linear(0.03, 0.5, accumulate), 1);
  second.session.writeVariables(first.session.readVariables(), "run 0");
  second.session.run();
  expectSameWeights(changed.session.readVariables(),
                    second.session.readVariables());

  // And not those of the first values kept.
  first.session.run();
  EXPECT_NE(variable(first.session.readVariables(), "w").values<float>()[0],
            variable(changed.session.readVariables(), "w").values<float>()[0]);
}

INSTANTIATE_TEST_SUITE_P(Session, HyperParameters, ::testing::Bool(),
                         [](const auto &info) {
                           return info.param ? "WithAccumulation" : "EveryStep";
                         });

TEST(SessionHyperParameters, TheExecutableCacheIgnoresTheirValues) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tessera-hyper-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Fed a(linear(0.1, 0.9, true), 0, dir.string());
  // Another learning rate: the same executable, from the cache, with the
  // new module's values written after loading.
  Session b(linear(0.5, 0.2, true), Fed::config(dir.string()),
            {{"x", "y"}, {"loss"}, kPerRun});
  EXPECT_TRUE(b.compile());
  EXPECT_EQ(b.hyperParameter("learning_rate"), 0.5f);
  EXPECT_EQ(b.hyperParameter("momentum"), 0.2f);
  EXPECT_EQ(a.session.hyperParameter("learning_rate"), 0.1f);
  std::size_t entries = 0;
  for (const auto &e : std::filesystem::recursive_directory_iterator(dir))
    entries += e.is_regular_file();
  EXPECT_EQ(entries, 1u);
  std::filesystem::remove_all(dir);
}

TEST(SessionHyperParameters, CheckpointsLeaveThemOut) {
  Fed a(linear(0.1, 0.9, false), 0);
  a.session.setHyperParameter("learning_rate", 0.25);
  Checkpoint saved = a.session.readVariables();
  for (const auto &[name, t] : saved.variables)
    EXPECT_FALSE(name.starts_with("optimizer/")) << name;
  Fed b(linear(0.1, 0.9, false), 0);
  b.session.setHyperParameter("momentum", 0.75);
  b.session.writeVariables(saved, "saved");
  EXPECT_EQ(b.session.hyperParameter("learning_rate"), 0.1f);
  // Entries for them (a caller listing every variable of the module gives
  // them) are ignored.
  saved.variables.emplace_back("optimizer/momentum",
                               HostTensor::scalar<float>(0));
  b.session.writeVariables(saved, "with the momentum");
  EXPECT_EQ(b.session.hyperParameter("momentum"), 0.75f);
  // Other unknown variables are still errors.
  saved.variables.emplace_back("optimizer/other", HostTensor::scalar<float>(0));
  EXPECT_THROW(b.session.writeVariables(saved, "with another"),
               SerializationError);
}

TEST(SessionHyperParameters, UnknownNamesAndBadValuesAreErrors) {
  Session s(linear(0.1, 0, false), Fed::config(""),
            {{"x", "y"}, {"loss"}, kPerRun});
  EXPECT_THROW(s.setHyperParameter("learning_rate", 0.1), RuntimeError);
  s.compile();
  EXPECT_THAT([&] { s.setHyperParameter("momentum", 0.5); },
              ::testing::ThrowsMessage<OptionError>(::testing::HasSubstr(
                  "has no hyper-parameter \"momentum\"; it has "
                  "\"learning_rate\"")));
  EXPECT_THROW(s.setHyperParameter("learning_rate", std::nan("")), OptionError);
}
