/// \file
/// PopART's Builder: writes an ONNX model (opset 12: PopART's opset-11
/// operators plus the opset-12 losses) through tessera::onnx::ModelBuilder.
///
///     auto builder = popart::Builder::create();
///     auto aiOnnx = builder->aiOnnxOpset11();
///     auto x = builder->addInputTensor(popart::TensorInfo{"FLOAT", {4, 2}});
///     auto w = builder->addInitializedInputTensor({data, {"FLOAT", {2, 3}}});
///     auto y = aiOnnx.relu({aiOnnx.matmul({x, w})});
///     builder->addOutputTensor(y);
///     std::string proto = builder->getModelProto();
#pragma once

#include <popart/names.hpp>

#include <tessera/onnx/ModelBuilder.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace popart {

class Builder;

/// The ONNX operators, one method each, as PopART's AiOnnxOpset11 has
/// them: inputs first, then the attributes, then an optional debug name.
class AiOnnxOpset11 {
public:
  explicit AiOnnxOpset11(tessera::onnx::ModelBuilder &b) : b_(&b) {}
  using Args = std::vector<TensorId>;
  using Ints = std::vector<std::int64_t>;
  using Attrs = tessera::onnx::NodeAttributes;

#define POPART_OP(method, op)                                                  \
  TensorId method(const Args &args, const std::string &name = "") {            \
    return one(op, args, {}, name);                                            \
  }
  POPART_OP(add, "Add")
  POPART_OP(sub, "Sub")
  POPART_OP(mul, "Mul")
  POPART_OP(div, "Div")
  POPART_OP(pow, "Pow")
  POPART_OP(relu, "Relu")
  POPART_OP(sigmoid, "Sigmoid")
  POPART_OP(tanh, "Tanh")
  POPART_OP(exp, "Exp")
  POPART_OP(log, "Log")
  POPART_OP(sqrt, "Sqrt")
  POPART_OP(neg, "Neg")
  POPART_OP(abs, "Abs")
  POPART_OP(identity, "Identity")
  POPART_OP(matmul, "MatMul")
  POPART_OP(globalaveragepool, "GlobalAveragePool")
  POPART_OP(globalmaxpool, "GlobalMaxPool")
  POPART_OP(reshape, "Reshape")
  POPART_OP(shape, "Shape")
  POPART_OP(clip, "Clip")
  POPART_OP(slice, "Slice")
  POPART_OP(sum, "Sum")
  POPART_OP(max, "Max")
  POPART_OP(min, "Min")
#undef POPART_OP

