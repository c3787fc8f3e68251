// _popart: tessera::onnx's ModelBuilder and ModelSession for the popart
// package (python/popart/popart/__init__.py), which gives them PopART's
// Python names. NumPy arrays cross with python/src/Arrays.cpp's
// conversions; runs release the GIL.
#include "Bindings.hpp"

#include "tessera/onnx/ModelBuilder.hpp"
#include "tessera/onnx/ModelSession.hpp"
#include "tessera/session/Pipeline.hpp"

#include <pybind11/stl.h>

#include <set>

namespace py = pybind11;
using namespace tessera;

namespace {

onnx::NodeAttribute attribute(const py::handle &v) {
  if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v))
    return v.cast<std::int64_t>();
  if (py::isinstance<py::float_>(v))
    return v.cast<double>();
  if (py::isinstance<py::str>(v))
    return v.cast<std::string>();
  const auto list = v.cast<py::list>();
  bool floats = false;
  for (const auto &e : list)
    floats = floats || py::isinstance<py::float_>(e);
  if (floats)
    return list.cast<std::vector<double>>();
  return list.cast<std::vector<std::int64_t>>();
}

std::vector<double> values(const py::handle &array) {
  const data::HostTensor t = python::toHostTensor(array, FLOAT, "values");
  const auto *p = static_cast<const float *>(t.data());
  return {p, p + t.numElements()};
}

ir::Shape shapeOf(const py::handle &array) {
  const auto a = py::array::ensure(array);
  return {a.shape(), a.shape() + a.ndim()};
}

onnx::AnchorMode anchorMode(const std::string &m) {
  if (m == "ALL")
    return onnx::AnchorMode::ALL;
  if (m == "FINAL")
    return onnx::AnchorMode::FINAL;
  if (m == "EVERYN")
    return onnx::AnchorMode::EVERY_N;
  if (m == "SUM")
    return onnx::AnchorMode::SUM;
  throw OptionError("AnchorReturnType '" + m +
                    "': use ALL, FINAL, EVERYN or SUM");
}

// The optimizer that \p params (a popart optimizer's params dict, with
// "optimizer" "sgd" or "adam") describes.
passes::Optimizer optimizerOf(const py::dict &params) {
  auto get = [&](const char *k, auto dflt) {
    return params.contains(k) ? params[k].cast<decltype(dflt)>() : dflt;
  };
  if (get("optimizer", std::string("sgd")) == "adam")
    return passes::Adam{get("lr", 0.001),        get("beta1", 0.9),
                        get("beta2", 0.999),     get("eps", 1e-8),
                        get("weightDecay", 0.0), get("decoupled", false)};
  return passes::SGD{get("lr", 0.01), get("momentum", 0.0),
                     get("dampening", 0.0), get("weightDecay", 0.0),
                     get("nesterov", false)};
}

// The session from plain values the Python layer assembles.
std::unique_ptr<onnx::ModelSession>
makeSession(const py::bytes &model, unsigned batchesPerStep,
            const std::map<std::string, std::pair<std::string, unsigned>> &a,
            const py::dict &options) {
  onnx::DataFlow flow;
  flow.batchesPerStep = batchesPerStep;
  for (const auto &[name, mode] : a)
    flow.anchors[name] = {anchorMode(mode.first), mode.second};
  onnx::ModelSessionOptions o;
  auto get = [&](const char *k, auto dflt) {
    return options.contains(k) ? options[k].cast<decltype(dflt)>() : dflt;
  };
  o.config.autoSelectIpus = get("ipus", 1u);
  o.config.ipuModel.tilesPerIpu = get("tiles", 1216u);
  o.config.replicationFactor = get("replicas", 1u);
  o.config.executableCachePath = get("cachePath", std::string());
  o.import.seed = get("seed", std::uint64_t{0});
  o.pipelining = get("pipelining", false);
  if (options.contains("pipelineSchedule")) {
    const auto name = options["pipelineSchedule"].cast<std::string>();
    const auto schedule = session::parseSchedule(name);
    if (!schedule)
      throw OptionError("pipelineSchedule '" + name +
                        "': use Grouped, Interleaved or Sequential");
    o.config.pipeline.schedule = *schedule;
  }
  if (options.contains("frozen"))
    for (const auto &name : options["frozen"])
      o.import.frozen.insert(name.cast<std::string>());
  if (options.contains("loss")) {
    onnx::TrainingSpec t;
    t.loss = options["loss"].cast<std::string>();
    t.accumulationFactor = get("accumulation", 1u);
    t.optimizer = optimizerOf(options);
    o.training = t;
  }
  return std::make_unique<onnx::ModelSession>(model, flow, o);
}

py::dict run(onnx::ModelSession &s, const py::dict &inputs) {
  std::map<std::string, data::HostTensor> in;
  for (const std::string &name : s.inputs()) {
    if (!inputs.contains(name))
      throw StreamError("run: the PyStepIO has no input '" + name + "'");
    in.emplace(name, python::toHostTensor(inputs[name.c_str()],
                                          s.inputType(name).dtype,
                                          "input '" + name + "'"));
  }
  std::map<std::string, data::HostTensor> out;
  {
    py::gil_scoped_release nogil;
    out = s.run(in);
  }
  py::dict r;
  for (auto &[name, t] : out) {
    const ir::Shape shape = s.anchorShape(name);
    r[name.c_str()] = python::toNumpy(std::move(t))
                          .attr("reshape")(py::tuple(
                              py::cast(std::vector<std::size_t>(shape))));
  }
  return r;
}

} // namespace

