/// \file
/// Poplar's exception classes, aliasing the Tessera error each corresponds
/// to. poplar_error is tessera::Error, the base of every user error, so
/// `catch (const poplar::poplar_error &)` catches them all. Several Poplar
/// names share one Tessera error (graph_connection_error, invalid_tile_mapping,
/// unknown_vertex_type, unknown_field, control_program_error, ... are all
/// GraphError): a try block must not catch two of them separately. Poplar
/// names with no Tessera counterpart (profiling_disabled,
/// missing_graph_profile, missing_cycle_estimate, overflow_error,
/// unrecoverable_runtime_error) are left out: nothing here throws them.
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
using graph_cycle_error = tessera::GraphError;
using graph_object_creation_error = tessera::GraphError;
using graph_replication_error = tessera::GraphError;
using memory_elem_constraints_error = tessera::GraphError;
using index_error = tessera::ShapeError;
using tensor_creation_error = tessera::ShapeError;
using no_size_specified = tessera::ShapeError;
using type_error = tessera::TypeError;
using graph_memory_allocation_error = tessera::MemoryError;
/// A codelet that does not compile, link or name its symbols.
using graph_program_compilation_error = tessera::CodeletError;
using link_error = tessera::CodeletError;
using symbol_error = tessera::CodeletError;
/// A saved executable or graph object that cannot be read.
using graph_object_load_error = tessera::SerializationError;

/// Options and their JSON text.
using invalid_option = tessera::OptionError;
using parse_error = tessera::OptionError;

/// Targets and devices that cannot be made or attached.
using invalid_machine_model = tessera::DeviceError;
using no_environment = tessera::DeviceError;

/// Streams that are not connected, or connected to too little memory, and
/// host reads and writes of tensors that are not readable or writable.
using stream_connection_error = tessera::StreamError;
using stream_memory_allocation_error = tessera::StreamError;
using tensor_io_state_error = tessera::StreamError;

/// A program that stopped itself (Abort, AbortOnCondition) or met a
/// floating-point exception while running. Nothing on the IPU Model needs a
/// device reset, so every runtime error is a recoverable one.
using runtime_error = tessera::RuntimeError;
using application_runtime_error = tessera::RuntimeError;
using recoverable_runtime_error = tessera::RuntimeError;
using unknown_runtime_error = tessera::RuntimeError;

} // namespace poplar
