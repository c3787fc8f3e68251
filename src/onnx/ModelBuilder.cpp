#include "tessera/onnx/ModelBuilder.hpp"

#include "ImporterInternal.hpp"

namespace tessera::onnx {

struct ModelBuilder::Impl {
  ::onnx::ModelProto model;
  std::int64_t opset = 11;
  std::size_t counter = 0;
  std::optional<std::int64_t> ipu, stage;
  std::map<std::string, int> producer; // tensor -> node index

  ::onnx::GraphProto &graph() { return *model.mutable_graph(); }
  std::string fresh(const std::string &base) {
    return base + "_" + std::to_string(counter++);
  }
  static void setAttr(::onnx::NodeProto &n, const std::string &name,
                      const NodeAttribute &value);
  void setIntAttr(const std::string &tensor, const std::string &name,
                  std::int64_t v);
};

namespace {

std::int32_t onnxType(Type t) {
  using TP = ::onnx::TensorProto;
  if (t == FLOAT)
    return TP::FLOAT;
  if (t == HALF)
    return TP::FLOAT16;
  if (t == INT)
    return TP::INT64; // what PyTorch exports for indices and labels
  if (t == BOOL)
    return TP::BOOL;
  throw UnsupportedError("ModelBuilder: tensors of type " +
                         std::string(ir::dtypeName(t)) +
                         " are not supported (float, half, int and bool are)");
}

} // namespace

void ModelBuilder::Impl::setAttr(::onnx::NodeProto &n, const std::string &name,
                                 const NodeAttribute &value) {
  using AP = ::onnx::AttributeProto;
  AP *a = nullptr;
  for (auto &existing : *n.mutable_attribute())
    if (existing.name() == name)
      a = &existing;
  if (!a)
    a = n.add_attribute();
  a->Clear();
  a->set_name(name);
  if (auto *i = std::get_if<std::int64_t>(&value)) {
    a->set_type(AP::INT);
    a->set_i(*i);
  } else if (auto *f = std::get_if<double>(&value)) {
    a->set_type(AP::FLOAT);
    a->set_f(static_cast<float>(*f));
  } else if (auto *s = std::get_if<std::string>(&value)) {
    a->set_type(AP::STRING);
    a->set_s(*s);
  } else if (auto *is = std::get_if<std::vector<std::int64_t>>(&value)) {
    a->set_type(AP::INTS);
    for (auto v : *is)
      a->add_ints(v);
  } else {
    a->set_type(AP::FLOATS);
    for (double v : std::get<std::vector<double>>(value))
      a->add_floats(static_cast<float>(v));
  }
}

void ModelBuilder::Impl::setIntAttr(const std::string &tensor,
                                    const std::string &name, std::int64_t v) {
  auto it = producer.find(tensor);
  if (it == producer.end())
    throw ir::IrError("ModelBuilder: no node produces tensor '" + tensor +
                      "' (inputs and initializers have no IPU or stage)");
  setAttr(*graph().mutable_node(it->second), name, v);
}

ModelBuilder::ModelBuilder(std::int64_t opset) : impl_(new Impl) {
  if (opset < minOpset || opset > maxOpset)
    throw OptionError("ModelBuilder: opset " + std::to_string(opset) +
                      " is outside the supported " + std::to_string(minOpset) +
                      " to " + std::to_string(maxOpset));
  impl_->opset = opset;
  impl_->model.set_ir_version(7);
  impl_->model.set_producer_name("tessera");
  auto *o = impl_->model.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  impl_->graph().set_name("model");
}

ModelBuilder::~ModelBuilder() = default;
ModelBuilder::ModelBuilder(ModelBuilder &&) noexcept = default;
ModelBuilder &ModelBuilder::operator=(ModelBuilder &&) noexcept = default;

std::int64_t ModelBuilder::opset() const { return impl_->opset; }

std::string ModelBuilder::addInput(Type dtype, const ir::Shape &shape,
                                   const std::string &name) {
  const std::string id = name.empty() ? impl_->fresh("input") : name;
  auto *vi = impl_->graph().add_input();
  vi->set_name(id);
  auto *t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnxType(dtype));
  auto *s = t->mutable_shape();
  for (std::size_t d : shape)
    s->add_dim()->set_dim_value(static_cast<std::int64_t>(d));
  return id;
}

