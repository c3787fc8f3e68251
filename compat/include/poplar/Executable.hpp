/// \file
/// Poplar's Executable: a compiled graph and its programs, which
/// serialize(std::ostream &) writes and Executable::deserialize(std::istream &)
/// reads back, in this process or another.
#pragma once

#include <poplar/exceptions.hpp>
#include <tessera/compiler/Executable.hpp>

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace poplar {

using tessera::Executable;

} // namespace poplar