  TensorId gemm(const Args &args, float alpha = 1, float beta = 1,
                std::int64_t transA = 0, std::int64_t transB = 0,
                const std::string &name = "") {
    return one("Gemm", args,
               {{"alpha", double(alpha)},
                {"beta", double(beta)},
                {"transA", transA},
                {"transB", transB}},
               name);
  }
  TensorId conv(const Args &args, const Ints &dilations = {},
                std::int64_t group = 1, const Ints &kernelShape = {},
                const Ints &pads = {}, const Ints &strides = {},
                const std::string &name = "") {
    Attrs a{{"group", group}};
    set(a, "dilations", dilations);
    set(a, "kernel_shape", kernelShape);
    set(a, "pads", pads);
    set(a, "strides", strides);
    return one("Conv", args, a, name);
  }
  std::vector<TensorId>
  maxpool(const Args &args, unsigned numOutputs, const Ints &kernelShape,
          std::int64_t ceilMode = 0, const Ints &dilations = {},
          const Ints &pads = {}, std::int64_t storageOrder = 0,
          const Ints &strides = {}, const std::string &name = "") {
    Attrs a{{"kernel_shape", kernelShape},
            {"ceil_mode", ceilMode},
            {"storage_order", storageOrder}};
    set(a, "dilations", dilations);
    set(a, "pads", pads);
    set(a, "strides", strides);
    return b_->addNode("MaxPool", args, a, numOutputs, name);
  }
  TensorId averagepool(const Args &args, const Ints &kernelShape,
                       std::int64_t ceilMode = 0,
                       std::int64_t countIncludePad = 0, const Ints &pads = {},
                       const Ints &strides = {}, const std::string &name = "") {
    Attrs a{{"kernel_shape", kernelShape},
            {"ceil_mode", ceilMode},
            {"count_include_pad", countIncludePad}};
    set(a, "pads", pads);
    set(a, "strides", strides);
    return one("AveragePool", args, a, name);
  }
  std::vector<TensorId> batchnormalization(const Args &args,
                                           unsigned numOutputs = 1,
                                           float epsilon = 1e-5f,
                                           float momentum = 0.9f,
                                           const std::string &name = "") {
    return b_->addNode(
        "BatchNormalization", args,
        {{"epsilon", double(epsilon)}, {"momentum", double(momentum)}},
        numOutputs, name);
  }
  TensorId flatten(const Args &args, std::int64_t axis = 1,
                   const std::string &name = "") {
    return one("Flatten", args, {{"axis", axis}}, name);
  }
  TensorId transpose(const Args &args, const Ints &perm = {},
                     const std::string &name = "") {
    Attrs a;
    set(a, "perm", perm);
    return one("Transpose", args, a, name);
  }
  TensorId concat(const Args &args, std::int64_t axis,
                  const std::string &name = "") {
    return one("Concat", args, {{"axis", axis}}, name);
  }
  TensorId gather(const Args &args, std::int64_t axis = 0,
                  const std::string &name = "") {
    return one("Gather", args, {{"axis", axis}}, name);
  }
  TensorId squeeze(const Args &args, const Ints &axes = {},
                   const std::string &name = "") {
    Attrs a;
    set(a, "axes", axes);
    return one("Squeeze", args, a, name);
  }
  TensorId unsqueeze(const Args &args, const Ints &axes,
                     const std::string &name = "") {
    return one("Unsqueeze", args, {{"axes", axes}}, name);
  }
  TensorId reducemean(const Args &args,
                      const std::optional<Ints> &axes = std::nullopt,
                      std::int64_t keepdims = 1, const std::string &name = "") {
    return reduce("ReduceMean", args, axes, keepdims, name);
  }
  TensorId reducesum(const Args &args,
                     const std::optional<Ints> &axes = std::nullopt,
                     std::int64_t keepdims = 1, const std::string &name = "") {
    return reduce("ReduceSum", args, axes, keepdims, name);
  }
  TensorId softmax(const Args &args, std::int64_t axis = 1,
                   const std::string &name = "") {
    return one("Softmax", args, {{"axis", axis}}, name);
  }
  TensorId logsoftmax(const Args &args, std::int64_t axis = 1,
                      const std::string &name = "") {
    return one("LogSoftmax", args, {{"axis", axis}}, name);
  }
  std::vector<TensorId> dropout(const Args &args, unsigned numOutputs = 1,
                                float ratio = 0.5f,
                                const std::string &name = "") {
    return b_->addNode("Dropout", args, {{"ratio", double(ratio)}}, numOutputs,
                       name);
  }
  TensorId cast(const Args &args, const std::string &to,
                const std::string &name = "") {
    const DataType t = dataTypeFromString(to);
    // ONNX's element type numbers.
    const std::int64_t onnx = t == DataType::FLOAT     ? 1
                              : t == DataType::FLOAT16 ? 10
                              : t == DataType::INT32   ? 6
                              : t == DataType::INT64   ? 7
                                                       : 9;
    return one("Cast", args, {{"to", onnx}}, name);
  }
  TensorId pad(const Args &args, const std::string &mode = "constant",
               const std::string &name = "") {
    return one("Pad", args, {{"mode", mode}}, name);
  }
  TensorId constant(const ConstVoidData &data, bool isValueConst = true,
                    const std::string &name = "") {
    (void)isValueConst;
    return b_->addConstant(toTessera(data.info.dataType()), data.info.sizes(),
                           data.values(), name);
  }
  TensorId negativeloglikelihoodloss(const Args &args,
                                     const std::string &reduction = "mean",
                                     const std::string &name = "") {
    return one("NegativeLogLikelihoodLoss", args, {{"reduction", reduction}},
               name);
  }
  TensorId softmaxcrossentropyloss(const Args &args,
                                   const std::string &reduction = "mean",
                                   const std::string &name = "") {
    return one("SoftmaxCrossEntropyLoss", args, {{"reduction", reduction}},
               name);
  }

private:
  static void set(Attrs &a, const std::string &key, const Ints &v) {
    if (!v.empty())
      a[key] = v;
  }
  TensorId one(const std::string &op, const Args &args, const Attrs &a,
               const std::string &name) {
    return b_->addNode(op, args, a, 1, name)[0];
  }
  TensorId reduce(const std::string &op, const Args &args,
                  const std::optional<Ints> &axes, std::int64_t keepdims,
                  const std::string &name) {
    Attrs a{{"keepdims", keepdims}};
    if (axes)
      a["axes"] = *axes;
    return one(op, args, a, name);
  }
  tessera::onnx::ModelBuilder *b_;
};
using AiOnnxOpset10 = AiOnnxOpset11;

