// Layers and symbolic tensors: thin constructors over tessera::nn's layers
// taking the arguments tessera.keras.layers has already put in C++ terms.
#include "Bindings.hpp"

#include "tessera/nn/Layers.hpp"
#include "tessera/nn/Outfeed.hpp"

#include <pybind11/stl.h>

namespace tessera::python {

namespace {

using InitOpt = std::optional<ir::Initialiser>;

nn::Padding padding(const std::string &p) {
  if (p == "valid")
    return nn::Padding::Valid;
  if (p == "same")
    return nn::Padding::Same;
  throw OptionError("padding must be \"valid\" or \"same\", got \"" + p + "\"");
}

nn::Size2 size2(const std::vector<unsigned> &v, const char *what) {
  if (v.size() != 2)
    throw OptionError(std::string(what) + " takes two numbers (height, width)");
  return {v[0], v[1]};
}

// Keras' ReLU and Softmax layers: an activation under its own class name.
class NamedActivation : public nn::ActivationLayer {
public:
  NamedActivation(nn::Activation a, std::string type, std::string def,
                  std::string name)
      : nn::ActivationLayer(a, std::move(name)), type_(std::move(type)),
        default_(std::move(def)) {}
  std::string typeName() const override { return type_; }
  std::string defaultName() const override { return default_; }
  std::shared_ptr<nn::Layer> clone() const override {
    return std::make_shared<NamedActivation>(*this);
  }

private:
  std::string type_, default_;
};

ir::Initialiser initialiser(const std::string &kind, double a, double b,
                            std::uint64_t seed) {
  namespace I = ir::init;
  if (kind == "zeros")
    return I::zeros();
  if (kind == "ones")
    return I::ones();
  if (kind == "constant")
    return I::constant(a);
  if (kind == "random_uniform")
    return I::uniform(a, b, seed);
  if (kind == "random_normal")
    return I::normal(a, b, seed);
  if (kind == "truncated_normal")
    return I::truncatedNormal(a, b, seed);
  if (kind == "glorot_uniform")
    return I::glorotUniform(seed);
  if (kind == "glorot_normal")
    return I::glorotNormal(seed);
  if (kind == "he_uniform")
    return I::heUniform(seed);
  if (kind == "he_normal")
    return I::heNormal(seed);
  throw OptionError(
      "unknown initializer \"" + kind +
      "\"; use zeros, ones, constant, random_uniform, random_normal, "
      "truncated_normal, glorot_uniform, glorot_normal, he_uniform or "
      "he_normal");
}

template <typename L>
using LayerClass = py::class_<L, nn::Layer, std::shared_ptr<L>>;

} // namespace

void bindLayers(py::module_ &m) {
  py::class_<ir::Initialiser>(m, "Initialiser")
      .def("__repr__", &ir::Initialiser::toString);
  m.def("initialiser", &initialiser, py::arg("kind"), py::arg("a") = 0.0,
        py::arg("b") = 0.0, py::arg("seed") = 0,
        "An initialiser by its Keras name; a and b are its parameters "
        "(constant: value; uniform: low, high; normal: mean, stddev).");

  m.def(
      "set_global_policy",
      [](const std::string &name) { nn::setGlobalPolicy(name); },
      py::arg("name"), "The dtype policy layers made from now on take.");
  m.def("global_policy", [] { return nn::globalPolicy().name(); });
  m.def(
      "policy_dtypes",
      [](const std::string &name) {
        const nn::Policy p(name);
        return py::make_tuple(dtypeOf(p.computeDtype()),
                              dtypeOf(p.variableDtype()));
      },
      py::arg("name"),
      "(compute dtype, variable dtype) of the policy named `name`.");

  py::class_<nn::KerasTensor>(m, "KerasTensor",
                              "A symbolic tensor of a functional model.")
      .def_property_readonly("layer_name", [](const nn::KerasTensor &t) {
        return t.layer().name();
      });

  py::class_<nn::Layer, std::shared_ptr<nn::Layer>>(m, "Layer")
      .def_property("name", &nn::Layer::name, &nn::Layer::setName)
      .def_property_readonly("type_name", &nn::Layer::typeName)
      .def("clone", &nn::Layer::clone)
      .def_property(
          "dtype_policy",
          [](const nn::Layer &l) { return l.dtypePolicy().name(); },
          [](nn::Layer &l, const std::string &name) { l.setDtypePolicy(name); },
          "The name of the layer's dtype policy (float32, mixed_float16, "
          "float16).")
      .def_property_readonly(
          "compute_dtype",
          [](const nn::Layer &l) {
            return l.dtypePolicy().computeDtype() == HALF ? "float16"
                                                          : "float32";
          },
          "The type the layer computes in, as Keras' layer.compute_dtype.")
      .def_property_readonly(
          "dtype",
          [](const nn::Layer &l) {
            return l.dtypePolicy().variableDtype() == HALF ? "float16"
                                                           : "float32";
          },
          "The type of the layer's variables, as Keras' layer.dtype.")
      .def(
          "set_partials_type",
          [](nn::Layer &l, const std::string &dtype) {
            l.setPartialsType(typeOfName(dtype));
          },
          py::arg("dtype"),
          "float32 or float16: the accumulation type of the layer's "
          "matmuls and convolutions.")
      .def("__call__",
           [](const nn::Layer &l, const nn::KerasTensor &x) { return l(x); })
      .def("__call__",
           [](const nn::Layer &l, const std::vector<nn::KerasTensor> &xs) {
             return l(xs);
           });

  LayerClass<nn::Input>(m, "Input")
      .def(py::init([](std::vector<std::size_t> shape, const std::string &dtype,
                       std::string name) {
             return nn::Input(shape, typeOfName(dtype), std::move(name));
           }),
           py::arg("shape"), py::arg("dtype") = "float32", py::arg("name") = "")
      .def_property_readonly("shape", &nn::Input::shape)
      .def_property_readonly(
          "dtype", [](const nn::Input &i) { return dtypeOf(i.dtype()); })
      .def("tensor", [](const nn::Input &i) { return nn::KerasTensor(i); });

  LayerClass<nn::Dense>(m, "Dense")
      .def(py::init([](unsigned units, const std::string &activation,
                       bool useBias, InitOpt kernel, InitOpt bias,
                       std::string name) {
             nn::DenseOptions o;
             o.activation = nn::activationFromName(activation);
             o.useBias = useBias;
             o.kernelInitializer = std::move(kernel);
             o.biasInitializer = std::move(bias);
             o.name = std::move(name);
             return nn::Dense(units, o);
           }),
           py::arg("units"), py::arg("activation") = "",
           py::arg("use_bias") = true,
           py::arg("kernel_initializer") = py::none(),
           py::arg("bias_initializer") = py::none(), py::arg("name") = "");

  LayerClass<nn::Conv2D>(m, "Conv2D")
      .def(py::init([](unsigned filters, std::vector<unsigned> kernel,
                       std::vector<unsigned> strides, const std::string &pad,
                       const std::string &activation, bool useBias,
                       InitOpt kinit, InitOpt binit, std::string name) {
             nn::Conv2DOptions o;
             o.strides = size2(strides, "strides");
             o.padding = padding(pad);
             o.activation = nn::activationFromName(activation);
             o.useBias = useBias;
             o.kernelInitializer = std::move(kinit);
             o.biasInitializer = std::move(binit);
             o.name = std::move(name);
             return nn::Conv2D(filters, size2(kernel, "kernel_size"), o);
           }),
           py::arg("filters"), py::arg("kernel_size"), py::arg("strides"),
           py::arg("padding"), py::arg("activation"), py::arg("use_bias"),
           py::arg("kernel_initializer"), py::arg("bias_initializer"),
           py::arg("name"));

  auto poolOptions = [](std::optional<std::vector<unsigned>> strides,
                        const std::string &pad, std::string name) {
    nn::PoolOptions o;
    if (strides)
      o.strides = size2(*strides, "strides");
    o.padding = padding(pad);
    o.name = std::move(name);
    return o;
  };
  LayerClass<nn::MaxPool2D>(m, "MaxPooling2D")
      .def(py::init([poolOptions](std::vector<unsigned> pool,
                                  std::optional<std::vector<unsigned>> strides,
                                  const std::string &pad, std::string name) {
        return nn::MaxPool2D(size2(pool, "pool_size"),
                             poolOptions(strides, pad, std::move(name)));
      }));
  LayerClass<nn::AvgPool2D>(m, "AveragePooling2D")
      .def(py::init([poolOptions](std::vector<unsigned> pool,
                                  std::optional<std::vector<unsigned>> strides,
                                  const std::string &pad, std::string name) {
        return nn::AvgPool2D(size2(pool, "pool_size"),
                             poolOptions(strides, pad, std::move(name)));
      }));
  LayerClass<nn::GlobalAvgPool2D>(m, "GlobalAveragePooling2D")
      .def(py::init<std::string>());
  LayerClass<nn::ZeroPadding2D>(m, "ZeroPadding2D")
      .def(py::init([](std::vector<unsigned> rows, std::vector<unsigned> cols,
                       std::string name) {
             return nn::ZeroPadding2D(
                 {size2(rows, "padding"), size2(cols, "padding")},
                 std::move(name));
           }),
           py::arg("rows"), py::arg("cols"), py::arg("name"),
           "Zeros (top, bottom) and (left, right) of images.");
  LayerClass<nn::Flatten>(m, "Flatten").def(py::init<std::string>());
  LayerClass<nn::Dropout>(m, "Dropout").def(py::init<double, std::string>());
  LayerClass<nn::ActivationLayer>(m, "Activation")
      .def(py::init<const std::string &, std::string>());
  LayerClass<NamedActivation>(m, "NamedActivation")
      .def(py::init([](const std::string &activation, std::string type,
                       std::string def, std::string name) {
        return NamedActivation(nn::activationFromName(activation),
                               std::move(type), std::move(def),
                               std::move(name));
      }));
  LayerClass<nn::BatchNorm>(m, "BatchNormalization")
      .def(py::init([](double momentum, double epsilon, std::string name) {
        nn::BatchNormOptions o;
        o.momentum = momentum;
        o.epsilon = epsilon;
        o.name = std::move(name);
        return nn::BatchNorm(o);
      }));
  LayerClass<nn::LayerNorm>(m, "LayerNormalization")
      .def(py::init<double, std::string>());
  LayerClass<nn::Embedding>(m, "Embedding")
      .def(py::init<unsigned, unsigned, InitOpt, std::string>());
  LayerClass<nn::Add>(m, "Add").def(py::init<std::string>());
  LayerClass<nn::Concatenate>(m, "Concatenate").def(py::init<std::string>());

  // ipu_outfeed_queue.IPUOutfeedQueue's host side and the layer feeding it.
  py::class_<nn::OutfeedQueue, std::shared_ptr<nn::OutfeedQueue>>(
      m, "OutfeedQueue")
      .def(py::init([](bool last) {
        return std::make_shared<nn::OutfeedQueue>(
            last ? session::OutfeedMode::LAST : session::OutfeedMode::ALL);
      }))
      .def_property_readonly("last",
                             [](const nn::OutfeedQueue &q) {
                               return q.mode() == session::OutfeedMode::LAST;
                             })
      .def("size", &nn::OutfeedQueue::size)
      // [(layer name, array)]: the stacked values become NumPy arrays
      // without a copy.
      .def("dequeue", [](nn::OutfeedQueue &q) {
        py::list out;
        for (auto &[name, t] : q.dequeue())
          out.append(py::make_tuple(name, toNumpy(std::move(t))));
        return out;
      });
  LayerClass<nn::OutfeedLayer>(m, "OutfeedLayer")
      .def(py::init<std::shared_ptr<nn::OutfeedQueue>, std::string>());
}

} // namespace tessera::python