PYBIND11_MODULE(_popart, m) {
  m.doc() = "Tessera's PopART core: ONNX model building and sessions.";
  py::register_local_exception<Error>(m, "popart_exception",
                                      PyExc_RuntimeError);

  py::class_<onnx::ModelBuilder>(m, "ModelBuilder")
      .def(py::init<std::int64_t>(), py::arg("opset") = 12)
      .def("addInput",
           [](onnx::ModelBuilder &b, const std::string &dtype,
              const ir::Shape &shape, const std::string &name) {
             return b.addInput(python::typeOfName(dtype), shape, name);
           })
      .def("addInitializer",
           [](onnx::ModelBuilder &b, const py::handle &array,
              const std::string &name) {
             return b.addInitializer(FLOAT, shapeOf(array), values(array),
                                     name);
           })
      .def("addConstant",
           [](onnx::ModelBuilder &b, const py::handle &array, bool integer,
              const std::string &name) {
             return b.addConstant(integer ? INT : FLOAT, shapeOf(array),
                                  values(array), name);
           })
      .def("addNode",
           [](onnx::ModelBuilder &b, const std::string &op,
              const std::vector<std::string> &inputs, const py::dict &attrs,
              unsigned numOutputs, const std::string &name) {
             onnx::NodeAttributes a;
             for (const auto &[k, v] : attrs)
               if (!v.is_none())
                 a[k.cast<std::string>()] = attribute(v);
             return b.addNode(op, inputs, a, numOutputs, name);
           })
      .def("addOutput", &onnx::ModelBuilder::addOutput)
      .def("setIpu", &onnx::ModelBuilder::setIpu)
      .def("setPipelineStage", &onnx::ModelBuilder::setPipelineStage)
      .def("setTensorIpu", &onnx::ModelBuilder::setTensorIpu)
      .def("setTensorPipelineStage",
           &onnx::ModelBuilder::setTensorPipelineStage)
      .def(
          "modelProto",
          [](const onnx::ModelBuilder &b) { return py::bytes(b.modelProto()); })
      .def("tensorShape",
           [](const onnx::ModelBuilder &b, const std::string &t) {
             return b.tensorType(t).shape;
           });

  py::class_<onnx::ModelSession>(m, "ModelSession")
      .def(py::init(&makeSession))
      .def("prepareDevice",
           [](onnx::ModelSession &s) {
             py::gil_scoped_release nogil;
             s.prepareDevice();
           })
      .def("weightsFromHost", &onnx::ModelSession::weightsFromHost)
      .def("run", &run)
      .def("modelToHost", &onnx::ModelSession::modelToHost)
      .def(
          "modelWithWeights",
          [](onnx::ModelSession &s) { return py::bytes(s.modelWithWeights()); })
      .def("readWeights",
           [](onnx::ModelSession &s) {
             py::dict r;
             for (auto &[name, t] : s.readWeights())
               r[name.c_str()] = python::toNumpy(std::move(t));
             return r;
           })
      .def("writeWeights",
           [](onnx::ModelSession &s, const py::dict &weights) {
             std::map<std::string, data::HostTensor> w;
             for (const auto &[k, v] : weights)
               w.emplace(k.cast<std::string>(),
                         python::toHostTensor(v, FLOAT, "weight"));
             s.writeWeights(w);
           })
      .def("readState",
           [](onnx::ModelSession &s) {
             py::dict r;
             for (auto &[name, t] : s.readState())
               r[name.c_str()] = python::toNumpy(std::move(t));
             return r;
           })
      .def("writeState",
           [](onnx::ModelSession &s, const py::dict &state) {
             std::map<std::string, data::HostTensor> w;
             for (const auto &[k, v] : state)
               w.emplace(k.cast<std::string>(),
                         python::toHostTensor(v, std::nullopt, "state"));
             return s.writeState(w);
           })
      .def("setRandomSeed", &onnx::ModelSession::setRandomSeed)
      .def(
          "updateOptimizer",
          [](onnx::ModelSession &s, const py::dict &params) {
            s.updateOptimizer(optimizerOf(params));
          },
          py::arg("params"),
          "Writes the learning rate (and momentum) of the optimizer that "
          "params describes to the device, without recompiling.")
      .def("opIpus",
           [](const onnx::ModelSession &s) {
             // The IPUs the operations are placed on (unplaced: IPU 0).
             std::set<unsigned> ipus;
             for (const ir::Op &op : s.module().ops())
               ipus.insert(op.annotations.ipu.value_or(0));
             return std::vector<unsigned>(ipus.begin(), ipus.end());
           })
      .def("opStages",
           [](const onnx::ModelSession &s) {
             // The pipeline stages of the operations (none: unpipelined).
             std::set<unsigned> stages;
             for (const ir::Op &op : s.module().ops())
               if (op.annotations.pipelineStage)
                 stages.insert(*op.annotations.pipelineStage);
             return std::vector<unsigned>(stages.begin(), stages.end());
           })
      .def("anchorShape", &onnx::ModelSession::anchorShape)
      .def("inputs", &onnx::ModelSession::inputs);
}
