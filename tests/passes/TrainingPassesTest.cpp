// The training pass pipeline: the same module as the passes called one by
// one, verified and dumped after each pass (TESSERA_DUMP_IR), and its
// errors.
#include "tessera/passes/TrainingPasses.hpp"

#include "tessera/ir/Text.hpp"
#include "tessera/support/File.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::passes;
using ::testing::HasSubstr;

namespace {

// A linear model with the loss as its output "loss".
Module forward() {
  Module m("dense/train");
  Builder b(m);
  Value x = b.input("x", FLOAT, {4, 3});
  Value y = b.input("y", FLOAT, {4, 1});
  Value w = b.variable("w", {3, 1}, init::glorotUniform(7));
  Value bias = b.variable("b", {1}, init::zeros());
  b.output("loss", reduceMean(meanSquaredError(matmul(x, w) + bias, y)));
  return m;
}

TrainingPassOptions options() {
  TrainingPassOptions o;
  o.training.optimizer = SGD{0.1, 0.9};
  o.training.lossScaling = 8;
  o.accumulation.count = 3;
  return o;
}

struct TempFolder {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("tessera-passes-" + std::to_string(::getpid()));
  TempFolder() { std::filesystem::remove_all(path); }
  ~TempFolder() { std::filesystem::remove_all(path); }
};

} // namespace

TEST(TrainingPasses, BuildTheModuleThePassesBuildOneByOne) {
  Module byHand = forward();
  const TrainingPassOptions o = options();
  makeTrainingStep(byHand, Builder(byHand).value(byHand.output("loss")),
                   o.training);
  accumulateGradients(byHand, o.accumulation);
  Module piped = forward();
  runTrainingPasses(piped, o, {});
  EXPECT_EQ(print(piped), print(byHand));
  // Weights, momentum, accumulators and the counter are all recorded.
  EXPECT_EQ(piped.updates().size(), 7u);
  EXPECT_EQ(piped.gradients().size(), 2u);
  EXPECT_EQ(piped.states().size(), 2u);
}

TEST(TrainingPasses, DumpTheModuleBeforeAndAfterEachPass) {
  TempFolder dir;
  PassManagerOptions manager;
  manager.dumpDirectory = (dir.path / "ir").string();
  Module m = forward();
  runTrainingPasses(m, options(), manager);
  const char *names[] = {
      "dense_train.00.input.ir", "dense_train.01.autodiff.ir",
      "dense_train.02.optimizer.ir", "dense_train.03.gradient-accumulation.ir"};
  std::size_t previousOps = 0;
  for (const char *name : names) {
    const std::string text = readFile((dir.path / "ir" / name).string());
    const Module dumped = parse(text);
    EXPECT_GE(dumped.ops().size(), previousOps) << name;
    previousOps = dumped.ops().size();
  }
  EXPECT_EQ(readFile((dir.path / "ir" / names[3]).string()), print(m));
}

TEST(TrainingPasses, TheDumpFolderComesFromTesseraDumpIr) {
  ::setenv("TESSERA_DUMP_IR", "/tmp/somewhere", 1);
  EXPECT_EQ(PassManagerOptions::fromEnvironment().dumpDirectory,
            "/tmp/somewhere");
  ::unsetenv("TESSERA_DUMP_IR");
  EXPECT_EQ(PassManagerOptions::fromEnvironment().dumpDirectory, "");
}

TEST(TrainingPasses, AnUnwritableDumpFolderIsAnError) {
  TempFolder dir;
  std::filesystem::create_directories(dir.path);
  writeFileAtomically((dir.path / "file").string(), "x");
  PassManagerOptions manager;
  manager.dumpDirectory = (dir.path / "file" / "ir").string();
  Module m = forward();
  try {
    runTrainingPasses(m, options(), manager);
    ADD_FAILURE() << "dumped into a folder under a file";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot write IR dumps into"));
    EXPECT_THAT(e.what(), HasSubstr("set TESSERA_DUMP_IR to a folder"));
  }
}

TEST(TrainingPasses, TheOptimizerNeedsRecordedGradients) {
  Module m = forward();
  OptimizerPass optimizer(TrainingOptions{});
  try {
    optimizer.run(m);
    ADD_FAILURE() << "the optimizer ran without gradients";
  } catch (const IrError &e) {
    EXPECT_THAT(e.what(), HasSubstr("has no recorded gradients; run the "
                                    "autodiff pass"));
  }
}
