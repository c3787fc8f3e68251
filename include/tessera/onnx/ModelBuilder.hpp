/// \file
/// Writing ONNX models in C++ (what PopART's Builder does): inputs,
/// initializers and nodes of the default domain are added one at a time,
/// and modelProto() gives the serialised ModelProto that importModel() and
/// ModelSession take, or that a file can hold.
///
///     onnx::ModelBuilder b(11);
///     std::string x = b.addInput(FLOAT, {4, 2}, "x");
///     std::string w = b.addInitializer(FLOAT, {2, 3}, weights, "w");
///     std::string y = b.addNode("MatMul", {x, w})[0];
///     b.addOutput(y);
///     std::string bytes = b.modelProto();
///
/// Nodes added while setIpu / setPipelineStage hold a value carry it as
/// PopART's "__ipu_number" / "__pipeline_stage" attributes, which the
/// importer turns into IR shard and stage annotations.
#pragma once

#include "tessera/ir/Module.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tessera::onnx {

/// One node attribute: an int, a float, a string, ints or floats.
using NodeAttribute =
    std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>,
                 std::vector<double>>;
using NodeAttributes = std::map<std::string, NodeAttribute>;

class ModelBuilder {
public:
  /// A model of the default domain's opset \p opset (minOpset..maxOpset).
  explicit ModelBuilder(std::int64_t opset = 11);
  ~ModelBuilder();
  ModelBuilder(ModelBuilder &&) noexcept;
  ModelBuilder &operator=(ModelBuilder &&) noexcept;

  std::int64_t opset() const;
  /// A graph input; an empty \p name is made up. Returns the tensor's name.
  std::string addInput(Type dtype, const ir::Shape &shape,
                       const std::string &name = "");
  /// An initializer holding \p values (one per element; FLOAT or INT);
  /// ShapeError when their number differs from the shape's.
  std::string addInitializer(Type dtype, const ir::Shape &shape,
                             const std::vector<double> &values,
                             const std::string &name = "");
  /// A Constant node holding \p values (FLOAT or INT): a tensor that is no
  /// weight, so training leaves it alone.
  std::string addConstant(Type dtype, const ir::Shape &shape,
                          const std::vector<double> &values,
                          const std::string &name = "");
  /// A node of \p opType with \p numOutputs outputs; returns their names.
  std::vector<std::string> addNode(const std::string &opType,
                                   const std::vector<std::string> &inputs,
                                   const NodeAttributes &attributes = {},
                                   unsigned numOutputs = 1,
                                   const std::string &name = "");
  /// Marks \p tensor as a graph output.
  void addOutput(const std::string &tensor);
  /// The IPU / pipeline stage of the nodes added from now on (nullopt:
  /// none).
  void setIpu(std::optional<std::int64_t> ipu);
  void setPipelineStage(std::optional<std::int64_t> stage);
  /// The IPU of the node producing \p tensor, set afterwards.
  void setTensorIpu(const std::string &tensor, std::int64_t ipu);
  void setTensorPipelineStage(const std::string &tensor, std::int64_t stage);

  /// The serialised ModelProto.
  std::string modelProto() const;
  /// The type of \p tensor, from importing the model built so far
  /// (SerializationError when no tensor has that name).
  ir::ValueType tensorType(const std::string &tensor) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tessera::onnx
