/// \file
/// popops::fill, which takes the program before the value.
#pragma once

#include <poplar/Graph.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/Elementwise.hpp>

namespace popops {
template <typename T>
void fill(poplar::Graph &graph, const poplar::Tensor &t,
          poplar::program::Sequence &prog, T value,
          const poplar::DebugContext &dc = {}) {
  tessera::ops::fill(graph, t, static_cast<double>(value), prog, dc);
}
using tessera::ops::iota;
} // namespace popops
