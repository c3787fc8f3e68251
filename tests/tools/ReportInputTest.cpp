// Bad report input: every way a profile folder or file can be unusable
// gives a ReportError that says what is wrong.
#include "tools/ProfileFixture.hpp"

#include "tessera/report/Report.hpp"
#include "tessera/support/File.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

using namespace tessera;
using namespace tessera::testing;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

std::string checkError(const json &profile) {
  try {
    report::checkProfile(profile, "test profile");
  } catch (const report::ReportError &e) {
    return e.what();
  }
  ADD_FAILURE() << "checkProfile accepted the profile";
  return {};
}

std::string loadError(const std::string &dir) {
  try {
    report::loadProfile(dir);
  } catch (const report::ReportError &e) {
    return e.what();
  }
  ADD_FAILURE() << "loadProfile accepted " << dir;
  return {};
}

json mutated(const std::function<void(json &)> &change) {
  json p = twoIpuProfile().profile;
  change(p);
  return p;
}

} // namespace

TEST(ReportInput, TheFixtureProfileIsAccepted) {
  EXPECT_NO_THROW(report::checkProfile(twoIpuProfile().profile, "fixture"));
  EXPECT_NO_THROW(report::loadProfile(twoIpuProfile().dir.path()));
}

TEST(ReportInput, AnotherFormatIsNotATesseraProfile) {
  EXPECT_THAT(checkError(mutated([](json &p) { p["format"] = "popvision"; })),
              HasSubstr("test profile: not a Tessera profile (its \"format\" "
                        "is string \"popvision\""));
  EXPECT_THAT(checkError(json::array()),
              HasSubstr("a profile is a JSON object, not array"));
}

TEST(ReportInput, AnUnknownVersionSaysWhichVersionIsRead) {
  EXPECT_THAT(checkError(mutated([](json &p) { p["version"] = 2; })),
              HasSubstr("profile format version 2 is not one this tessera "
                        "reads (it reads version 1)"));
  EXPECT_THAT(checkError(mutated([](json &p) { p.erase("version"); })),
              HasSubstr("version is missing"));
}

TEST(ReportInput, MissingOrMalformedFactsAreNamedByPath) {
  EXPECT_THAT(checkError(mutated([](json &p) {
                p["graph"]["memory"]["perTile"].erase("total");
              })),
              HasSubstr("graph.memory.perTile.total is missing"));
  EXPECT_THAT(checkError(mutated([](json &p) {
                p["graph"]["memory"]["perTile"]["code"].erase(0);
              })),
              HasSubstr("graph.memory.perTile.code has 15 entries but the "
                        "target needs 16"));
  EXPECT_THAT(checkError(mutated([](json &p) {
                p["graph"]["steps"][0]["ipuCycles"] = "many";
              })),
              HasSubstr("graph.steps[0].ipuCycles must be an array, not "
                        "string \"many\""));
  EXPECT_THAT(checkError(mutated(
                  [](json &p) { p["graph"]["variables"][1]["bytes"] = -4; })),
              HasSubstr("graph.variables[1].bytes must be a whole number"));
  EXPECT_THAT(checkError(mutated(
                  [](json &p) { p["execution"]["trace"][0]["step"] = 9999; })),
              HasSubstr("execution.trace[0].step is 9999 but graph.steps has"));
  EXPECT_THAT(checkError(mutated(
                  [](json &p) { p["graph"]["steps"][1]["group"] = "dance"; })),
              HasSubstr("graph.steps[1].group must be one of compute, "
                        "exchange, sync, host, control"));
  EXPECT_THAT(checkError(mutated([](json &p) { p["target"]["numIPUs"] = 0; })),
              HasSubstr("target has 0 IPUs of 8 tiles"));
  // The trace page reads it: unchecked, a profile without it was read out
  // of a freed node (found by the report fuzz harness).
  EXPECT_THAT(checkError(mutated([](json &p) {
                p["execution"].erase("stepsExecuted");
              })),
              HasSubstr("execution.stepsExecuted is missing"));
  // Every message says how to get a good profile.
  EXPECT_THAT(checkError(mutated([](json &p) { p.erase("graph"); })),
              HasSubstr("autoReport.all"));
}

