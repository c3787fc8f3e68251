// `tessera plan` as users run it: one table row per schedule and
// recomputation setting, the bubble fraction of each schedule's
// definition, and per IPU the peak tile and always-live bytes, where the
// interleaved schedule's stage 0 stashes fewer micro-batches than grouped.
#include "tools/Subprocess.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

using namespace tessera::testing;
using ::testing::HasSubstr;

namespace {

ProcessResult plan(const std::vector<std::string> &args) {
  std::vector<std::string> argv{TESSERA_CLI_PATH, "plan"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProcess(argv, {}, 300);
}

std::uint64_t number(std::string text) {
  std::erase(text, ',');
  return std::stoull(text);
}

} // namespace

TEST(PlanCommand, ListsEverySchedulesStepTimeBubbleAndMemoryPerIpu) {
  // Batch 256 of the mlp: activations outweigh the per-tile share of the
  // weights, so how many micro-batches a stage stashes shows.
  const ProcessResult r =
      plan({"--tiles", "64", "--batch-size", "256", "--pipeline-stages", "3",
            "--gradient-accumulation", "6"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Plan for mlp over 3 pipeline stages on 3 "
                               "IPU(s) of 64 tiles"));
  EXPECT_THAT(r.out, HasSubstr("Bubble: grouped and interleaved (S - 1) / "
                               "(N + S - 1) = 2 / 8"));
  EXPECT_THAT(r.out, HasSubstr("IPU2 peak tile  IPU2 always-live"));
  // schedule, recompute, cycles, time, bubble, then two figures per IPU.
  const std::regex row("(grouped|interleaved|sequential) +(on|off) +"
                       "([0-9,]+) +[0-9.]+ us +([0-9.]+)((?: +[0-9,]+){6})");
  std::map<std::string, std::vector<std::uint64_t>> memory;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row))
      continue;
    const std::string key = m[1].str() + " " + m[2].str();
    EXPECT_GT(number(m[3]), 0u) << line;
    EXPECT_EQ(m[4].str(), m[1] == "sequential" ? "0.000" : "0.250") << line;
    std::istringstream figures(m[5].str());
    for (std::string f; figures >> f;)
      memory[key].push_back(number(f));
  }
  ASSERT_EQ(memory.size(), 6u) << r.out;
  for (const auto &[key, bytes] : memory)
    for (std::size_t ipu = 0; ipu < 3; ++ipu)
      EXPECT_GT(bytes[2 * ipu], 0u) << key << " IPU" << ipu;
  // IPU 0 (stage 0) keeps 2(S - 1) + 1 = 5 micro-batches' activations
  // under Grouped, S = 3 under Interleaved.
  EXPECT_LT(memory["interleaved off"][0], memory["grouped off"][0]);
}

TEST(PlanCommand, TooFewMicroBatchesOrIpusAreOneLineErrors) {
  ProcessResult r =
      plan({"--pipeline-stages", "3", "--gradient-accumulation", "2"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("tessera plan: error: --gradient-accumulation "
                               "2 must be at least the 3 pipeline stages"));
  r = plan({"--pipeline-stages", "3", "--ipus", "2"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("--ipus 2 must be at least the 3 pipeline "
                               "stages"));
  r = plan({"--pipeline-stages", "4"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("--pipeline-stages must be 1 to the 3 layers "
                               "of model mlp, got 4"));
}

TEST(PlanCommand, AStepThatDoesNotFitShowsItsOutOfMemoryTile) {
  // The mlp's first layer alone (200,960 weights, two Adam moments and a
  // gradient accumulator) is 3.2 MB: more than 4 tiles of 624 KiB hold.
  const ProcessResult r = plan({"--tiles", "4", "--batch-size", "16"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::regex row("(grouped|interleaved|sequential) +(on|off) +out of "
                       "memory on tile [0-9]+ \\(IPU 0\\) +- ");
  std::size_t rows = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    rows += std::regex_search(line, row);
  EXPECT_EQ(rows, 6u) << r.out;
}
