// The report's trace of a pipelined training step: each IPU's lane lists
// the stage passes it ran, named by stage, pass, micro-batch and IPU, in
// the order the schedule (session/Pipeline.hpp) runs them.
#include "tessera/engine/Profile.hpp"
#include "tessera/passes/TrainingPasses.hpp"
#include "tessera/report/Report.hpp"
#include "tessera/session/Session.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace tessera;
using nlohmann::json;

namespace {

// Two stages h = tanh(h w_s) and a squared error, N = 4 micro-batches a
// step, on two IPUs; the report model of one step.
json pipelineReport(session::PipelineSchedule schedule) {
  constexpr unsigned kN = 4;
  ir::Module m("two_stages");
  ir::Builder b(m);
  ir::Value h = b.input("x", FLOAT, {4, 8});
  const ir::Value y = b.input("y", FLOAT, {4, 8});
  for (unsigned s = 0; s < 2; ++s) {
    ir::StageScope stage(b, s);
    h = ir::tanh(ir::matmul(h, b.variable("w" + std::to_string(s), {8, 8},
                                          ir::init::constant(0.1))));
  }
  b.output("loss", ir::reduceMean(ir::meanSquaredError(h, y)));
  passes::TrainingPassOptions o;
  o.training.optimizer = passes::SGD{0.01, 0};
  o.accumulation.count = kN;
  passes::runTrainingPasses(m, o);
  session::Config c;
  c.ipuModel.tilesPerIpu = 4;
  c.autoSelectIpus = 2;
  c.syntheticData = true;
  c.pipeline.schedule = schedule;
  c.engineOptions.set("debug.instrument", "true");
  // The trace; the profile the engine then writes goes to a scratch folder.
  c.engineOptions.set("autoReport.directory",
                      ::testing::TempDir() + "tessera_report_pipeline");
  session::Session s(m, c, {{"x", "y"}, {}, kN});
  s.compile();
  s.run();
  const json profile =
      makeProfile(s.engine().getExecutable(), &s.engine().getExecutionCounts());
  return report::makeReportModel(profile, {});
}

// The scopes of IPU \p ipu's lane, in order.
std::vector<std::string> lane(const json &model, unsigned ipu) {
  std::vector<std::string> out;
  const json &trace = model["trace"];
  for (const json &run : trace["lanes"][ipu]["scopes"])
    out.push_back(trace["labels"][run[0].get<std::size_t>()]);
  return out;
}

std::string pass(unsigned stage, bool backward, unsigned microBatch) {
  return "stage " + std::to_string(stage) +
         (backward ? " backward" : " forward") + ", micro-batch " +
         std::to_string(microBatch) + ", IPU " + std::to_string(stage);
}

} // namespace

// Grouped, S = 2: step t is a forward tick (F_s on micro-batch t - s),
// then a backward tick (B_s on micro-batch t - (2 - s)). IPU 0 runs F_0
// at t = 0..3 and B_0 at t = 2..5; IPU 1 runs F_1 at t = 1..4 and B_1
// right after it. The weight update ends each lane.
TEST(ReportPipeline, GroupedLanesListStageMicroBatchAndIpu) {
  const json model = pipelineReport(session::PipelineSchedule::Grouped);
  const std::string update = "weight update";
  EXPECT_EQ(lane(model, 0),
            (std::vector<std::string>{
                pass(0, false, 0), pass(0, false, 1), pass(0, false, 2),
                pass(0, true, 0), pass(0, false, 3), pass(0, true, 1),
                pass(0, true, 2), pass(0, true, 3), update}));
  EXPECT_EQ(lane(model, 1),
            (std::vector<std::string>{
                pass(1, false, 0), pass(1, true, 0), pass(1, false, 1),
                pass(1, true, 1), pass(1, false, 2), pass(1, true, 2),
                pass(1, false, 3), pass(1, true, 3), update}));
  // The runs start in order on each lane.
  for (unsigned ipu = 0; ipu < 2; ++ipu) {
    const json &runs = model["trace"]["lanes"][ipu]["scopes"];
    for (std::size_t k = 1; k < runs.size(); ++k)
      EXPECT_LE(runs[k - 1][2], runs[k][1]) << "IPU " << ipu << " run " << k;
  }
  // `tessera report --scopes` prints the same lanes.
  const std::string text = report::scopeListing(model);
  EXPECT_THAT(text, ::testing::HasSubstr("IPU 1:\n"));
  EXPECT_THAT(text, ::testing::HasSubstr(pass(1, true, 3) + "\n"));
}
