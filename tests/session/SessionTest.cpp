// Sessions: a linear model trained on the IPU Model in device loops matches
// the IR interpreter trained on the same batches; the executable cache
// skips compilation; variables survive a checkpoint; bad specs are errors;
// a model of many small layers keeps its busiest tile near the mean.
#include "tessera/session/Session.hpp"

#include "tessera/ir/Interpreter.hpp"
#include "tessera/passes/Optimizer.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

using namespace tessera;
using namespace tessera::session;
using data::HostTensor;
using ::testing::HasSubstr;

namespace {

constexpr std::size_t kBatch = 4, kIn = 3, kBatches = 5;

// loss = mse(x w + b, y), trained by SGD with momentum.
ir::Module linearModel() {
  ir::Module m("linear");
  ir::Builder b(m);
  ir::Value x = b.input("x", FLOAT, {kBatch, kIn});
  ir::Value y = b.input("y", FLOAT, {kBatch, 1});
  ir::Value w = b.variable("w", {kIn, 1}, ir::init::values({0.1, -0.2, 0.3}));
  ir::Value bias = b.variable("b", {1}, ir::init::zeros());
  ir::Value loss = meanSquaredError(matmul(x, w) + bias, y);
  b.output("loss", loss);
  passes::TrainingOptions o;
  o.optimizer = passes::SGD{0.05, 0.5};
  passes::makeTrainingStep(m, loss, o);
  return m;
}

// kBatches batches of y = 2 x0 - x1 + 0.5 x2 + 1.
std::pair<std::vector<float>, std::vector<float>> batches() {
  std::vector<float> xs, ys;
  for (std::size_t i = 0; i < kBatches * kBatch; ++i) {
    const float a = std::sin(float(i)), c = std::cos(float(i)),
                d = float(i % 7) / 7;
    xs.insert(xs.end(), {a, c, d});
    ys.push_back(2 * a - c + 0.5f * d + 1);
  }
  return {xs, ys};
}

data::Dataset dataset() {
  auto [xs, ys] = batches();
  return data::Dataset::fromTensors(
      {HostTensor::fromValues<float>({kBatches, kBatch, kIn}, xs),
       HostTensor::fromValues<float>({kBatches, kBatch, 1}, ys)});
}

Config smallConfig() {
  Config c;
  c.ipuModel.tilesPerIpu = 16;
  return c;
}

const RunSpec kSpec{{"x", "y"}, {"loss"}, kBatches};

std::string tempDir(const std::string &name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("tessera-session-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

} // namespace

TEST(Session, DeviceTrainingMatchesTheInterpreter) {
  Session s(linearModel(), smallConfig(), kSpec);
  s.compile();
  Infeed in(dataset().repeat());
  Outfeed out;
  s.connect(in, out);
  s.run();
  s.run();
  const std::vector<data::Element> losses = out.dequeueAll();
  ASSERT_EQ(losses.size(), 2 * kBatches);

  // The same 10 steps in double precision on the host.
  ir::Module m = linearModel();
  auto [xs, ys] = batches();
  ir::Feeds feeds;
  for (std::size_t step = 0; step < 2 * kBatches; ++step) {
    const std::size_t k = step % kBatches;
    feeds["x"] = {FLOAT,
                  {kBatch, kIn},
                  std::vector<double>(xs.begin() + k * kBatch * kIn,
                                      xs.begin() + (k + 1) * kBatch * kIn)};
    feeds["y"] = {FLOAT,
                  {kBatch, 1},
                  std::vector<double>(ys.begin() + k * kBatch,
                                      ys.begin() + (k + 1) * kBatch)};
    ir::Evaluation e = ir::interpret(m, feeds);
    const double expected = e.output("loss").values[0];
    EXPECT_NEAR(losses[step][0].values<float>()[0], expected,
                1e-4 * std::abs(expected) + 1e-6)
        << "step " << step;
    for (const auto &[var, next] : passes::variableUpdates(m))
      feeds[m.value(var).name] = e.at(next);
  }
  EXPECT_LT(losses.back()[0].values<float>()[0],
            losses.front()[0].values<float>()[0]);
  EXPECT_GT(s.estimatedCyclesPerRun(), 0u);
}

TEST(Session, SecondCompileHitsTheCache) {
  Config c = smallConfig();
  c.executableCachePath = tempDir("cache");
  Session first(linearModel(), c, kSpec);
  EXPECT_FALSE(first.compile());
  Session second(linearModel(), c, kSpec);
  EXPECT_TRUE(second.compile());
  Infeed in(dataset());
  Outfeed out;
  second.connect(in, out);
  second.run();
  EXPECT_EQ(out.size(), kBatches);
  std::filesystem::remove_all(c.executableCachePath);
}

TEST(Session, CacheKeyChangesWithEngineOptionsThatChangeTheCompile) {
  const ir::Module m = linearModel();
  Config c = smallConfig();
  const std::string plain = cacheKey(m, c, kSpec);
  c.engineOptions.set({{"engine.hostKernels", "false"}});
  EXPECT_NE(cacheKey(m, c, kSpec), plain);
  // Threads act only when running: the same executable serves them all.
  Config threads = smallConfig();
  threads.hostThreads = 1;
  EXPECT_EQ(cacheKey(m, threads, kSpec), plain);
}

TEST(Session, EngineThreadsComeFromHostThreadsOrEngineOptions) {
  Config c = smallConfig();
  EXPECT_EQ(engineFlags(c).at("engine.hostThreads"), "0");
  c.engineOptions.set({{"engine.hostThreads", "1"}});
  EXPECT_EQ(engineFlags(c).at("engine.hostThreads"), "1");
  c.hostThreads = 1;
  EXPECT_EQ(engineFlags(c).at("engine.hostThreads"), "1");
  c.hostThreads = 2;
  try {
    engineFlags(c);
    FAIL() << "two thread counts were accepted";
  } catch (const OptionError &e) {
    EXPECT_NE(std::string(e.what()).find("hostThreads is 2 but engineOptions "
                                         "sets engine.hostThreads to 1"),
              std::string::npos)
        << e.what();
  }
}

TEST(Session, VariablesSurviveACheckpoint) {
  const std::string path = tempDir("ckpt") + ".ckpt";
  Session s(linearModel(), smallConfig(), kSpec);
  s.compile();
  Infeed in(dataset());
  Outfeed out;
  s.connect(in, out);
  s.run();
  saveCheckpoint(path, s.readVariables(kBatches));

  Session restored(linearModel(), smallConfig(), kSpec);
  restored.compile();
  restored.writeVariables(loadCheckpoint(path), path);
  const Checkpoint a = s.readVariables(), b = restored.readVariables();
  ASSERT_EQ(a.variables.size(), b.variables.size());
  for (std::size_t i = 0; i < a.variables.size(); ++i)
    EXPECT_EQ(a.variables[i].second, b.variables[i].second);

  // Another model's checkpoint is refused.
  Checkpoint other = a;
  other.model = "other";
  other.variables[0].second = HostTensor(FLOAT, {kIn + 1, 1});
  try {
    restored.writeVariables(other, "other.ckpt");
    FAIL();
  } catch (const SerializationError &e) {
    EXPECT_THAT(e.what(), HasSubstr("does not fit model \"linear\""));
  }
  std::filesystem::remove(path);
}

TEST(Session, ReadsOneVariableAsTheCheckpointHoldsIt) {
  Session s(linearModel(), smallConfig(), kSpec);
  s.compile();
  Infeed in(dataset());
  Outfeed out;
  s.connect(in, out);
  s.run();
  for (const auto &[name, t] : s.readVariables().variables)
    EXPECT_EQ(s.readVariable(name), t) << name;
  EXPECT_THROW(s.readVariable("no_such_variable"), ir::IrError);
  EXPECT_THROW(s.readVariable("x"), ir::IrError); // an input
}

TEST(Session, FeedsAndOutfeedsMustNameTheModulesValues) {
  auto error = [](const RunSpec &spec) {
    try {
      Session s(linearModel(), smallConfig(), spec);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THAT(error({{"x", "z"}, {"loss"}, 1}),
              HasSubstr("feed \"z\" is not an input"));
  EXPECT_THAT(error({{"x"}, {"loss"}, 1}), HasSubstr("input \"y\" is not fed"));
  EXPECT_THAT(error({{"x", "y"}, {"accuracy"}, 1}), HasSubstr("accuracy"));
  EXPECT_THAT(error({{"x", "y"}, {"loss"}, 0}), HasSubstr("stepsPerExecution"));
}

// A stage annotation makes a pipeline (PipelineTest); a @recompute that
// no recomputation pass consumed is an error, not silently ignored.
TEST(Session, RecomputeAnnotationsNoPassConsumedAreErrors) {
  ir::Module m("annotated");
  ir::Builder b(m);
  ir::Value x = b.input("x", FLOAT, {2});
  {
    ir::RecomputeScope r(b);
    b.output("y", relu(x));
  }
  EXPECT_THAT(
      [&] {
        Session s(std::move(m), smallConfig(), {{"x"}, {"y"}, 1});
      },
      ::testing::ThrowsMessage<UnsupportedError>(
          HasSubstr("op 0 (relu %1) is annotated @recompute, but no "
                    "recomputation pass ran on the module")));
}

TEST(Session, FloatingPointFlagsNameTheOpAndTheTrainingStep) {
  ir::Module m("logs");
  ir::Builder b(m);
  ir::Value x = b.input("x", FLOAT, {4});
  b.output("y", log(x));
  Config c = smallConfig();
  c.floatingPointBehaviour.inv = true;
  // Step 4 feeds a negative number, whose log is NaN.
  std::vector<float> xs(5 * 4, 2.0f);
  xs[3 * 4 + 1] = -1.0f;
  Session s(std::move(m), c, {{"x"}, {"y"}, 5});
  s.compile();
  Infeed in(
      data::Dataset::fromTensors({HostTensor::fromValues<float>({5, 4}, xs)}));
  Outfeed out;
  s.connect(in, out);
  try {
    s.run();
    FAIL() << "the NaN went through";
  } catch (const FloatingPointError &e) {
    EXPECT_THAT(e.what(), HasSubstr("at training step 4 (step 4 of run 1)"));
    EXPECT_THAT(e.what(), HasSubstr("invalid operation"));
    EXPECT_THAT(e.what(), HasSubstr("element 1"));
    EXPECT_THAT(e.what(), HasSubstr("compute set \"log/"));
  }
  EXPECT_EQ(out.size(), 3u);
}

TEST(Session, PreCompileFillsTheCacheForALaterSessionToRun) {
  Config c = smallConfig();
  c.executableCachePath = tempDir("precompile");
  c.deviceConnectionType = DeviceConnectionType::PRE_COMPILE;
  Session pre(linearModel(), c, kSpec);
  EXPECT_FALSE(pre.compile());
  EXPECT_FALSE(std::filesystem::is_empty(c.executableCachePath));
  try {
    pre.run();
    FAIL() << "a pre-compiling session ran";
  } catch (const RuntimeError &e) {
    EXPECT_THAT(e.what(), HasSubstr("PRE_COMPILE"));
    EXPECT_THAT(e.what(), HasSubstr(c.executableCachePath));
  }
  // The executable is the one an attached session uses: a cache hit.
  c.deviceConnectionType = DeviceConnectionType::ALWAYS;
  Session later(linearModel(), c, kSpec);
  EXPECT_TRUE(later.compile());
  Infeed in(dataset());
  Outfeed out;
  later.connect(in, out);
  later.run();
  EXPECT_EQ(out.size(), kBatches);
  std::filesystem::remove_all(c.executableCachePath);
}

// A run goes on when its executable cannot be cached; a pre-compile, whose
// only product is the cache entry, must not report success.
TEST(Session, PreCompileThatCannotStoreItsExecutableIsAnError) {
  Config c = smallConfig();
  c.executableCachePath = "/proc/tessera-no-such-folder";
  c.deviceConnectionType = DeviceConnectionType::PRE_COMPILE;
  Session pre(linearModel(), c, kSpec);
  EXPECT_THAT([&] { pre.compile(); },
              ::testing::ThrowsMessage<RuntimeError>(
                  HasSubstr("PRE_COMPILE could not store the executable")));
}

TEST(Session, ConnectionTypesThatCannotCompileSaySo) {
  Config c = smallConfig();
  c.deviceConnectionType = DeviceConnectionType::NEVER;
  Session never(linearModel(), c, kSpec);
  EXPECT_THAT([&] { never.compile(); },
              ::testing::ThrowsMessage<OptionError>(HasSubstr("NEVER")));
  c.deviceConnectionType = DeviceConnectionType::PRE_COMPILE;
  Session noCache(linearModel(), c, kSpec);
  EXPECT_THAT([&] { noCache.compile(); },
              ::testing::ThrowsMessage<OptionError>(
                  HasSubstr("executableCachePath is empty")));
}

namespace {

// Tile memory of one replica's tiles: the busiest tile's total and the
// mean of the tiles used.
std::pair<std::uint64_t, double> busiestAndMean(const Executable &exe) {
  std::uint64_t busiest = 0, sum = 0, used = 0;
  for (const TileMemory &t : exe.tileMemory) {
    busiest = std::max(busiest, t.total());
    sum += t.total();
    used += t.total() != 0;
  }
  return {busiest, used ? double(sum) / double(used) : 0.0};
}

} // namespace

// A model of many small layers trained by Adam with dynamic loss scaling
// (ResNet-50's batch-norm parameters and biases with their optimizer
// state, in miniature): their tensors, the optimizer's vertices on them
// and its scalars spread over the tiles instead of piling onto tile 0.
TEST(Session, SmallLayersDoNotPileOntoOneTile) {
  ir::Module m("deep");
  ir::Builder b(m);
  // 64 x 8 floats: 32 a tile on all 16 tiles.
  ir::Value h = b.input("x", FLOAT, {64, 8});
  ir::Value y = b.input("y", FLOAT, {64, 8});
  for (int i = 0; i < 24; ++i) {
    const std::string n = "layer" + std::to_string(i);
    ir::Value gamma = b.variable(n + "/gamma", {8}, ir::init::constant(1));
    ir::Value beta = b.variable(n + "/beta", {8}, ir::init::zeros());
    h = relu(h * gamma + beta);
  }
  ir::Value loss = meanSquaredError(h, y);
  b.output("loss", loss);
  passes::TrainingOptions o;
  o.optimizer = passes::Adam{0.01};
  o.dynamicLossScaling = passes::DynamicLossScaling{1024, 100};
  passes::makeTrainingStep(m, loss, o);
  Session s(std::move(m), smallConfig(), {{"x", "y"}, {"loss"}, 1});
  s.compile();
  const auto [busiest, mean] = busiestAndMean(s.engine().getExecutable());
  // Measured: 1.17 times the mean; 3.5 (124,400 B on tile 0) with every
  // small tensor mapped from tile 0 and the optimizer's scalars per weight.
  EXPECT_LT(double(busiest), 1.5 * mean)
      << "busiest tile " << busiest << " B, mean " << mean << " B";
}
