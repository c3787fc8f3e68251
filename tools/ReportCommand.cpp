// `tessera report`: renders the profile.json an engine wrote into one HTML
// page that opens offline.
#include "Commands.hpp"
#include "TextTable.hpp"

#include "tessera/report/Report.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <ostream>

namespace tessera::tools {
namespace {

struct ReportCommandOptions {
  std::string profileDir;
  std::string output;
  bool scopes = false;
  report::ReportOptions report;
};

void runReport(ReportCommandOptions o, const CommandStreams &streams) {
  if (o.output.empty())
    o.output = (std::filesystem::path(o.profileDir) / "report.html").string();
  const nlohmann::json model =
      report::writeHtmlReport(o.profileDir, o.output, o.report);
  const nlohmann::json &s = model["summary"];
  streams.out << fmt::format(
      "wrote {}: {} IPU(s), memory {} of {}", o.output,
      model["target"]["numIPUs"].get<std::uint64_t>(),
      bytesText(s["totalBytes"].get<std::uint64_t>()),
      bytesText(s["capacityBytes"].get<std::uint64_t>()));
  if (s["hasExecution"].get<bool>())
    streams.out << fmt::format(
        ", {} cycles elapsed on the device ({} with the host side), {} "
        "cycles on the slowest IPU",
        groupedNumber(s["elapsedCycles"].get<std::uint64_t>()),
        groupedNumber(s["hostInclusiveCycles"].get<std::uint64_t>()),
        groupedNumber(s["maxCycles"].get<std::uint64_t>()));
  else
    streams.out << ", no execution facts";
  streams.out << '\n';
  if (o.scopes)
    streams.out << report::scopeListing(model);
}

} // namespace

void addReportCommand(CLI::App &app, const CommandStreams &streams) {
  auto o = std::make_shared<ReportCommandOptions>();
  CLI::App *sub = app.add_subcommand(
      "report", "Render a profile (profile.json) as a self-contained HTML "
                "page");
  sub->footer(
      "PROFILE_DIR is the folder the engine wrote profile.json into: run "
      "the program with the engine option autoReport.all set to \"true\" "
      "(or TESSERA_ENGINE_OPTIONS='{\"autoReport.all\":\"true\"}'), and "
      "autoReport.directory to choose the folder.\nThe page shows memory "
      "per tile, by category and by variable, liveness over the program "
      "steps, the execution trace of each IPU and an operations summary. It "
      "needs no network: styles, script and charts are inline.");
  sub->add_option("PROFILE_DIR", o->profileDir, "Folder holding profile.json")
      ->required();
  sub->add_option("-o,--output", o->output,
                  "The HTML file to write (default PROFILE_DIR/report.html)");
  sub->add_option("--title", o->report.title,
                  "The page's title (default: the target, as \"Tessera "
                  "profile: 2 x ipu2\")");
  sub->add_option("--max-trace-blocks", o->report.maxTraceBlocks,
                  "Trace blocks drawn per IPU at most; later ones are "
                  "counted in the totals but not drawn")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--scopes", o->scopes,
                "Also print each IPU's trace scopes in order: the named "
                "programs its steps ran in, as a pipeline's \"stage 1 "
                "backward, micro-batch 3, IPU 1\"");
  sub->add_option("--max-variables", o->report.maxVariables,
                  "Variables listed at most, largest first")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->callback([o, streams] { runReport(*o, streams); });
}

} // namespace tessera::tools
