/// \file
/// Poplar's exception classes, aliasing the Tessera error each corresponds
/// to. poplar_error is tessera::Error, the base of every user error, so
/// `catch (const poplar::poplar_error &)` catches them all. Several Poplar
/// names share one Tessera error (graph_connection_error, invalid_tile_mapping,
/// unknown_vertex_type, unknown_field and control_program_error are all
/// GraphError): a try block must not catch two of them separately.
#pragma once

#include <tessera/support/Error.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

/// Base of every error.
using poplar_error = tessera::Error;

/// Graph construction and compilation.
using graph_connection_error = tessera::GraphError;
using invalid_tile_mapping = tessera::GraphError;
using unknown_vertex_type = tessera::GraphError;
using unknown_field = tessera::GraphError;
using control_program_error = tessera::GraphError;
using index_error = tessera::ShapeError;
using type_error = tessera::TypeError;
using graph_memory_allocation_error = tessera::MemoryError;
/// A codelet that does not compile.
using graph_program_compilation_error = tessera::CodeletError;

/// Options and their JSON text.
using invalid_option = tessera::OptionError;

/// Streams that are not connected, or connected to too little memory.
using stream_connection_error = tessera::StreamError;

/// A program that stopped itself (Abort, AbortOnCondition) while running.
using runtime_error = tessera::RuntimeError;
using application_runtime_error = tessera::RuntimeError;

} // namespace poplar
