/// \file
/// PopART's Adam (see optimizer.hpp).
#pragma once

#include <popart/optimizer.hpp>
