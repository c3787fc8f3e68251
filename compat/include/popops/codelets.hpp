/// \file
/// popops::addCodelets: Tessera's ops are built in; this registers them.
#pragma once

#include <poplar/Graph.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Codelets.hpp>

namespace popops {
using tessera::ops::addCodelets;
} // namespace popops
