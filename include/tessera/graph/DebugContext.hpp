/// \file
/// DebugContext: the name a user gives a graph object, carried into error
/// messages and profiles.
#pragma once

#include <string>
#include <string_view>

#include "tessera/support/Language.hpp"

namespace tessera {

/// A name for a variable, compute set or program, as Poplar's DebugContext.
struct DebugContext {
  std::string name;
  DebugContext() = default;
  DebugContext(const char *n) : name(n ? n : "") {}   // NOLINT: implicit
  DebugContext(std::string n) : name(std::move(n)) {} // NOLINT: implicit
#if TESSERA_CXX17
  DebugContext(std::string_view n) : name(n) {} // NOLINT: implicit
  DebugContext(const DebugContext &parent, std::string_view child)
      : DebugContext(parent, std::string(child)) {}
#endif
  DebugContext(const DebugContext &parent, const char *child)
      : DebugContext(parent, std::string(child ? child : "")) {}
  DebugContext(const DebugContext &parent, const std::string &child)
      : name(parent.name.empty() ? child : parent.name + "/" + child) {}
};

} // namespace tessera
