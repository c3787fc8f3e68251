// profile.json as `tessera report` reads it: loadProfile (read, parse,
// checkProfile) on a folder holding the input, then the report model and
// the HTML page of whatever it accepts.
#include "FuzzCommon.hpp"

#include "tessera/report/Report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  using namespace tessera;
  fuzz::writeScratch("profile.json", fuzz::bytes(data, size));
  return fuzz::runOne([&] {
    const nlohmann::json profile = report::loadProfile(fuzz::scratchDir());
    report::ReportOptions options;
    options.source = "fuzz";
    const std::string html =
        report::renderHtml(report::makeReportModel(profile, options));
    fuzz::require(!html.empty(), "the report page is empty");
  });
}
