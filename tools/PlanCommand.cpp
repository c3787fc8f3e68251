// `tessera plan`: a schedule explorer. For one of `tessera train`'s models
// split into pipeline stages, compiles the training step under each
// schedule, with and without recomputation, runs one step on synthetic
// data and prints the estimated step time, the schedule's bubble fraction
// and each IPU's memory side by side, without training.
#include "Commands.hpp"
#include "TextTable.hpp"
#include "TrainModels.hpp"

#include "tessera/device/Target.hpp"
#include "tessera/support/Error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <ostream>

namespace tessera::tools {
namespace {

struct PlanOptions {
  std::string model = "mlp";
  std::size_t batchSize = 32;
  unsigned tiles = 1472;
  std::optional<unsigned> stages;       // unset: one per layer
  std::optional<unsigned> accumulation; // unset: twice the stages
  std::optional<unsigned> ipus;         // unset: the stages
  std::uint64_t seed = 1;
};

struct PlanRow {
  session::PipelineSchedule schedule;
  bool recompute = false;
  std::uint64_t cycles = 0;
  double clockHz = 0;
  std::vector<nn::FitStats::IpuMemory> memory;
  std::string error; // the step does not compile (out of memory)
};

void checkOptions(const PlanOptions &o) {
  const std::size_t layers = trainModelLayers(o.model);
  const unsigned S = *o.stages, N = *o.accumulation;
  if (S < 1 || S > layers)
    throw OptionError(fmt::format(
        "--pipeline-stages must be 1 to the {} layers of model {}, got {}",
        layers, o.model, S));
  if (N < S || N > 100000)
    throw OptionError(fmt::format(
        "--gradient-accumulation {} must be at least the {} pipeline stages "
        "(the grouped and interleaved schedules need a micro-batch per "
        "stage) and at most 100000",
        N, S));
  if (*o.ipus < S || *o.ipus > Target::kMaxIPUs)
    throw OptionError(fmt::format(
        "--ipus {} must be at least the {} pipeline stages (each on its own "
        "IPU) and at most {}",
        *o.ipus, S, Target::kMaxIPUs));
  if (o.batchSize < 1 || o.batchSize > 65536)
    throw OptionError(
        fmt::format("--batch-size must be 1 to 65536, got {}", o.batchSize));
  if (o.tiles < 1 || o.tiles > Target::kMaxTilesPerIPU)
    throw OptionError(fmt::format("--tiles must be 1 to {}, got {}",
                                  Target::kMaxTilesPerIPU, o.tiles));
}

// One pipelined step (N micro-batches) of the model, compiled and run on
// synthetic data.
PlanRow planRow(const PlanOptions &o, session::PipelineSchedule schedule,
                bool recompute) {
  PlanRow row{schedule, recompute, 0, 0, {}, {}};
  nn::Sequential model = buildTrainModel(o.model, o.seed);
  std::string name(session::scheduleName(schedule));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](char c) { return char(std::tolower(c)); });
  applyPipelining(model, *o.stages, name, *o.accumulation, recompute);
  nn::CompileOptions c;
  c.loss = "sparse_categorical_crossentropy";
  c.metrics = {"accuracy"};
  c.stepsPerExecution = *o.accumulation;
  c.config.autoSelectIpus = *o.ipus;
  c.config.ipuModel.tilesPerIpu = o.tiles;
  c.config.ipuModel.version = "ipu2";
  c.config.syntheticData = true;
  c.syntheticDataInitializer = "random";
  model.compile(c);
  // The dataset only gives the shapes: synthetic data feeds nothing.
  data::Shape x{1, o.batchSize};
  const nn::Input &in = dynamic_cast<const nn::Input &>(*model.layers()[0]);
  x.insert(x.end(), in.shape().begin(), in.shape().end());
  const data::Dataset shapes = data::Dataset::fromTensors(
      {data::HostTensor(FLOAT, x), data::HostTensor(INT, {1, o.batchSize})});
  nn::FitOptions fit;
  fit.stepsPerEpoch = *o.accumulation;
  fit.verbose = nn::Verbosity::Silent;
  try {
    model.fit(shapes, fit);
  } catch (const MemoryError &e) {
    const std::string what = e.what();
    row.error = what.substr(0, what.find(':'));
    return row;
  }
  const nn::FitStats &stats = model.lastFitStats();
  row.cycles = stats.estimatedCyclesPerRun;
  row.clockHz = stats.clockHz;
  row.memory = stats.memoryPerIpu;
  return row;
}

std::string bytes(std::uint64_t b) { return groupedNumber(b); }

