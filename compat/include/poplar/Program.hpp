/// \file
/// Poplar's control programs, in namespace poplar::program: Sequence,
/// Execute, Copy, Repeat, RepeatWhileTrue, RepeatWhileFalse, If, Switch,
/// Call, Sync, PrintTensor, WriteUndef, Abort, AbortOnCondition and their
/// base Program.
#pragma once

#include <poplar/exceptions.hpp>
#include <poplar/DebugContext.hpp>
#include <poplar/SyncType.hpp>
#include <poplar/Tensor.hpp>

#include <tessera/graph/Program.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {
// The handle types a program names (compute sets, streams, buffers,
// functions) are Graph.hpp's in Poplar; Program.hpp must see them too.
using tessera::ComputeSet;
using tessera::DataStream;
using tessera::Function;
using tessera::RemoteBuffer;
} // namespace poplar

namespace poplar {
namespace program {

using tessera::program::Abort;
using tessera::program::AbortOnCondition;
using tessera::program::Call;
using tessera::program::Copy;
using tessera::program::Execute;
using tessera::program::If;
using tessera::program::PrintTensor;
using tessera::program::Program;
using tessera::program::Repeat;
using tessera::program::RepeatWhileFalse;
using tessera::program::RepeatWhileTrue;
using tessera::program::Sequence;
using tessera::program::Switch;
using tessera::program::Sync;
using tessera::program::SyncType;
using tessera::program::WriteUndef;

} // namespace program
} // namespace poplar
