/// \file
/// PopART's DataFlow and AnchorReturnType: how many batches one run takes
/// and which tensors it returns, how.
#pragma once

#include <popart/names.hpp>

#include <tessera/onnx/ModelSession.hpp>

#include <map>

namespace popart {

enum class AnchorReturnTypeId { Final, EveryN, All, Sum };

class AnchorReturnType {
public:
  /// "All", "Final", "EveryN" (with \p period) or "Sum", any case.
  explicit AnchorReturnType(std::string id = "All", int period = 1)
      : period_(period) {
    std::transform(id.begin(), id.end(), id.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    if (id == "all")
      id_ = AnchorReturnTypeId::All;
    else if (id == "final")
      id_ = AnchorReturnTypeId::Final;
    else if (id == "everyn")
      id_ = AnchorReturnTypeId::EveryN;
    else if (id == "sum")
      id_ = AnchorReturnTypeId::Sum;
    else
      throw tessera::OptionError("AnchorReturnType '" + id +
                                 "': use All, Final, EveryN or Sum");
    if (id_ == AnchorReturnTypeId::EveryN && period <= 0)
      throw tessera::OptionError("AnchorReturnType EveryN needs a period "
                                 "of at least 1, not " +
                                 std::to_string(period));
  }
  AnchorReturnTypeId id() const { return id_; }
  int rp() const { return period_; }
  tessera::onnx::Anchor toTessera() const {
    using M = tessera::onnx::AnchorMode;
    const M m = id_ == AnchorReturnTypeId::All      ? M::ALL
                : id_ == AnchorReturnTypeId::Final  ? M::FINAL
                : id_ == AnchorReturnTypeId::EveryN ? M::EVERY_N
                                                    : M::SUM;
    return {m, static_cast<unsigned>(period_)};
  }

private:
  AnchorReturnTypeId id_ = AnchorReturnTypeId::All;
  int period_ = 1;
};

class DataFlow {
public:
  DataFlow() = default;
  DataFlow(int batchesPerStep,
           const std::map<TensorId, AnchorReturnType> &anchors)
      : batchesPerStep_(batchesPerStep), anchors_(anchors) {
    if (batchesPerStep <= 0)
      throw tessera::OptionError("DataFlow: batchesPerStep must be at "
                                 "least 1, not " +
                                 std::to_string(batchesPerStep));
  }
  int batchesPerStep() const { return batchesPerStep_; }
  const std::map<TensorId, AnchorReturnType> &anchors() const {
    return anchors_;
  }
  tessera::onnx::DataFlow toTessera() const {
    tessera::onnx::DataFlow f;
    f.batchesPerStep = static_cast<unsigned>(batchesPerStep_);
    for (const auto &[id, art] : anchors_)
      f.anchors[id] = art.toTessera();
    return f;
  }

private:
  int batchesPerStep_ = 1;
  std::map<TensorId, AnchorReturnType> anchors_;
};

} // namespace popart
