/// \file
/// poprand::addCodelets: Tessera's ops are built in; this registers them.
#pragma once

#include <poplar/Graph.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Codelets.hpp>

namespace poprand {
using tessera::ops::addCodelets;
} // namespace poprand
