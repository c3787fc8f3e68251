/// \file
/// popops dynamic slicing: dynamicSlice, dynamicUpdate, multiSlice,
/// multiUpdate, multiUpdateAdd and the tensors they index, as Tessera's.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>
#include <poputil/exceptions.hpp>
#include <tessera/ops/DynamicSlice.hpp>

namespace popops {
using tessera::ops::createIndicesTensor;
using tessera::ops::createSliceableTensor;
using tessera::ops::dynamicSlice;
using tessera::ops::dynamicUpdate;
using tessera::ops::multiSlice;
using tessera::ops::multiUpdate;
using tessera::ops::multiUpdateAdd;
} // namespace popops
