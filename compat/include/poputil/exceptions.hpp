/// \file
/// PopLibs' exception class. poplibs_error is tessera::Error, the base of
/// every error the ops throw, so `catch (const poputil::poplibs_error &)`
/// around a PopLibs call catches what it throws (and every poplar_error).
#pragma once

#include <poplar/exceptions.hpp>

namespace poputil {

/// What the PopLibs functions throw.
using poplibs_error = tessera::Error;

} // namespace poputil
