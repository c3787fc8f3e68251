/// \file
/// Poplar's Graph and the names that come with it: Tensor, ComputeSet,
/// VertexRef, FieldRef, DataStream, RemoteBuffer, Function, TileMapping,
/// Interval, replication_factor, ReplicatedStreamMode, VariableMappingMethod,
/// concat, append, DebugContext, OptionFlags and the element types.
#pragma once

#include <poplar/DebugContext.hpp>
#include <poplar/Interval.hpp>
#include <poplar/OptionFlags.hpp>
#include <poplar/Program.hpp>
#include <poplar/Target.hpp>
#include <poplar/Tensor.hpp>
#include <poplar/Type.hpp>
#include <poplar/exceptions.hpp>

#include <tessera/graph/Graph.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::CodeletFileType;
using tessera::ComputeSet;
using tessera::DataStream;
using tessera::FieldRef;
using tessera::Function;
using tessera::Graph;
using tessera::RemoteBuffer;
using tessera::ReplicatedStreamMode;
using tessera::replication_factor;
using tessera::TileMapping;
using tessera::VariableMappingMethod;
using tessera::VertexRef;

} // namespace poplar
