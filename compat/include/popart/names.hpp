/// \file
/// PopART's basic names: TensorId, Shape, DataType, TensorInfo, the error
/// type, and ReductionType. Part of Tessera's PopART-shaped API, which
/// forwards to tessera::onnx (ModelBuilder, ModelSession).
#pragma once

#include <tessera/support/Error.hpp>
#include <tessera/support/Type.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

namespace popart {

using TensorId = std::string;
using Shape = std::vector<std::int64_t>;
/// Errors are Tessera's typed errors.
using error = tessera::Error;

enum class DataType { FLOAT, FLOAT16, INT32, INT64, BOOL, UNDEFINED };

inline DataType dataTypeFromString(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return char(std::toupper(c)); });
  if (s == "FLOAT" || s == "FLOAT32")
    return DataType::FLOAT;
  if (s == "FLOAT16")
    return DataType::FLOAT16;
  if (s == "INT32")
    return DataType::INT32;
  if (s == "INT64")
    return DataType::INT64;
  if (s == "BOOL")
    return DataType::BOOL;
  throw tessera::UnsupportedError("popart: data type '" + s +
                                  "' is not supported (FLOAT, FLOAT16, INT32, "
                                  "INT64 and BOOL are)");
}

/// The IR type a PopART data type becomes (integers are 32-bit).
inline tessera::Type toTessera(DataType t) {
  switch (t) {
  case DataType::FLOAT:
    return tessera::FLOAT;
  case DataType::FLOAT16:
    return tessera::HALF;
  case DataType::INT32:
  case DataType::INT64:
    return tessera::INT;
  case DataType::BOOL:
    return tessera::BOOL;
  default:
    throw tessera::UnsupportedError("popart: undefined data type");
  }
}

/// A tensor's element type and shape.
class TensorInfo {
public:
  TensorInfo() = default;
  TensorInfo(DataType type, Shape shape)
      : type_(type), shape_(std::move(shape)) {}
  TensorInfo(const std::string &type, Shape shape)
      : type_(dataTypeFromString(type)), shape_(std::move(shape)) {}
  DataType dataType() const { return type_; }
  const Shape &shape() const { return shape_; }
  std::int64_t rank() const { return std::int64_t(shape_.size()); }
  std::int64_t nelms() const {
    std::int64_t n = 1;
    for (auto d : shape_)
      n *= d;
    return n;
  }
  std::vector<std::size_t> sizes() const {
    return {shape_.begin(), shape_.end()};
  }

private:
  DataType type_ = DataType::UNDEFINED;
  Shape shape_;
};

/// Host data with its TensorInfo (addInitializedInputTensor, constant).
struct ConstVoidData {
  const void *data = nullptr;
  TensorInfo info;
  /// The elements as doubles (FLOAT, INT32 or INT64 data).
  std::vector<double> values() const {
    std::vector<double> v(static_cast<std::size_t>(info.nelms()));
    for (std::size_t i = 0; i < v.size(); ++i) {
      switch (info.dataType()) {
      case DataType::FLOAT:
        v[i] = static_cast<const float *>(data)[i];
        break;
      case DataType::INT32:
        v[i] = static_cast<const std::int32_t *>(data)[i];
        break;
      case DataType::INT64:
        v[i] = double(static_cast<const std::int64_t *>(data)[i]);
        break;
      default:
        throw tessera::UnsupportedError(
            "popart: tensor data must be FLOAT, INT32 or INT64");
      }
    }
    return v;
  }
};

enum class ReductionType { Sum, Mean, NoReduction };

} // namespace popart