TEST(ReportInput, AMissingFolderOrFileIsNamed) {
  TempDir dir("report-input");
  EXPECT_THAT(loadError(dir.path() + "/nowhere"),
              HasSubstr("profile folder \"" + dir.path() +
                        "/nowhere\" does not exist"));
  writeFileAtomically(dir.path() + "/file.txt", "x");
  EXPECT_THAT(loadError(dir.path() + "/file.txt"),
              HasSubstr("is not a folder; give the folder holding "
                        "profile.json"));
  EXPECT_THAT(loadError(dir.path()),
              HasSubstr("folder \"" + dir.path() + "\" has no profile.json"));
}

TEST(ReportInput, ACorruptProfileSaysWhereItBreaks) {
  TempDir dir("report-corrupt");
  const std::string text = twoIpuProfile().profile.dump();
  writeFileAtomically(dir.path() + "/profile.json", text.substr(0, 100));
  const std::string msg = loadError(dir.path());
  EXPECT_THAT(msg, HasSubstr("profile.json is not valid JSON (byte "));
  EXPECT_THAT(msg, HasSubstr("of 100"));
  EXPECT_THAT(msg, HasSubstr("truncated or damaged"));
}

TEST(ReportInput, DeepNestingIsRefusedBeforeItOverflowsTheStack) {
  TempDir dir("report-deep");
  // A million nested arrays where the format belongs: describing the value
  // in the error message recursed once per level and overflowed the stack.
  const std::size_t depth = 1000000;
  writeFileAtomically(dir.path() + "/profile.json",
                      "{\"format\": " + std::string(depth, '[') +
                          std::string(depth, ']') + "}");
  EXPECT_THAT(loadError(dir.path()),
              HasSubstr("profile.json nests arrays and objects more than 64 "
                        "deep, which no profile does"));
  // Nesting to the limit is only a profile of the wrong format.
  writeFileAtomically(dir.path() + "/profile.json",
                      "{\"format\": " + std::string(63, '[') +
                          std::string(63, ']') + "}");
  EXPECT_THAT(loadError(dir.path()), Not(HasSubstr("nests")));
}

TEST(ReportInput, ANumberTooLargeForADoubleIsAReportError) {
  TempDir dir("report-number");
  // nlohmann throws out_of_range, not parse_error, for 1e400: uncaught, it
  // aborted `tessera report`.
  writeFileAtomically(dir.path() + "/profile.json", "{\"format\": 1e400}");
  EXPECT_THAT(loadError(dir.path()),
              HasSubstr("profile.json holds a number out of range"));
}

TEST(ReportHtml, ThePageIsSelfContainedAndEscapesNames) {
  json profile = twoIpuProfile().profile;
  profile["graph"]["variables"][0]["name"] = "</script><b>x</b>";
  report::ReportOptions options;
  options.title = "A & B <test>";
  const std::string html =
      report::renderHtml(report::makeReportModel(profile, options));
  EXPECT_THAT(html, HasSubstr("<title>A &amp; B &lt;test&gt;</title>"));
  EXPECT_EQ(html.find("</script><b>"), std::string::npos);
  EXPECT_THAT(html, HasSubstr("\\u003c/script>\\u003cb>"));
  // Nothing is fetched: no external scripts, styles or images.
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  std::size_t http = 0;
  for (std::size_t at = html.find("http://"); at != std::string::npos;
       at = html.find("http://", at + 1)) {
    EXPECT_EQ(html.compare(at, 26, "http://www.w3.org/2000/svg"), 0);
    ++http;
  }
  EXPECT_EQ(http, 1u); // the SVG namespace name, which is not fetched
  EXPECT_THAT(html, HasSubstr("<pre id=\"report-status\" "
                              "data-status=\"pending\">"));
}

TEST(ReportHtml, WriteHtmlReportWritesTheFileAndReturnsTheModel) {
  TempDir out("report-out");
  const std::string path = out.path() + "/sub/report.html";
  const json m = report::writeHtmlReport(twoIpuProfile().dir.path(), path, {});
  EXPECT_EQ(m["source"], twoIpuProfile().dir.path());
  const std::string html = readFile(path);
  EXPECT_THAT(html, HasSubstr("Tessera profile: 2 x ipu2"));
  EXPECT_THROW(report::writeHtmlReport(out.path() + "/none", path, {}),
               report::ReportError);
}
