/// \file
/// PopART's IArray and NDArrayWrapper: host arrays a StepIO reads inputs
/// from and writes anchors to. The wrapper does not own the data.
#pragma once

#include <popart/names.hpp>

#include <cstdint>
#include <type_traits>

namespace popart {

class IArray {
public:
  virtual ~IArray() = default;
  virtual void *data() = 0;
  virtual DataType dataType() const = 0;
  virtual std::size_t rank() const = 0;
  virtual std::int64_t dim(std::size_t index) const = 0;
  virtual std::size_t nelms() const = 0;
  virtual const Shape shape() const = 0;
};

template <typename T> class NDArrayWrapper : public IArray {
public:
  NDArrayWrapper(T *data, const Shape &shape) : data_(data), shape_(shape) {}
  NDArrayWrapper(T *data, const TensorInfo &info)
      : data_(data), shape_(info.shape()) {}
  void *data() override { return data_; }
  DataType dataType() const override {
    if constexpr (std::is_same_v<T, float>)
      return DataType::FLOAT;
    else if constexpr (std::is_same_v<T, std::int32_t>)
      return DataType::INT32;
    else if constexpr (std::is_same_v<T, std::int64_t>)
      return DataType::INT64;
    else if constexpr (std::is_same_v<T, bool>)
      return DataType::BOOL;
    else
      return DataType::UNDEFINED;
  }
  std::size_t rank() const override { return shape_.size(); }
  std::int64_t dim(std::size_t index) const override {
    return shape_.at(index);
  }
  std::size_t nelms() const override {
    std::size_t n = 1;
    for (auto d : shape_)
      n *= static_cast<std::size_t>(d);
    return n;
  }
  const Shape shape() const override { return shape_; }

private:
  T *data_;
  Shape shape_;
};

} // namespace popart
