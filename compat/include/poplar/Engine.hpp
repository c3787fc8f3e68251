/// \file
/// Poplar's Engine (load a graph's programs onto a device, connect streams,
/// run, read and write tensors, print the profile summary), with
/// compileGraph, Executable and the stream callback classes.
#pragma once

#include <poplar/Device.hpp>
#include <poplar/Executable.hpp>
#include <poplar/Graph.hpp>
#include <poplar/OptionFlags.hpp>
#include <poplar/Program.hpp>
#include <poplar/StreamCallback.hpp>
#include <poplar/exceptions.hpp>

#include <tessera/compiler/Compiler.hpp>
#include <tessera/engine/Engine.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::compileGraph;
using tessera::Engine;
using tessera::Executable;
using tessera::LegacyStreamCallback;
using tessera::StreamCallback;

/// Poplar's compilation progress callback: (steps done, total steps).
typedef std::function<void(int, int)> ProgressFunc;

/// compileGraph reporting its progress as Poplar's does, in hundredths of
/// the work (total 100), at the start of each phase and at the end.
inline Executable compileGraph(const Graph &graph,
                               const std::vector<program::Program> &programs,
                               const OptionFlags &options,
                               ProgressFunc progress) {
  return tessera::compileGraph(
      graph, programs, options, [progress](const char *, double done) {
        if (progress)
          progress(static_cast<int>(done * 100 + 0.5), 100);
      });
}

} // namespace poplar
