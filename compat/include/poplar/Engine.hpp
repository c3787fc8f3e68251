/// \file
/// Poplar's Engine (load a graph's programs onto a device, connect streams,
/// run, read and write tensors, print the profile summary), with
/// compileGraph, Executable and the stream callback classes.
#pragma once

#include <poplar/exceptions.hpp>
#include <poplar/Device.hpp>
#include <poplar/Executable.hpp>
#include <poplar/Graph.hpp>
#include <poplar/OptionFlags.hpp>
#include <poplar/Program.hpp>
#include <poplar/StreamCallback.hpp>

#include <tessera/compiler/Compiler.hpp>
#include <tessera/engine/Engine.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::compileGraph;
using tessera::Engine;
using tessera::Executable;
using tessera::LegacyStreamCallback;
using tessera::StreamCallback;

} // namespace poplar
