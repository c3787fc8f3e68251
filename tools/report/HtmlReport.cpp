// The HTML page: a fixed skeleton with the style sheet, the report model as
// inline JSON and the script that draws it. Everything is inline so the page
// opens from disk, offline, and can be mailed or archived as one file.
#include "ReportAssets.hpp"

#include "tessera/report/Report.hpp"
#include "tessera/support/File.hpp"

#include <fmt/format.h>

#include <string_view>

namespace tessera::report {
namespace {

std::string htmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

// JSON inside <script>: a "</" in a name would end the element, and "<!--"
// would change how the parser reads the rest, so '<' is written as \u003c
// (the same string to JSON.parse). Invalid UTF-8 in user names is replaced
// rather than failing the report.
std::string scriptJson(const nlohmann::json &model) {
  const std::string text =
      model.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

} // namespace

std::string renderHtml(const nlohmann::json &model) {
  const std::string title =
      model.value("title", std::string("Tessera profile"));
  const std::string source = model.value("source", std::string());
  std::string page;
  page +=
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, "
      "initial-scale=1\">\n<meta name=\"generator\" content=\"tessera "
      "report\">\n";
  page += "<title>" + htmlEscape(title) + "</title>\n<style>\n";
  page += detail::kReportCss;
  page += "</style>\n</head>\n<body>\n<header>\n<h1>" + htmlEscape(title) +
          "</h1>\n";
  if (!source.empty())
    page += "<p>Profile: " + htmlEscape(source) + "</p>\n";
  page += "</header>\n<nav>"
          "<a href=\"#summary\">Summary</a>"
          "<a href=\"#tile-memory\">Memory per tile</a>"
          "<a href=\"#memory-categories\">Categories</a>"
          "<a href=\"#memory-variables\">Variables</a>"
          "<a href=\"#liveness\">Liveness</a>"
          "<a href=\"#trace\">Execution trace</a>"
          "<a href=\"#operations\">Operations</a>"
          "</nav>\n<main id=\"report\">\n<noscript><div class=\"error\">This "
          "report draws its charts with JavaScript; open it in a browser with "
          "scripts enabled.</div></noscript>\n</main>\n"
          "<pre id=\"report-status\" data-status=\"pending\"></pre>\n"
          "<script type=\"application/json\" id=\"report-data\">";
  page += scriptJson(model);
  page += "</script>\n<script>\n";
  page += detail::kReportScript;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

nlohmann::json writeHtmlReport(const std::string &profileDirectory,
                               const std::string &outputPath,
                               ReportOptions options) {
  const nlohmann::json profile = loadProfile(profileDirectory);
  if (options.source.empty())
    options.source = profileDirectory;
  nlohmann::json model = makeReportModel(profile, options);
  try {
    writeFileAtomically(outputPath, renderHtml(model));
  } catch (const Error &e) {
    throw Error(fmt::format("cannot write the report to \"{}\": {}; choose "
                            "another output file with -o",
                            outputPath, e.what()));
  }
  return model;
}

} // namespace tessera::report
