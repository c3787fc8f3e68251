/// \file
/// The page's style sheet and script, embedded at build time from
/// tools/report/assets so the HTML report needs no other file.
#pragma once

namespace tessera::report::detail {

/// tools/report/assets/report.css.
extern const char *const kReportCss;
/// tools/report/assets/report.js.
extern const char *const kReportScript;

} // namespace tessera::report::detail