void printPlan(std::ostream &out, const PlanOptions &o,
               const std::vector<PlanRow> &rows) {
  const unsigned S = *o.stages, N = *o.accumulation, ipus = *o.ipus;
  const double bubble = double(S - 1) / double(N + S - 1);
  out << fmt::format(
      "Plan for {} over {} pipeline stages on {} IPU(s) of {} tiles (ipu2 "
      "IPU Model): batch {} per micro-batch, {} micro-batches per weight "
      "update\n",
      o.model, S, ipus, o.tiles, o.batchSize, N);
  out << fmt::format(
      "Bubble: grouped and interleaved (S - 1) / (N + S - 1) = {} / {} "
      "(ramp-up and ramp-down ticks of the schedule); sequential 0 (one "
      "micro-batch at a time, nothing overlaps)\n",
      S - 1, N + S - 1);
  out << "Memory per IPU: the peak tile's bytes (all kinds) and the bytes "
         "always live on the IPU's tiles\n";
  std::vector<std::string> headers{"Schedule", "Recompute", "Cycles/step",
                                   "Time/step", "Bubble"};
  std::vector<bool> right{false, false, true, true, true};
  for (unsigned i = 0; i < ipus; ++i) {
    headers.push_back(fmt::format("IPU{} peak tile", i));
    headers.push_back(fmt::format("IPU{} always-live", i));
    right.insert(right.end(), {true, true});
  }
  TextTable table(headers, right);
  for (const PlanRow &r : rows) {
    std::string name(session::scheduleName(r.schedule));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](char c) { return char(std::tolower(c)); });
    std::vector<std::string> cells{
        name, r.recompute ? "on" : "off",
        r.error.empty() ? groupedNumber(r.cycles) : r.error,
        r.error.empty()
            ? fmt::format("{:.1f} us", double(r.cycles) / r.clockHz * 1e6)
            : "-",
        fmt::format("{:.3f}",
                    r.schedule == session::PipelineSchedule::Sequential
                        ? 0.0
                        : bubble)};
    for (unsigned i = 0; i < ipus; ++i) {
      const bool have = i < r.memory.size();
      cells.push_back(have ? bytes(r.memory[i].peakTileBytes) : "-");
      cells.push_back(have ? bytes(r.memory[i].alwaysLiveBytes) : "-");
    }
    table.addRow(cells);
  }
  table.print(out);
}

void runPlan(PlanOptions o, const CommandStreams &streams) {
  if (!o.stages)
    o.stages = unsigned(std::min<std::size_t>(trainModelLayers(o.model), 4));
  o.accumulation = o.accumulation.value_or(2 * *o.stages);
  o.ipus = o.ipus.value_or(*o.stages);
  checkOptions(o);
  std::vector<PlanRow> rows;
  for (session::PipelineSchedule s : {session::PipelineSchedule::Grouped,
                                      session::PipelineSchedule::Interleaved,
                                      session::PipelineSchedule::Sequential})
    for (bool recompute : {false, true}) {
      streams.err << fmt::format("Compiling the {} step{}...\n",
                                 session::scheduleName(s),
                                 recompute ? " with recomputation" : "")
                  << std::flush;
      rows.push_back(planRow(o, s, recompute));
    }
  printPlan(streams.out, o, rows);
}

} // namespace

void addPlanCommand(CLI::App &app, const CommandStreams &streams) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App *sub = app.add_subcommand(
      "plan", "Compare pipeline schedules of a `tessera train` model: step "
              "time, bubble and memory per IPU, without training");
  sub->footer(
      "For each schedule (grouped, interleaved, sequential), with and "
      "without recomputation, compiles the training step (one weight update "
      "of N micro-batches), runs it once on synthetic data and prints the "
      "IPU Model's estimated cycles per step, the schedule's bubble fraction "
      "and, per IPU, the fullest tile's bytes and the always-live bytes. "
      "Layer i of the L layers goes to stage floor(i * S / L), as in "
      "`tessera train --pipeline-stages`. A step that does not fit shows "
      "its out-of-memory tile instead of its cycles.");
  sub->add_option("--model", o->model, "mlp or cnn")
      ->check(CLI::IsMember({"mlp", "cnn"}))
      ->capture_default_str();
  sub->add_option("--batch-size", o->batchSize,
                  "Examples per micro-batch, 1 to 65536")
      ->capture_default_str();
  sub->add_option("--tiles", o->tiles, "Tiles per IPU")->capture_default_str();
  sub->add_option("--pipeline-stages", o->stages,
                  "Stages S (default: one per layer, at most 4)");
  sub->add_option("--gradient-accumulation", o->accumulation,
                  "Micro-batches N per weight update, at least S (default: "
                  "2 S)");
  sub->add_option("--ipus", o->ipus,
                  "IPUs, at least S; stage i runs on IPU i (default: S)");
  sub->add_option("--seed", o->seed, "Seed of the initialisers")
      ->capture_default_str();
  sub->callback([o, streams] { runPlan(*o, streams); });
}

} // namespace tessera::tools
