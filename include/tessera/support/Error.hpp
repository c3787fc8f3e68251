/// \file
/// The two error channels: typed user errors (what is wrong and how to fix
/// it, with the numbers) and internal assertions for bugs.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera {

/// Base of every error a user can cause and fix.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Shapes or element counts that do not fit together.
class ShapeError : public Error {
public:
  using Error::Error;
};
/// Element types that do not fit together.
class TypeError : public Error {
public:
  using Error::Error;
};
/// A tile (or the host) has not the memory a graph needs.
class MemoryError : public Error {
public:
  using Error::Error;
};
/// Host streams: unconnected, too small, unknown handle.
class StreamError : public Error {
public:
  using Error::Error;
};
/// A feature or combination Tessera does not support.
class UnsupportedError : public Error {
public:
  using Error::Error;
};
/// Unknown option keys or invalid option values.
class OptionError : public Error {
public:
  using Error::Error;
};
/// A graph or program that cannot be compiled (unmapped, unconnected, ...).
class GraphError : public Error {
public:
  using Error::Error;
};
/// Devices: unknown ids, IPUs held by another process, detached devices.
class DeviceError : public Error {
public:
  using Error::Error;
};
/// Files that cannot be read: truncated, corrupt, wrong version.
class SerializationError : public Error {
public:
  using Error::Error;
};
/// User codelet source that does not compile or declares bad vertices.
class CodeletError : public Error {
public:
  using Error::Error;
};
/// A program that stopped itself (Abort, AbortOnCondition) while running.
class RuntimeError : public Error {
public:
  using Error::Error;
};
/// A value the enabled floating-point behaviour flags forbid (an invalid
/// operation's NaN, an overflow's or a division by zero's infinity).
class FloatingPointError : public RuntimeError {
public:
  using RuntimeError::RuntimeError;
};

namespace detail {
[[noreturn]] void internalAssertFailed(const char *cond, const char *file,
                                       int line, const std::string &msg);
} // namespace detail

} // namespace tessera

/// Checks an invariant; failure is a bug in Tessera, never a user error.
#define TESSERA_INTERNAL_ASSERT(cond, ...)                                     \
  do {                                                                         \
    if (!(cond))                                                               \
      ::tessera::detail::internalAssertFailed(#cond, __FILE__, __LINE__,       \
                                              std::string{__VA_ARGS__});       \
  } while (0)
