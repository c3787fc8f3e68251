/// \file
/// The index value PopLibs reserves to mean "no index here"
/// (MASKED_LABEL_CODE, ~0u): encodeOneHot leaves such a row all off,
/// selectScalarFromRows gives zero for it, and popnn's losses skip its row.
#pragma once

#include <poputil/exceptions.hpp>
#include <tessera/ops/Loss.hpp>

namespace popops {
using tessera::ops::MASKED_LABEL_CODE;
} // namespace popops