/// PopART's own operators: the losses, as ONNX operators.
class AiGraphcoreOpset1 {
public:
  explicit AiGraphcoreOpset1(tessera::onnx::ModelBuilder &b) : b_(&b) {}
  /// lambda * reduce(|x|).
  TensorId l1loss(const std::vector<TensorId> &args, float lambda,
                  ReductionType reduction = ReductionType::Mean,
                  const std::string &name = "") {
    const TensorId a = b_->addNode("Abs", args)[0];
    const TensorId r = reduceAll(a, reduction);
    const TensorId l = b_->addConstant(tessera::FLOAT, {}, {double(lambda)});
    return b_->addNode("Mul", {r, l}, {}, 1, name)[0];
  }
  /// -log(probs[label]) per row of probabilities [N, C], reduced.
  TensorId nllloss(const std::vector<TensorId> &args,
                   ReductionType reduction = ReductionType::Mean,
                   const std::string &name = "") {
    const TensorId logp = b_->addNode("Log", {args.at(0)})[0];
    return b_->addNode("NegativeLogLikelihoodLoss", {logp, args.at(1)},
                       {{"reduction", reductionName(reduction)}}, 1, name)[0];
  }
  /// reduce(x): x is the loss already.
  TensorId identityloss(const std::vector<TensorId> &args,
                        ReductionType reduction = ReductionType::Mean,
                        const std::string &name = "") {
    const TensorId r = reduceAll(args.at(0), reduction);
    return b_->addNode("Identity", {r}, {}, 1, name)[0];
  }

private:
  static std::string reductionName(ReductionType r) {
    return r == ReductionType::Sum    ? "sum"
           : r == ReductionType::Mean ? "mean"
                                      : "none";
  }
  TensorId reduceAll(const TensorId &x, ReductionType r) {
    if (r == ReductionType::NoReduction)
      return x;
    return b_->addNode(r == ReductionType::Sum ? "ReduceSum" : "ReduceMean",
                       {x}, {{"keepdims", std::int64_t{0}}})[0];
  }
  tessera::onnx::ModelBuilder *b_;
};

class Builder {
public:
  static std::unique_ptr<Builder> create() {
    return std::unique_ptr<Builder>(new Builder);
  }
  AiOnnxOpset11 aiOnnxOpset11() { return AiOnnxOpset11(b_); }
  AiOnnxOpset10 aiOnnxOpset10() { return AiOnnxOpset10(b_); }
  AiGraphcoreOpset1 aiGraphcoreOpset1() { return AiGraphcoreOpset1(b_); }

  TensorId addInputTensor(const TensorInfo &info,
                          const std::string &name = "") {
    return b_.addInput(toTessera(info.dataType()), info.sizes(), name);
  }
  TensorId addInputTensor(const std::string &type, const Shape &shape,
                          const std::string &name = "") {
    return addInputTensor(TensorInfo(type, shape), name);
  }
  /// A weight: trained by a TrainingSession.
  TensorId addInitializedInputTensor(const ConstVoidData &data,
                                     const std::string &name = "") {
    return b_.addInitializer(toTessera(data.info.dataType()), data.info.sizes(),
                             data.values(), name);
  }
  void addOutputTensor(const TensorId &id) { b_.addOutput(id); }
  /// The serialised ModelProto.
  std::string getModelProto() const { return b_.modelProto(); }
  Shape getTensorShape(const TensorId &id) const {
    const auto t = b_.tensorType(id);
    return {t.shape.begin(), t.shape.end()};
  }

  /// Placement of the node producing \p id (set after building it).
  void virtualGraph(const TensorId &id, std::int64_t ipu) {
    b_.setTensorIpu(id, ipu);
  }
  void pipelineStage(const TensorId &id, std::int64_t stage) {
    b_.setTensorPipelineStage(id, stage);
  }
  /// Placement of the nodes built from now on.
  void setVirtualGraph(std::int64_t ipu) { b_.setIpu(ipu); }
  void setPipelineStage(std::int64_t stage) { b_.setPipelineStage(stage); }

private:
  Builder() : b_(12) {}
  tessera::onnx::ModelBuilder b_;
};

} // namespace popart
