/// \file
/// PopART's TensorInfo (see names.hpp).
#pragma once

#include <popart/names.hpp>
