/// \file
/// Element types of tensors, with Poplar's names (FLOAT, HALF, INT, ...).
#pragma once

#include "tessera/support/Half.hpp"

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
inline constexpr unsigned numTypes = 10;

inline constexpr Type FLOAT = Type::FLOAT;
inline constexpr Type HALF = Type::HALF;
inline constexpr Type INT = Type::INT;
inline constexpr Type UNSIGNED_INT = Type::UNSIGNED_INT;
inline constexpr Type SHORT = Type::SHORT;
inline constexpr Type UNSIGNED_SHORT = Type::UNSIGNED_SHORT;
inline constexpr Type CHAR = Type::CHAR;
inline constexpr Type SIGNED_CHAR = Type::SIGNED_CHAR;
inline constexpr Type UNSIGNED_CHAR = Type::UNSIGNED_CHAR;
inline constexpr Type BOOL = Type::BOOL;

/// Bytes one element of \p t occupies in tile memory.
constexpr std::size_t typeSize(Type t) {
  switch (t) {
  case Type::FLOAT:
  case Type::INT:
  case Type::UNSIGNED_INT:
    return 4;
  case Type::HALF:
  case Type::SHORT:
  case Type::UNSIGNED_SHORT:
    return 2;
  case Type::CHAR:
  case Type::SIGNED_CHAR:
  case Type::UNSIGNED_CHAR:
  case Type::BOOL:
    return 1;
  }
  return 0;
}

/// Poplar's spelling of the type ("float", "half", "unsigned int", ...).
constexpr std::string_view typeName(Type t) {
  switch (t) {
  case Type::FLOAT:
    return "float";
  case Type::HALF:
    return "half";
  case Type::INT:
    return "int";
  case Type::UNSIGNED_INT:
    return "unsigned int";
  case Type::SHORT:
    return "short";
  case Type::UNSIGNED_SHORT:
    return "unsigned short";
  case Type::CHAR:
    return "char";
  case Type::SIGNED_CHAR:
    return "signed char";
  case Type::UNSIGNED_CHAR:
    return "unsigned char";
  case Type::BOOL:
    return "bool";
  }
  return "?";
}

/// Writes Poplar's name of the type ("float", "half", ...).
inline std::ostream &operator<<(std::ostream &os, Type t) {
  return os << typeName(t);
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
