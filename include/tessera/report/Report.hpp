/// \file
/// The profile report (`tessera report`): reads the profile.json an engine
/// writes (schema in tessera/engine/Profile.hpp), derives what a graph
/// analyser shows from it, and renders one self-contained HTML page (inline
/// CSS, script and SVG; nothing is fetched from the network).
///
/// The page shows memory per tile (a chart per IPU, the worst tiles named),
/// memory by category and by variable, liveness over the program steps, an
/// execution trace per IPU (each step a block of its compute, exchange,
/// sync, host or control cycles) and an operations summary (cycles and
/// memory per operation and per debug name).
///
/// \code
///   nlohmann::json profile = report::loadProfile("reports");
///   nlohmann::json model = report::makeReportModel(profile, {});
///   writeFileAtomically("report.html", report::renderHtml(model));
/// \endcode
///
/// After the page's script has drawn everything it fills the element
/// `<pre id="report-status">` with JSON figures read back from what it drew
/// (tiles plotted and their bytes, trace blocks and cycles per IPU, liveness
/// points, table rows), and sets its data-status to "ok" (or "error" with
/// the message), so a headless browser can check the page.
#pragma once

#include "tessera/support/Error.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace tessera::report {

/// A profile folder or file the report cannot use: missing, unreadable,
/// not JSON, not a Tessera profile, of an unknown version, or missing a
/// fact the report needs.
class ReportError : public Error {
public:
  using Error::Error;
};

/// The profile format version this report reads.
inline constexpr int kProfileVersion = 1;

/// Reads and checks DIR/profile.json. Throws ReportError saying what is
/// wrong and how to get a good profile.
nlohmann::json loadProfile(const std::string &directory);

/// Checks that \p profile is a Tessera profile of kProfileVersion with the
/// facts the report reads, and that its per-tile and per-IPU arrays have
/// the sizes its target says. \p where names the profile in errors. Throws
/// ReportError naming the first bad key by its path
/// ("graph.memory.perTile.total").
void checkProfile(const nlohmann::json &profile, std::string_view where);

struct ReportOptions {
  /// The page's title; empty gives "Tessera profile: <arch> x <numIPUs>".
  std::string title;
  /// Where the profile came from, shown on the page.
  std::string source;
  /// Trace blocks drawn per IPU at most; the rest are counted, not drawn.
  std::size_t maxTraceBlocks = 2000;
  /// Variables listed at most (largest first); the rest are summed.
  std::size_t maxVariables = 500;
  /// Tiles named in the worst-tiles table.
  std::size_t worstTiles = 10;
};

/// What the page shows, derived from a checked profile (the page's script
/// only draws it). Keys: "title", "source", "target", "summary", "memory"
/// (categories, perTile, perIpu, worstTiles), "variables", "liveness",
/// "trace" (absent facts give "available": false), "operations" and
/// "debugNames". Each trace lane ("trace"."lanes"[i], for IPU "ipu")
/// holds its "blocks" and its "scopes": the runs of its steps that a named
/// program encloses (profile step "scope", as a pipeline's "stage 1
/// backward, micro-batch 3, IPU 1"), in execution order, each
/// [label index into "trace"."labels", start cycle, end cycle, steps];
/// steps of no scope are skipped without ending a run. Throws ReportError
/// for a profile checkProfile rejects.
nlohmann::json makeReportModel(const nlohmann::json &profile,
                               const ReportOptions &options);

/// The trace's scopes as text, one block per IPU lane that has any:
/// "IPU 1:" then a line per run, "  <start cycle>  <scope>" (empty when no
/// step has a scope).
std::string scopeListing(const nlohmann::json &model);

/// The HTML page of a report model.
std::string renderHtml(const nlohmann::json &model);

/// Loads DIR/profile.json, renders it and writes \p outputPath atomically.
/// Returns the model drawn. Throws ReportError for a bad profile and Error
/// when the page cannot be written.
nlohmann::json writeHtmlReport(const std::string &profileDirectory,
                               const std::string &outputPath,
                               ReportOptions options = {});

} // namespace tessera::report
