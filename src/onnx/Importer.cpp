#include "ImporterInternal.hpp"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

namespace tessera::onnx {
namespace detail {

namespace {

// Bytes per element of the ONNX types tensorValue reads from raw_data.
std::size_t rawElementSize(std::int32_t t) {
  using TP = ::onnx::TensorProto;
  switch (t) {
  case TP::FLOAT:
  case TP::INT32:
  case TP::UINT32:
    return 4;
  case TP::DOUBLE:
  case TP::INT64:
  case TP::UINT64:
    return 8;
  case TP::INT16:
  case TP::UINT16:
    return 2;
  case TP::INT8:
  case TP::UINT8:
  case TP::BOOL:
    return 1;
  default:
    return 0;
  }
}

template <typename T>
void readRaw(const std::string &raw, std::vector<double> &out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

void decodeRaw(std::int32_t t, const std::string &raw,
               std::vector<double> &out) {
  using TP = ::onnx::TensorProto;
  switch (t) {
  case TP::FLOAT:
    return readRaw<float>(raw, out);
  case TP::DOUBLE:
    return readRaw<double>(raw, out);
  case TP::INT32:
    return readRaw<std::int32_t>(raw, out);
  case TP::UINT32:
    return readRaw<std::uint32_t>(raw, out);
  case TP::INT64:
    return readRaw<std::int64_t>(raw, out);
  case TP::UINT64:
    return readRaw<std::uint64_t>(raw, out);
  case TP::INT16:
    return readRaw<std::int16_t>(raw, out);
  case TP::UINT16:
    return readRaw<std::uint16_t>(raw, out);
  case TP::INT8:
    return readRaw<std::int8_t>(raw, out);
  default:
    return readRaw<std::uint8_t>(raw, out);
  }
}

template <typename Field>
void copyField(const Field &f, std::vector<double> &out) {
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<double>(f.Get(static_cast<int>(i)));
}

} // namespace

Type elementType(std::int32_t onnxType, const std::string &what) {
  using TP = ::onnx::TensorProto;
  switch (onnxType) {
  case TP::FLOAT:
  case TP::DOUBLE: // computed in float, as the IPU would
    return FLOAT;
  case TP::FLOAT16:
    return HALF;
  case TP::INT64:
  case TP::INT32:
  case TP::INT16:
  case TP::INT8:
    return INT;
  case TP::UINT32:
  case TP::UINT64:
  case TP::UINT16:
    return UNSIGNED_INT;
  case TP::UINT8:
    return Type::UNSIGNED_CHAR;
  case TP::BOOL:
    return BOOL;
  default:
    throw UnsupportedError(what + " has ONNX element type " +
                           std::to_string(onnxType) +
                           ", which Tessera has no type for (float, half, "
                           "double, bool and the integer types import)");
  }
}

ir::HostValue tensorValue(const ::onnx::TensorProto &t, std::size_t maxElements,
                          const std::string &what) {
  if (t.data_location() == ::onnx::TensorProto::EXTERNAL)
    throw UnsupportedError(what +
                           " keeps its data in an external file, "
                           "which the importer does not read; save the "
                           "model with its tensors inside the .onnx file");
  ir::HostValue v;
  v.dtype = elementType(t.data_type(), what);
  std::size_t n = 1;
  for (std::int64_t d : t.dims()) {
    if (d < 0 || static_cast<std::uint64_t>(d) > maxElements ||
        (d != 0 && n > maxElements / static_cast<std::size_t>(d)))
      throw ShapeError(what + " has dimension " + std::to_string(d) +
                       ", making more than the " + std::to_string(maxElements) +
                       " elements a tensor may have "
                       "(ImportOptions::maxElements)");
    n *= static_cast<std::size_t>(d);
    v.shape.push_back(static_cast<std::size_t>(d));
  }
  const std::int32_t dt = t.data_type();
  std::size_t present = 0;
  using TP = ::onnx::TensorProto;
  if (t.has_raw_data()) {
    const std::size_t size = rawElementSize(dt);
    if (size == 0)
      throw UnsupportedError(what + ": raw data of ONNX element type " +
                             std::to_string(dt) + " is not read");
    present = t.raw_data().size() / size;
    if (t.raw_data().size() % size != 0)
      present = std::numeric_limits<std::size_t>::max();
  } else if (dt == TP::FLOAT) {
    present = static_cast<std::size_t>(t.float_data_size());
  } else if (dt == TP::DOUBLE) {
    present = static_cast<std::size_t>(t.double_data_size());
  } else if (dt == TP::INT64) {
    present = static_cast<std::size_t>(t.int64_data_size());
  } else if (dt == TP::UINT64 || dt == TP::UINT32) {
    present = static_cast<std::size_t>(t.uint64_data_size());
  } else if (dt != TP::FLOAT16) {
    present = static_cast<std::size_t>(t.int32_data_size());
  }
  if (present != n)
    throw ShapeError(what + " has shape " + ir::shapeToString(v.shape) + " (" +
                     std::to_string(n) + " elements) but its data " + "holds " +
                     (present == std::numeric_limits<std::size_t>::max()
                          ? std::string("a partial element")
                          : std::to_string(present) + " elements") +
                     ": the file is truncated or corrupt");
  v.values.resize(n);
  if (t.has_raw_data())
    decodeRaw(dt, t.raw_data(), v.values);
  else if (dt == TP::FLOAT)
    copyField(t.float_data(), v.values);
  else if (dt == TP::DOUBLE)
    copyField(t.double_data(), v.values);
  else if (dt == TP::INT64)
    copyField(t.int64_data(), v.values);
  else if (dt == TP::UINT64 || dt == TP::UINT32)
    copyField(t.uint64_data(), v.values);
  else
    copyField(t.int32_data(), v.values);
  return v;
}

bool fits(const ir::Shape &shape, std::size_t maxElements) {
  std::size_t n = 1;
  for (std::size_t d : shape) {
    if (d != 0 && n > maxElements / d)
      return false;
    n *= d;
  }
  return n <= maxElements;
}

std::vector<std::int64_t> toInts(const ir::Shape &shape) {
  return {shape.begin(), shape.end()};
}

// ---- Context ---------------------------------------------------------------

void Context::define(const std::string &name, Slot slot) {
  if (slot.value.valid() && !slot.known &&
      module_.value(slot.value.id()).name.empty())
    module_.setName(slot.value.id(), name);
  tensors_[name] = std::move(slot);
}

Slot &Context::tensor(const std::string &name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    throw SerializationError(
        where() + " uses tensor '" + name +
        "', which no graph input, initializer or earlier node defines: the "
        "file is truncated or corrupt, or its nodes are not in "
        "topological order");
  return it->second;
}

std::map<std::string, ir::ValueId, std::less<>> Context::valueTensors() const {
  std::map<std::string, ir::ValueId, std::less<>> r;
  for (const auto &[name, slot] : tensors_)
    if (slot.value.valid())
      r[name] = slot.value.id();
  return r;
}

ir::Value Context::materialise(Slot &slot, std::optional<Type> dtype) {
  if (slot.known &&
      (!slot.value.valid() || (dtype && slot.value.dtype() != *dtype))) {
    const Type t = dtype ? *dtype : slot.known->dtype;
    ir::Value v = builder_.constant(slot.known->values, slot.known->shape, t);
    if (dtype && *dtype != slot.known->dtype)
      return v;
    slot.value = v;
  }
  return slot.value;
}

std::string Context::where() const {
  if (!node_)
    return "the graph";
  const std::string name =
      node_->name().empty()
          ? (node_->output_size() ? "producing '" + node_->output(0) + "'"
                                  : std::string("(unnamed)"))
          : "'" + node_->name() + "'";
  return "node " + name + " (" + node_->op_type() + ", opset " +
         std::to_string(opset_) + ")";
}

void Context::unsupported(const std::string &what) const {
  throw UnsupportedError(where() + ": " + what);
}

void Context::shapeError(const std::string &what) const {
  throw ShapeError(where() + ": " + what);
}

bool Context::has(int i) const {
  return i < node_->input_size() && !node_->input(i).empty();
}

Slot &Context::in(int i) {
  if (!has(i))
    shapeError("input " + std::to_string(i) + " is missing (the node has " +
               std::to_string(node_->input_size()) + " inputs)");
  return tensor(node_->input(i));
}

const ir::HostValue &Context::known(int i, const std::string &what) {
  Slot &s = in(i);
  if (s.known)
    return *s.known;
  // A float initializer is a variable; its values are still known here.
  const ir::ValueInfo &info = module_.value(s.value.id());
  if (info.kind == ir::ValueKind::Variable) {
    const ir::Initialiser &init = module_.variableOf(s.value.id()).init;
    if (init.kind == ir::InitKind::Values) {
      s.known = ir::HostValue{info.type.dtype, info.type.shape, init.values};
      return *s.known;
    }
  }
  unsupported("input " + std::to_string(i) + " ('" + node_->input(i) +
              "', the " + what +
              ") must be known when the model is imported (a constant, an "
              "initializer, or computed from them and from shapes), but it "
              "is computed on the device");
}

std::vector<std::int64_t> Context::knownInts(int i, const std::string &what) {
  const ir::HostValue &k = known(i, what);
  std::vector<std::int64_t> r;
  r.reserve(k.values.size());
  for (double v : k.values)
    r.push_back(v >= 9.2e18    ? std::numeric_limits<std::int64_t>::max()
                : v <= -9.2e18 ? std::numeric_limits<std::int64_t>::min()
                               : static_cast<std::int64_t>(v));
  return r;
}

bool Context::wantsOutput(int i) const {
  return i < node_->output_size() && !node_->output(i).empty();
}

bool Context::outputConsumed(int i) const {
  return wantsOutput(i) && consumed_.count(node_->output(i)) != 0;
}

ir::Value Context::dropoutSeed() {
  if (!dropoutSeed_) {
    // The variable is made outside any node's scopes: it is the model's.
    const ir::Annotations saved = module_.currentAnnotations();
    const std::string prefix = module_.currentNamePrefix();
    module_.currentAnnotations() = {};
    module_.currentNamePrefix().clear();
    ir::Value seed = builder_.variable(
        "tessera/dropout_seed", {2},
        ir::init::values({double(seed_ & 0xffffffffu), double(seed_ >> 32)}),
        UNSIGNED_INT, /*trainable=*/false);
    // Each step adds one to the second word: new masks every step.
    addStateUpdate(seed, seed + builder_.constant({0, 1}, {2}, UNSIGNED_INT));
    module_.currentAnnotations() = saved;
    module_.currentNamePrefix() = prefix;
    dropoutSeed_ = seed;
  }
  return *dropoutSeed_;
}

void Context::out(int i, Slot slot) {
  if (wantsOutput(i))
    define(node_->output(i), std::move(slot));
}

const ::onnx::AttributeProto *Context::attr(const std::string &name) const {
  for (const auto &a : node_->attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

std::int64_t Context::attrInt(const std::string &name,
                              std::int64_t dflt) const {
  const auto *a = attr(name);
  return a ? a->i() : dflt;
}

double Context::attrFloat(const std::string &name, double dflt) const {
  const auto *a = attr(name);
  return a ? a->f() : dflt;
}

std::string Context::attrString(const std::string &name,
                                const std::string &dflt) const {
  const auto *a = attr(name);
  return a ? a->s() : dflt;
}

std::optional<std::vector<std::int64_t>>
Context::attrInts(const std::string &name) const {
  const auto *a = attr(name);
  if (!a)
    return std::nullopt;
  return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

Slot Context::apply(ir::OpKind kind, std::vector<Slot> operands,
                    ir::Attributes attrs) {
  const bool allKnown =
      std::all_of(operands.begin(), operands.end(),
                  [](const Slot &s) { return s.known.has_value(); });
  if (allKnown) {
    std::vector<ir::ValueType> types;
    std::vector<const ir::HostValue *> values;
    for (const Slot &s : operands) {
      types.push_back(s.type());
      values.push_back(&*s.known);
    }
    const auto resultTypes = ir::inferResultTypes(kind, types, attrs);
    if (!fits(resultTypes[0].shape, maxElements_))
      shapeError("folding makes " + resultTypes[0].toString() +
                 ", more elements than ImportOptions::maxElements allows");
    auto r = ir::interpretOp(kind, attrs, values, resultTypes);
    return Slot{{}, std::move(r[0])};
  }
  std::vector<ir::Value> values;
  for (Slot &s : operands)
    values.push_back(materialise(s));
  return Slot{ir::apply(module_, kind, values, std::move(attrs))[0], {}};
}

Slot Context::knownSlot(Type dtype, ir::Shape shape, std::vector<double> data) {
  return Slot{{}, ir::HostValue{dtype, std::move(shape), std::move(data)}};
}

std::size_t Context::axis(std::int64_t axis, std::size_t rank) const {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    shapeError("axis " + std::to_string(axis) + " is outside [" +
               std::to_string(-r) + ", " + std::to_string(r) + ") for a rank-" +
               std::to_string(rank) + " input");
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

const std::map<std::string, Converter, std::less<>> &converters() {
  static const auto table = [] {
    std::map<std::string, Converter, std::less<>> t;
    addNnConverters(t);
    addShapeConverters(t);
    return t;
  }();
  return table;
}

} // namespace detail

namespace {

using detail::Context;
using detail::Slot;

std::int64_t defaultOpset(const ::onnx::ModelProto &model,
                          const std::string &source) {
  std::optional<std::int64_t> opset;
  for (const auto &o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx")
      opset = o.version();
  if (!opset)
    throw SerializationError(
        source + " imports no opset of the default ONNX domain: the file is "
                 "truncated or is not an ONNX model");
  if (*opset < minOpset || *opset > maxOpset)
    throw UnsupportedError(
        source + " uses opset " + std::to_string(*opset) +
        "; Tessera imports opsets " + std::to_string(minOpset) + " to " +
        std::to_string(maxOpset) +
        " (convert it with onnx.version_converter.convert_version)");
  return *opset;
}

ir::Shape inputShape(const ::onnx::ValueInfoProto &vi,
                     const ImportOptions &options) {
  const std::string what = "graph input '" + vi.name() + "'";
  if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape())
    throw ShapeError(what + " has no tensor shape; Tessera needs static "
                            "shapes (export with a fixed input size)");
  ir::Shape shape;
  std::size_t n = 1;
  for (const auto &d : vi.type().tensor_type().shape().dim()) {
    std::size_t size = 0;
    if (d.has_dim_value()) {
      if (d.dim_value() <= 0)
        throw ShapeError(what + " has dimension " +
                         std::to_string(d.dim_value()) +
                         "; dimensions must be positive");
      size = static_cast<std::size_t>(d.dim_value());
    } else {
      auto it = options.dimensions.find(d.dim_param());
      if (it == options.dimensions.end())
        throw ShapeError(what + " has symbolic dimension '" + d.dim_param() +
                         "'; give its size in ImportOptions::dimensions");
      size = it->second;
    }
    if (size == 0 || size > options.maxElements / n)
      throw ShapeError(what + " has more than the " +
                       std::to_string(options.maxElements) +
                       " elements a tensor may have");
    n *= size;
    shape.push_back(size);
  }
  return shape;
}

// Initializers that are statistics, not weights: batch normalisation's
// running mean and variance (PyTorch's buffers), which training leaves
// alone.
std::set<std::string> statistics(const ::onnx::GraphProto &g) {
  std::set<std::string> names;
  for (const auto &node : g.node())
    if (node.op_type() == "BatchNormalization")
      for (int i = 3; i < std::min(node.input_size(), 5); ++i)
        names.insert(node.input(i));
  return names;
}

void defineLeaves(const ::onnx::GraphProto &g, Context &ctx,
                  const ImportOptions &options, ImportedModel &result) {
  const std::set<std::string> fixed = statistics(g);
  std::set<std::string, std::less<>> frozen = options.frozen;
  for (const auto &t : g.initializer()) {
    const std::string what = "initializer '" + t.name() + "'";
    ir::HostValue v = detail::tensorValue(t, options.maxElements, what);
    if (v.dtype == FLOAT || v.dtype == HALF) {
      const bool trainable = options.trainableInitializers &&
                             !fixed.count(t.name()) && !frozen.count(t.name());
      frozen.erase(t.name());
      ir::Value var = ctx.builder().variable(
          t.name(), v.shape, ir::init::values(std::move(v.values)), v.dtype,
          trainable);
      ctx.define(t.name(), Slot{var, {}});
    } else {
      ctx.define(t.name(), Slot{{}, std::move(v)});
    }
  }
  if (!frozen.empty())
    throw OptionError("ImportOptions::frozen names '" + *frozen.begin() +
                      "', which is no float initializer of the model (" +
                      std::to_string(frozen.size()) +
                      " such names); name weights as the file does");
  for (const auto &vi : g.input()) {
    if (ctx.defined(vi.name()))
      continue; // an initializer listed as an input too (IR version < 4)
    const Type dtype = detail::elementType(vi.type().tensor_type().elem_type(),
                                           "graph input '" + vi.name() + "'");
    ir::Value x =
        ctx.builder().input(vi.name(), dtype, inputShape(vi, options));
    ctx.define(vi.name(), Slot{x, {}});
    result.inputs.push_back(x.name());
  }
}

std::string supportedList() {
  std::string s;
  for (const std::string &op : supportedOperators())
    s += (s.empty() ? "" : ", ") + op;
  return s;
}

std::optional<unsigned> intAttribute(const ::onnx::NodeProto &node,
                                     const std::string &name) {
  for (const auto &a : node.attribute())
    if (a.name() == name && a.i() >= 0 && a.i() <= INT_MAX)
      return static_cast<unsigned>(a.i());
  return std::nullopt;
}

// PopART's placement attributes. Without pipelining "__ipu_number" shards
// and stages are ignored; with it each node's stage (its
// "__pipeline_stage", or its IPU when no node of the model has a stage,
// as PopART derives stages from virtual graphs) is recorded with the IPU
// it names, one IPU per stage.
class Placements {
public:
  Placements(const ::onnx::GraphProto &g, bool pipelining)
      : pipelining_(pipelining) {
    for (const auto &node : g.node())
      staged_ = staged_ || intAttribute(node, "__pipeline_stage").has_value();
  }

  // Opens the node's scopes on the builder.
  void enter(const Context &ctx, std::optional<ir::ShardScope> &shard,
             std::optional<ir::StageScope> &stage, ir::Builder &b) {
    const ::onnx::NodeProto &node = ctx.node();
    const std::optional<unsigned> ipu = intAttribute(node, "__ipu_number");
    if (!pipelining_) {
      if (ipu)
        shard.emplace(b, *ipu);
      return;
    }
    const std::optional<unsigned> s =
        staged_ ? intAttribute(node, "__pipeline_stage") : ipu;
    if (!s) {
      if (ipu)
        shard.emplace(b, *ipu);
      return;
    }
    stage.emplace(b, *s);
    Stage &st = stages_[*s];
    st.node = st.node.empty() ? ctx.where() : st.node;
    if (!ipu)
      return;
    if (st.ipu && *st.ipu != *ipu)
      throw OptionError(
          "pipelining: pipeline stage " + std::to_string(*s) +
          " is spread over IPUs " + std::to_string(*st.ipu) + " (" +
          st.ipuNode + ") and " + std::to_string(*ipu) + " (" + ctx.where() +
          "); a stage runs on one IPU: give its nodes the same virtual graph "
          "(\"__ipu_number\") or split it into two stages");
    st.ipu = ipu;
    st.ipuNode = ctx.where();
  }

  // The stage count and the IPU of each stage.
  void finish(ImportedModel &result) const {
    if (stages_.empty())
      return;
    result.stages = stages_.rbegin()->first + 1;
    bool anyIpu = false;
    for (const auto &[s, st] : stages_)
      anyIpu = anyIpu || st.ipu.has_value();
    for (unsigned s = 0; s < result.stages; ++s) {
      auto it = stages_.find(s);
      if (it == stages_.end())
        throw OptionError("pipelining: the model has pipeline stage " +
                          std::to_string(result.stages - 1) +
                          " but no node in stage " + std::to_string(s) +
                          "; number the stages 0, 1, 2, ... without gaps");
      if (anyIpu && !it->second.ipu)
        throw OptionError("pipelining: pipeline stage " + std::to_string(s) +
                          " (" + it->second.node +
                          ", ...) names no IPU while other stages do; give "
                          "its nodes a virtual graph (\"__ipu_number\")");
      if (anyIpu)
        result.stageIpus.push_back(*it->second.ipu);
    }
  }

private:
  struct Stage {
    std::optional<unsigned> ipu;
    std::string node, ipuNode;
  };
  bool pipelining_;
  bool staged_ = false;
  std::map<unsigned, Stage> stages_;
};

void convertNodes(const ::onnx::GraphProto &g, Context &ctx,
                  const ImportOptions &options, ImportedModel &result) {
  const auto &table = detail::converters();
  Placements placements(g, options.pipelining);
  for (const auto &node : g.node()) {
    ctx.setNode(node);
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      ctx.unsupported(
          "operators of domain '" + node.domain() +
          "' are not supported; the default domain's are: " + supportedList());
    auto it = table.find(node.op_type());
    if (it == table.end())
      ctx.unsupported(
          "operator " + node.op_type() +
          " is not supported; the supported ones are: " + supportedList());
    for (int i = 0; i < node.input_size(); ++i)
      if (!node.input(i).empty())
        ctx.tensor(node.input(i)); // undefined inputs fail here, named
    ir::NameScope scope(ctx.builder(),
                        node.name().empty() ? node.op_type() : node.name());
    // PopART's placement attributes become IR annotations.
    std::optional<ir::ShardScope> shard;
    std::optional<ir::StageScope> stage;
    placements.enter(ctx, shard, stage, ctx.builder());
    try {
      it->second(ctx);
    } catch (const std::logic_error &e) {
      // A converter indexing past what a malformed node holds (too few
      // inputs or attribute values) is the file's fault, not a crash.
      throw SerializationError(ctx.where() + " is malformed (" + e.what() +
                               "); it is not a node an ONNX exporter writes");
    }
    // Attributes size the results; none may exceed what a file may hold.
    for (const std::string &o : node.output())
      if (!o.empty() && ctx.defined(o) &&
          !detail::fits(ctx.tensor(o).type().shape, options.maxElements))
        ctx.shapeError("its output '" + o + "' would be " +
                       ctx.tensor(o).type().toString() +
                       ", more elements than ImportOptions::maxElements (" +
                       std::to_string(options.maxElements) + ") allows");
  }
  placements.finish(result);
}

ImportedModel importGraph(const ::onnx::ModelProto &model,
                          const ImportOptions &options,
                          const std::string &source) {
  if (!model.has_graph() || model.ir_version() <= 0)
    throw SerializationError(source + " has no graph or no IR version: it "
                                      "is not an ONNX model, or is truncated");
  const std::int64_t opset = defaultOpset(model, source);
  const ::onnx::GraphProto &g = model.graph();
  if (g.output_size() == 0)
    throw SerializationError(source + "'s graph has no outputs: the file is "
                                      "truncated or not an ONNX model");
  ImportedModel result{
      ir::Module(options.moduleName.empty() ? g.name() : options.moduleName),
      {},
      {},
      opset,
      {},
      {},
      {},
      0};
  Context ctx(result.module, opset, options.maxElements);
  ctx.setTraining(options.training, options.seed);
  std::set<std::string> consumed;
  for (const auto &node : g.node())
    consumed.insert(node.input().begin(), node.input().end());
  for (const auto &o : g.output())
    consumed.insert(o.name());
  ctx.setConsumed(std::move(consumed));
  defineLeaves(g, ctx, options, result);
  convertNodes(g, ctx, options, result);
  ctx.clearNode();
  for (const auto &o : g.output()) {
    Slot &s = ctx.tensor(o.name());
    result.module.addOutput(o.name(), ctx.materialise(s).id());
    result.outputs.push_back(o.name());
  }
  result.tensors = ctx.valueTensors();
  result.stateUpdates = ctx.stateUpdates();
  return result;
}

} // namespace

ImportedModel importModel(std::string_view bytes, const ImportOptions &options,
                          const std::string &source) {
  if (bytes.empty())
    throw SerializationError(source + " is empty: it is not an ONNX model");
  if (bytes.size() > static_cast<std::size_t>(INT_MAX))
    throw UnsupportedError(source + " is " + std::to_string(bytes.size()) +
                           " bytes; ONNX files are limited to 2 GiB");
  ::onnx::ModelProto model;
  google::protobuf::io::CodedInputStream in(
      reinterpret_cast<const std::uint8_t *>(bytes.data()),
      static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    throw SerializationError(
        source + " (" + std::to_string(bytes.size()) +
        " bytes) is not a valid ONNX model: protobuf could not parse it as "
        "a ModelProto (the file is truncated, corrupt, or not ONNX)");
  return importGraph(model, options, source);
}

ImportedModel importModelFile(const std::string &path,
                              const ImportOptions &options) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw SerializationError("cannot open ONNX file '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return importModel(ss.str(), options, "'" + path + "'");
}

std::vector<std::string> supportedOperators() {
  std::vector<std::string> ops;
  for (const auto &[name, fn] : detail::converters())
    ops.push_back(name);
  return ops;
}

} // namespace tessera::onnx