namespace {

void fillTensor(::onnx::TensorProto &t, Type dtype, const ir::Shape &shape,
                const std::vector<double> &values) {
  if (values.size() != ir::numElements(shape))
    throw ShapeError("ModelBuilder: tensor " + ir::shapeToString(shape) +
                     " needs " + std::to_string(ir::numElements(shape)) +
                     " values, not " + std::to_string(values.size()));
  t.set_data_type(onnxType(dtype));
  for (std::size_t d : shape)
    t.add_dims(static_cast<std::int64_t>(d));
  for (double v : values) {
    if (dtype == FLOAT)
      t.add_float_data(static_cast<float>(v));
    else if (dtype == INT)
      t.add_int64_data(static_cast<std::int64_t>(v));
    else
      throw UnsupportedError("ModelBuilder: tensors of values are FLOAT or "
                             "INT");
  }
}

} // namespace

std::string ModelBuilder::addConstant(Type dtype, const ir::Shape &shape,
                                      const std::vector<double> &values,
                                      const std::string &name) {
  ::onnx::TensorProto t;
  fillTensor(t, dtype, shape, values);
  const std::string id = addNode("Constant", {}, {}, 1, name)[0];
  auto &node = *impl_->graph().mutable_node(impl_->producer.at(id));
  auto *a = node.add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  *a->mutable_t() = std::move(t);
  return id;
}

std::string ModelBuilder::addInitializer(Type dtype, const ir::Shape &shape,
                                         const std::vector<double> &values,
                                         const std::string &name) {
  ::onnx::TensorProto t; // filled (and checked) before the graph has it
  fillTensor(t, dtype, shape, values);
  const std::string id = name.empty() ? impl_->fresh("init") : name;
  t.set_name(id);
  *impl_->graph().add_initializer() = std::move(t);
  return id;
}

std::vector<std::string>
ModelBuilder::addNode(const std::string &opType,
                      const std::vector<std::string> &inputs,
                      const NodeAttributes &attributes, unsigned numOutputs,
                      const std::string &name) {
  const std::string nodeName = name.empty() ? impl_->fresh(opType) : name;
  auto *n = impl_->graph().add_node();
  n->set_op_type(opType);
  n->set_name(nodeName);
  for (const std::string &i : inputs)
    n->add_input(i);
  std::vector<std::string> outs;
  for (unsigned i = 0; i < numOutputs; ++i) {
    outs.push_back(nodeName + ":" + std::to_string(i));
    n->add_output(outs.back());
    impl_->producer[outs.back()] = impl_->graph().node_size() - 1;
  }
  for (const auto &[key, value] : attributes)
    Impl::setAttr(*n, key, value);
  if (impl_->ipu)
    Impl::setAttr(*n, "__ipu_number", *impl_->ipu);
  if (impl_->stage)
    Impl::setAttr(*n, "__pipeline_stage", *impl_->stage);
  return outs;
}

void ModelBuilder::addOutput(const std::string &tensor) {
  impl_->graph().add_output()->set_name(tensor);
}

void ModelBuilder::setIpu(std::optional<std::int64_t> ipu) { impl_->ipu = ipu; }
void ModelBuilder::setPipelineStage(std::optional<std::int64_t> stage) {
  impl_->stage = stage;
}
void ModelBuilder::setTensorIpu(const std::string &tensor, std::int64_t ipu) {
  impl_->setIntAttr(tensor, "__ipu_number", ipu);
}
void ModelBuilder::setTensorPipelineStage(const std::string &tensor,
                                          std::int64_t stage) {
  impl_->setIntAttr(tensor, "__pipeline_stage", stage);
}

std::string ModelBuilder::modelProto() const {
  return impl_->model.SerializeAsString();
}

ir::ValueType ModelBuilder::tensorType(const std::string &tensor) const {
  ::onnx::ModelProto copy = impl_->model;
  // Import needs outputs; the tensor asked about is one.
  copy.mutable_graph()->clear_output();
  copy.mutable_graph()->add_output()->set_name(tensor);
  const ImportedModel im =
      importModel(copy.SerializeAsString(), {}, "the model being built");
  return im.module.typeOf(im.module.output(tensor));
}

} // namespace tessera::onnx
