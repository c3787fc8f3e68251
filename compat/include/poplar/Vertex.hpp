/// \file
/// Poplar's codelet header: the vertex base classes, field types and layout
/// hints under their Poplar names, plus the standard headers Poplar's
/// version makes visible, so a codelet written for Poplar compiles
/// unchanged for the IPU Model.
#pragma once

#include <tessera/Vertex.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace poplar {

using tessera::half;
using tessera::InOut;
using tessera::Input;
using tessera::MultiVertex;
using tessera::Output;
using tessera::Vector;
using tessera::VectorLayout;
using tessera::VectorList;
using tessera::VectorListLayout;
using tessera::Vertex;

using tessera::COMPACT_DELTAN;
using tessera::COMPACT_PTR;
using tessera::DELTANELEMENTS;
using tessera::ONE_PTR;
using tessera::SPAN;
TESSERA_INLINE_VAR constexpr VectorLayout SCALED_PTR32 =
    VectorLayout::SCALED_PTR32;
TESSERA_INLINE_VAR constexpr VectorLayout SCALED_PTR64 =
    VectorLayout::SCALED_PTR64;

} // namespace poplar
