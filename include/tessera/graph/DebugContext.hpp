/// \file
/// DebugContext: the name a user gives a graph object, carried into error
/// messages and profiles.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

/// A name for a variable, compute set or program, as Poplar's DebugContext.
struct DebugContext {
  std::string name;
  DebugContext() = default;
  DebugContext(const char *n) : name(n ? n : "") {}     // NOLINT: implicit
  DebugContext(std::string n) : name(std::move(n)) {}   // NOLINT: implicit
  DebugContext(std::string_view n) : name(n) {}         // NOLINT: implicit
  DebugContext(const DebugContext &parent, std::string_view child)
      : name(parent.name.empty() ? std::string(child)
                                 : parent.name + "/" + std::string(child)) {}
};

} // namespace tessera
