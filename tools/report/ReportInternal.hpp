/// \file
/// Helpers shared by the files that build the report model.
#pragma once

#include "tessera/report/Report.hpp"

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace tessera::report::detail {

/// The step groups cycles are reported by, in the profile's order.
inline constexpr std::array<std::string_view, 5> kGroups = {
    "compute", "exchange", "sync", "host", "control"};

/// The index in kGroups of a graph step's "group".
std::size_t groupIndex(const nlohmann::json &step);

/// The name a step is shown under: its debug name; for an unnamed compute
/// step its compute set's name; otherwise its kind in brackets
/// ("(streamIn)").
std::string stepLabel(const nlohmann::json &profile, std::size_t step);

/// The operation a debug name belongs to: its first path component
/// ("matMul/partials" belongs to "matMul").
std::string operationOf(const std::string &name);

/// The execution trace, one lane per IPU (ReportTrace.cpp).
nlohmann::json traceModel(const nlohmann::json &profile,
                          const ReportOptions &options);

/// Cycles and memory per operation (\p byOperation) or per debug name
/// (ReportOperations.cpp).
nlohmann::json operationsModel(const nlohmann::json &profile, bool byOperation);

} // namespace tessera::report::detail
