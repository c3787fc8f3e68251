/// \file
/// Element types of tensors, with Poplar's names (FLOAT, HALF, INT, ...).
#pragma once

#include "tessera/support/Half.hpp"
#include "tessera/support/Language.hpp"

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

namespace tessera {

/// The element type of a tensor or a vertex field.
enum class Type : std::uint8_t {
  FLOAT,
  HALF,
  INT,
  UNSIGNED_INT,
  SHORT,
  UNSIGNED_SHORT,
  CHAR,
  SIGNED_CHAR,
  UNSIGNED_CHAR,
  BOOL,
};
TESSERA_INLINE_VAR constexpr unsigned numTypes = 10;

TESSERA_INLINE_VAR constexpr Type FLOAT = Type::FLOAT;
TESSERA_INLINE_VAR constexpr Type HALF = Type::HALF;
TESSERA_INLINE_VAR constexpr Type INT = Type::INT;
TESSERA_INLINE_VAR constexpr Type UNSIGNED_INT = Type::UNSIGNED_INT;
TESSERA_INLINE_VAR constexpr Type SHORT = Type::SHORT;
TESSERA_INLINE_VAR constexpr Type UNSIGNED_SHORT = Type::UNSIGNED_SHORT;
TESSERA_INLINE_VAR constexpr Type CHAR = Type::CHAR;
TESSERA_INLINE_VAR constexpr Type SIGNED_CHAR = Type::SIGNED_CHAR;
TESSERA_INLINE_VAR constexpr Type UNSIGNED_CHAR = Type::UNSIGNED_CHAR;
TESSERA_INLINE_VAR constexpr Type BOOL = Type::BOOL;

/// Bytes one element of \p t occupies in tile memory.
constexpr std::size_t typeSize(Type t) {
  return t == Type::FLOAT || t == Type::INT || t == Type::UNSIGNED_INT      ? 4
         : t == Type::HALF || t == Type::SHORT || t == Type::UNSIGNED_SHORT ? 2
         : t == Type::CHAR || t == Type::SIGNED_CHAR ||
                 t == Type::UNSIGNED_CHAR || t == Type::BOOL
             ? 1
             : 0;
}

/// Poplar's spelling of the type ("float", "half", "unsigned int", ...) as
/// a C string.
constexpr const char *typeNameC(Type t) {
  return t == Type::FLOAT            ? "float"
         : t == Type::HALF           ? "half"
         : t == Type::INT            ? "int"
         : t == Type::UNSIGNED_INT   ? "unsigned int"
         : t == Type::SHORT          ? "short"
         : t == Type::UNSIGNED_SHORT ? "unsigned short"
         : t == Type::CHAR           ? "char"
         : t == Type::SIGNED_CHAR    ? "signed char"
         : t == Type::UNSIGNED_CHAR  ? "unsigned char"
         : t == Type::BOOL           ? "bool"
                                     : "?";
}

#if TESSERA_CXX17
/// Poplar's spelling of the type ("float", "half", "unsigned int", ...).
constexpr std::string_view typeName(Type t) { return typeNameC(t); }
#endif

/// Writes Poplar's name of the type ("float", "half", ...).
inline std::ostream &operator<<(std::ostream &os, Type t) {
  return os << typeNameC(t);
}

constexpr bool isFloatingPoint(Type t) {
  return t == Type::FLOAT || t == Type::HALF;
}

/// The Type of a C++ element type, for typed host APIs.
template <typename T> constexpr Type typeOf();
template <> constexpr Type typeOf<float>() { return Type::FLOAT; }
template <> constexpr Type typeOf<Half>() { return Type::HALF; }
template <> constexpr Type typeOf<int>() { return Type::INT; }
template <> constexpr Type typeOf<unsigned>() { return Type::UNSIGNED_INT; }
template <> constexpr Type typeOf<short>() { return Type::SHORT; }
template <> constexpr Type typeOf<unsigned short>() {
  return Type::UNSIGNED_SHORT;
}
template <> constexpr Type typeOf<char>() { return Type::CHAR; }
template <> constexpr Type typeOf<signed char>() { return Type::SIGNED_CHAR; }
template <> constexpr Type typeOf<unsigned char>() {
  return Type::UNSIGNED_CHAR;
}
template <> constexpr Type typeOf<bool>() { return Type::BOOL; }

} // namespace tessera
