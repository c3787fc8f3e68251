// `tessera poprun` as users run it: `tessera train` as 2 instances through
// mpirun on this host ends with weights bit-identical to the same run in
// one process with as many replicas (the saved checkpoints are compared
// byte for byte); instances started with different options stop at once,
// naming the option; a killed instance stops the run within 10 s, naming
// the instance.
#include "tools/Subprocess.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

using namespace tessera::testing;
using ::testing::HasSubstr;

namespace {

namespace fs = std::filesystem;
const std::string kCli = TESSERA_CLI_PATH;

std::string tempDir(const std::string &name) {
  const fs::path p = fs::temp_directory_path() / ("tessera-dist-" + name + "-" +
                                                  std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

// A few steps of the MLP on a small IPU Model; the executables are cached
// so the runs that share a replica count compile once.
std::vector<std::string> shortRun(const std::string &cache,
                                  const std::string &weights) {
  return {kCli,
          "train",
          "--epochs",
          "1",
          "--train-examples",
          "256",
          "--test-examples",
          "50",
          "--batch-size",
          "16",
          "--tiles",
          "32",
          "--steps-per-execution",
          "2",
          "--cache",
          cache,
          "--save-weights",
          weights};
}

std::vector<std::string> poprun(unsigned instances, unsigned replicas,
                                const std::vector<std::string> &command) {
  std::vector<std::string> argv{kCli,
                                "poprun",
                                "--num-instances",
                                std::to_string(instances),
                                "--num-replicas",
                                std::to_string(replicas),
                                "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::string contents(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Trains in one process with `replicas` replicas and as `instances`
// instances; returns both checkpoints' bytes.
std::pair<std::string, std::string> bothWays(unsigned instances,
                                             unsigned replicas) {
  const std::string dir = tempDir("equal" + std::to_string(replicas));
  std::vector<std::string> single = shortRun(dir, dir + "/single.ckpt");
  single.insert(single.end(), {"--replicas", std::to_string(replicas)});
  const ProcessResult one = runProcess(single, {}, 600);
  EXPECT_EQ(one.exitCode, 0) << one.err;
  const ProcessResult many = runProcess(
      poprun(instances, replicas, shortRun(dir, dir + "/dist.ckpt")), {}, 600);
  EXPECT_EQ(many.exitCode, 0) << many.err;
  EXPECT_THAT(many.out, HasSubstr(std::to_string(replicas) + " replica(s) in " +
                                  std::to_string(instances) + " instance(s)"));
  EXPECT_THAT(many.out, HasSubstr("MPI time per step"));
  return {contents(dir + "/single.ckpt"), contents(dir + "/dist.ckpt")};
}

} // namespace

TEST(Poprun, TwoInstancesOfOneReplicaMatchTwoReplicasBitForBit) {
  const auto [single, dist] = bothWays(2, 2);
  ASSERT_GT(single.size(), 200000u); // the MLP's 235,146 weights and more
  EXPECT_TRUE(single == dist);
}

TEST(Poprun, TwoInstancesOfTwoReplicasMatchFourReplicasBitForBit) {
  const auto [single, dist] = bothWays(2, 4);
  ASSERT_GT(single.size(), 200000u);
  EXPECT_TRUE(single == dist);
}

TEST(Poprun, InstancesWithDifferentOptionsStopNamingTheOption) {
  const std::string dir = tempDir("mismatch");
  // Instance 1 asks for another batch size.
  const ProcessResult r =
      runProcess(poprun(2, 2,
                        {"/bin/sh", "-c",
                         "exec \"$0\" train --batch-size $((16 + 16 * "
                         "POPDIST_INSTANCE_INDEX)) --cache \"$1\" --epochs 1",
                         kCli, dir}),
                 {}, 120);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("--batch-size is 16 on instance 0 but 32 on "
                               "instance 1"));
}

TEST(Poprun, ReplicasThatDoNotSplitOverTheInstancesAreAnError) {
  const ProcessResult r = runProcess(poprun(2, 3, {kCli, "train"}), {}, 60);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("3 replicas do not split evenly over 2 "
                               "instances"));
}

TEST(Poprun, AKilledInstanceStopsTheRunWithin10SecondsNamingIt) {
  const std::string dir = tempDir("kill");
  // Each instance leaves its pid (the shell execs the trainer in place)
  // and trains for longer than the test waits.
  std::vector<std::string> train = shortRun(dir, dir + "/w.ckpt");
  train[3] = "50"; // epochs
  std::string script = "echo $$ > \"$0/pid$POPDIST_INSTANCE_INDEX\"; exec";
  for (std::size_t i = 1; i <= train.size(); ++i)
    script += " \"${" + std::to_string(i) + "}\"";
  std::vector<std::string> command{"/bin/sh", "-c", script, dir};
  command.insert(command.end(), train.begin(), train.end());
  ChildProcess run(poprun(2, 2, command), {});
  run.closeStdin();
  // Wait until instance 0 reports its first epoch: both are training.
  for (int i = 0; i < 600; ++i) {
    const std::string line = run.readLine(1);
    if (line.find("Epoch 1/50") != std::string::npos)
      break;
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const pid_t victim = std::stoi(contents(dir + "/pid1"));
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  const ProcessResult r = run.wait(30);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed)
          .count();
  EXPECT_NE(r.exitCode, 0);
  EXPECT_LT(took, 10.0);
  EXPECT_THAT(r.err, HasSubstr("error: instance 1 of 2 ("));
  EXPECT_THAT(r.err, HasSubstr("was lost: killed by signal 9"));
}
