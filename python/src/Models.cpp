// Models: tessera::nn::Model and Sequential with fit / evaluate / predict
// taking converted arrays or datasets. Device runs release the GIL; the
// hooks below take it back once per device run (never per step) to check
// for Ctrl-C and call the Python callbacks, whose exceptions leave fit()
// through C++ as error_already_set and reach the caller unchanged.
#include "Bindings.hpp"

#include "tessera/nn/Model.hpp"
#include "tessera/session/Checkpoint.hpp"
#include "tessera/session/Pipeline.hpp"

#include <pybind11/stl.h>

#include <algorithm>

namespace tessera::python {

namespace {

py::dict toDict(const nn::Logs &logs) {
  py::dict d;
  for (const auto &[name, value] : logs)
    d[py::str(name)] = value;
  return d;
}

// Calls the Python object \p hooks (tessera.keras's callback list) from
// fit(): on_epoch_begin(epoch), on_run_end(step, logs) and
// on_epoch_end(epoch, logs) -> whether to stop.
class PythonHooks : public nn::Callback {
public:
  explicit PythonHooks(py::object hooks) : hooks_(std::move(hooks)) {}
  void onEpochBegin(unsigned epoch) override {
    py::gil_scoped_acquire gil;
    checkSignals();
    if (!hooks_.is_none())
      hooks_.attr("on_epoch_begin")(epoch);
  }
  void onRunEnd(std::size_t step, const nn::Logs &logs) override {
    py::gil_scoped_acquire gil;
    checkSignals();
    if (!hooks_.is_none())
      hooks_.attr("on_run_end")(step, toDict(logs));
  }
  void onEpochEnd(unsigned epoch, const nn::Logs &logs) override {
    py::gil_scoped_acquire gil;
    checkSignals();
    if (!hooks_.is_none())
      stopTraining =
          py::bool_(hooks_.attr("on_epoch_end")(epoch, toDict(logs)));
  }

private:
  // Python's SIGINT handler only sets a flag; this turns it into
  // KeyboardInterrupt between device runs.
  static void checkSignals() {
    if (PyErr_CheckSignals() != 0)
      throw py::error_already_set();
  }
  py::object hooks_;
};

nn::Verbosity verbosity(int verbose) {
  return verbose <= 0   ? nn::Verbosity::Silent
         : verbose == 1 ? nn::Verbosity::ProgressBar
                        : nn::Verbosity::LinePerEpoch;
}

nn::FitOptions fitOptions(unsigned epochs, unsigned initialEpoch, int verbose,
                          py::object hooks,
                          std::optional<data::Dataset> validation,
                          std::optional<std::size_t> stepsPerEpoch) {
  nn::FitOptions o;
  o.epochs = epochs;
  o.initialEpoch = initialEpoch;
  o.verbose = verbosity(verbose);
  o.out = &pythonStream("stdout");
  o.callbacks.push_back(std::make_shared<PythonHooks>(std::move(hooks)));
  o.validationData = std::move(validation);
  o.stepsPerEpoch = stepsPerEpoch;
  return o;
}

py::list historyList(const nn::History &h) {
  py::list l;
  for (const nn::Logs &logs : h.epochs)
    l.append(toDict(logs));
  return l;
}

void flushPython() {
  py::module_ sys = py::module_::import("sys");
  for (const char *s : {"stdout", "stderr"})
    if (!sys.attr(s).is_none())
      sys.attr(s).attr("flush")();
}

void compile(nn::Model &m, passes::Optimizer optimizer, std::string loss,
             bool fromLogits, std::vector<std::string> metrics,
             unsigned stepsPerExecution, session::Config config,
             std::string syntheticDataInitializer,
             std::vector<std::string> losses, std::vector<double> lossWeights,
             std::optional<std::tuple<bool, double, unsigned>> lossScale,
             std::optional<std::string> partialsType) {
  nn::CompileOptions o;
  if (lossScale)
    o.lossScale =
        nn::LossScaleOptions{std::get<0>(*lossScale), std::get<1>(*lossScale),
                             std::get<2>(*lossScale)};
  if (partialsType)
    o.partialsType = typeOfName(*partialsType);
  o.optimizer = optimizer;
  o.loss = std::move(loss);
  o.losses = std::move(losses);
  o.lossWeights = std::move(lossWeights);
  o.fromLogits = fromLogits;
  o.metrics = std::move(metrics);
  o.stepsPerExecution = stepsPerExecution;
  o.config = std::move(config);
  o.syntheticDataInitializer = std::move(syntheticDataInitializer);
  o.compileProgress = &pythonStream("stderr");
  m.compile(std::move(o));
}

py::list fitDataset(nn::Model &m, const data::Dataset &d, unsigned epochs,
                    unsigned initialEpoch, int verbose, py::object hooks,
                    std::optional<data::Dataset> validation,
                    std::optional<std::size_t> stepsPerEpoch) {
  nn::FitOptions o = fitOptions(epochs, initialEpoch, verbose, std::move(hooks),
                                std::move(validation), stepsPerEpoch);
  flushPython();
  nn::History h;
  {
    py::gil_scoped_release nogil;
    h = m.fit(d, o);
  }
  return historyList(h);
}

// The HostTensors of \p list, taken over (moved, not copied: pybind11's
// list-to-vector conversion would copy each).
std::vector<data::HostTensor> takeTensors(const py::list &list) {
  std::vector<data::HostTensor> tensors;
  for (const py::handle &t : list)
    tensors.push_back(std::move(py::cast<data::HostTensor &>(t)));
  return tensors;
}

py::list fitArrays(nn::Model &m, const py::list &xs, const py::list &ys,
                   std::size_t batchSize, bool shuffle, unsigned epochs,
                   unsigned initialEpoch, int verbose, py::object hooks,
                   std::optional<data::Dataset> validation) {
  nn::FitOptions o = fitOptions(epochs, initialEpoch, verbose, std::move(hooks),
                                std::move(validation), std::nullopt);
  std::vector<data::HostTensor> x = takeTensors(xs), y = takeTensors(ys);
  flushPython();
  nn::History h;
  {
    py::gil_scoped_release nogil;
    h = m.fit(std::move(x), std::move(y), batchSize, o, shuffle);
  }
  return historyList(h);
}

py::dict evaluate(nn::Model &m, const data::Dataset &d, int verbose) {
  nn::EvaluateOptions o;
  o.verbose = verbosity(verbose);
  o.out = &pythonStream("stdout");
  flushPython();
  nn::Logs logs;
  {
    py::gil_scoped_release nogil;
    logs = m.evaluate(d, o);
  }
  return toDict(logs);
}

// One array for a model of one output, else a list of them. \p xs are
// the converted inputs, taken over.
py::object predict(nn::Model &m, const py::list &xs, std::size_t batchSize) {
  std::vector<data::HostTensor> in = takeTensors(xs), out;
  const bool one = in.size() == 1 && m.outputNames().size() == 1;
  {
    py::gil_scoped_release nogil;
    if (one)
      out.push_back(m.predict(in[0], batchSize));
    else
      out = m.predict(in, batchSize);
  }
  if (out.size() == 1)
    return toNumpy(std::move(out[0]));
  py::list l;
  for (data::HostTensor &t : out)
    l.append(toNumpy(std::move(t)));
  return l;
}

// The model's weights in Keras' order, as (name, array) pairs.
py::list getWeights(nn::Model &m) {
  session::Checkpoint ckpt;
  {
    py::gil_scoped_release nogil;
    ckpt = m.getWeights();
  }
  py::list l;
  for (const std::string &name : m.weightNames())
    for (auto &[n, t] : ckpt.variables)
      if (n == name) {
        l.append(py::make_tuple(name, toNumpy(std::move(t))));
        break;
      }
  return l;
}

void setWeights(nn::Model &m, const py::list &arrays) {
  const std::vector<std::string> names = m.weightNames();
  if (arrays.size() != names.size())
    throw ShapeError("set_weights: model \"" + m.name() + "\" has " +
                     std::to_string(names.size()) + " weights but " +
                     std::to_string(arrays.size()) +
                     " arrays were given; give them in get_weights() order");
  session::Checkpoint ckpt;
  ckpt.model = m.name();
  for (std::size_t i = 0; i < names.size(); ++i)
    ckpt.variables.emplace_back(
        names[i], toHostTensor(arrays[i], FLOAT,
                               "set_weights: weight " + std::to_string(i) +
                                   " (\"" + names[i] + "\")"));
  py::gil_scoped_release nogil;
  m.setWeights(ckpt);
}

// (name, dtype, shape) of each Input.
py::list inputSpecs(const nn::Model &m) {
  py::list l;
  for (const nn::Input *in : m.inputLayers())
    l.append(py::make_tuple(in->name(), dtypeOf(in->dtype()),
                            py::tuple(py::cast(in->shape()))));
  return l;
}

// \p reduction ("mean" or "sum") as passes::AccumulationReduction.
passes::AccumulationReduction reductionOf(const std::string &reduction,
                                          const char *what) {
  if (reduction == "mean")
    return passes::AccumulationReduction::MEAN;
  if (reduction == "sum")
    return passes::AccumulationReduction::SUM;
  throw OptionError(std::string(what) +
                    ": unknown gradient_accumulation_reduction_method \"" +
                    reduction + "\"; use \"mean\" or \"sum\"");
}

// Keras' set_pipelining_options: \p schedule is a PipelineSchedule's name
// (any case), as tessera.ipu's enum passes it.
void setPipelining(nn::Model &m, unsigned count, const std::string &schedule,
                   std::vector<unsigned> deviceMapping, bool recompute,
                   const std::string &reduction) {
  const auto parsed = session::parseSchedule(schedule);
  if (!parsed)
    throw OptionError("set_pipelining_options: unknown pipeline_schedule \"" +
                      schedule +
                      "\"; use PipelineSchedule.Grouped, Interleaved or "
                      "Sequential");
  nn::PipeliningOptions o;
  o.accumulation.count = count;
  o.accumulation.reduction = reductionOf(reduction, "set_pipelining_options");
  o.schedule = *parsed;
  o.deviceMapping = std::move(deviceMapping);
  o.recompute = recompute;
  m.setPipeliningOptions(std::move(o));
}

// Keras' set_gradient_accumulation_options.
void setAccumulation(nn::Model &m, unsigned count,
                     const std::string &reduction) {
  passes::GradientAccumulationOptions o;
  o.count = count;
  o.reduction = reductionOf(reduction, "set_gradient_accumulation_options");
  m.setGradientAccumulationOptions(o);
}

} // namespace

void bindModels(py::module_ &m) {
  py::class_<nn::Model>(m, "Model", "tessera::nn::Model")
      .def(py::init<const std::vector<nn::KerasTensor> &,
                    const std::vector<nn::KerasTensor> &, std::string,
                    std::uint64_t>(),
           py::arg("inputs"), py::arg("outputs"), py::arg("name") = "model",
           py::arg("seed") = 1)
      .def_property_readonly("name", &nn::Model::name)
      .def_property_readonly("layers",
                             [](const nn::Model &m) {
                               std::vector<std::shared_ptr<nn::Layer>> ls;
                               for (const auto &l : m.layers())
                                 ls.push_back(l.get());
                               return ls;
                             })
      .def("summary", py::overload_cast<>(&nn::Model::summary, py::const_))
      .def("count_params", &nn::Model::countParams)
      .def("output_shape", &nn::Model::outputShape)
      .def("output_shapes", &nn::Model::outputShapes)
      .def("output_names", &nn::Model::outputNames,
           "The names of the layers making the outputs.")
      .def("input_specs", &inputSpecs,
           "(name, dtype, shape) of each of the model's Inputs.")
      .def("weight_names", &nn::Model::weightNames)
      .def("compile", &compile, py::arg("optimizer"), py::arg("loss"),
           py::arg("from_logits"), py::arg("metrics"),
           py::arg("steps_per_execution"), py::arg("config"),
           py::arg("synthetic_data_initializer") = "",
           py::arg("losses") = std::vector<std::string>{},
           py::arg("loss_weights") = std::vector<double>{},
           py::arg("loss_scale") = py::none(),
           py::arg("partials_type") = py::none())
      .def_property_readonly(
          "loss_scale", &nn::Model::lossScale,
          "The loss scale the next step trains with (the device's dynamic "
          "scale, the static factor, or 1).")
      .def("fit_dataset", &fitDataset, py::arg("dataset"), py::arg("epochs"),
           py::arg("initial_epoch"), py::arg("verbose"), py::arg("hooks"),
           py::arg("validation"), py::arg("steps_per_epoch"))
      .def("fit_arrays", &fitArrays, py::arg("xs"), py::arg("ys"),
           py::arg("batch_size"), py::arg("shuffle"), py::arg("epochs"),
           py::arg("initial_epoch"), py::arg("verbose"), py::arg("hooks"),
           py::arg("validation"),
           "Trains on lists of HostTensors (one per input, one per "
           "output), taking over their storage (no copy).")
      .def("evaluate", &evaluate, py::arg("dataset"), py::arg("verbose"))
      .def("predict", &predict, py::arg("xs"), py::arg("batch_size"),
           "One array per output (one array for a single output).")
      .def("set_pipeline_stage_assignment",
           &nn::Model::setPipelineStageAssignment, py::arg("stages"),
           "The stage of each layer after the Input (empty: none).")
      .def_property_readonly("pipeline_stage_assignment",
                             &nn::Model::pipelineStageAssignment)
      .def("set_pipelining_options", &setPipelining, py::arg("count"),
           py::arg("schedule"), py::arg("device_mapping"), py::arg("recompute"),
           py::arg("reduction") = "mean")
      .def("set_gradient_accumulation_options", &setAccumulation,
           py::arg("count"), py::arg("reduction") = "mean")
      .def_property(
          "learning_rate", &nn::Model::learningRate,
          &nn::Model::setLearningRate,
          "The compiled optimizer's learning rate; setting it trains the "
          "steps that follow with the new rate without recompiling.")
      .def("get_weights", &getWeights)
      .def("set_weights", &setWeights)
      .def(
          "save_weights",
          [](nn::Model &m, const std::string &path) {
            py::gil_scoped_release nogil;
            session::saveCheckpoint(path, m.getWeights());
          },
          "Writes the weights and optimizer state atomically.")
      .def("load_weights",
           [](nn::Model &m, const std::string &path) {
             py::gil_scoped_release nogil;
             m.setWeights(session::loadCheckpoint(path));
           })
      .def("last_fit_stats", [](const nn::Model &m) {
        const nn::FitStats &s = m.lastFitStats();
        py::dict d;
        d["cache_hit"] = s.cacheHit;
        d["compile_seconds"] = s.compileSeconds;
        d["host_seconds_per_step"] = s.hostSecondsPerStep;
        d["ipu_seconds_per_step"] = s.ipuSecondsPerStep();
        d["host_inclusive_seconds_per_step"] = s.hostInclusiveSecondsPerStep();
        d["steps"] = s.steps;
        d["batch_size"] = s.batchSize;
        const CycleBreakdown &c = s.estimatedCyclesByKind;
        const double spe = double(std::max(s.stepsPerExecution, 1u));
        py::dict cycles;
        cycles["compute"] = double(c.compute) / spe;
        cycles["exchange"] = double(c.exchange) / spe;
        cycles["sync"] = double(c.sync) / spe;
        cycles["host"] = double(c.host) / spe;
        cycles["control"] = double(c.control) / spe;
        d["estimated_cycles_per_step"] = cycles;
        const HostCycles &h = s.estimatedHostCyclesPerRun;
        py::dict host;
        host["runs"] = double(h.runs) / spe;
        host["stream_setups"] = double(h.streamSetups) / spe;
        host["callbacks"] = double(h.callbacks) / spe;
        d["estimated_host_cycles_per_step"] = host;
        py::dict memory;
        memory["total_bytes"] = s.memory.total.total();
        memory["always_live_bytes"] = s.memory.total.alwaysLive;
        memory["not_always_live_bytes"] = s.memory.total.notAlwaysLive;
        memory["tiles_used"] = s.memory.tilesUsed;
        memory["max_tile"] = s.memory.maxTile;
        memory["max_tile_bytes"] = s.memory.maxTileBytes;
        memory["bytes_per_tile"] = s.memory.bytesPerTile;
        d["memory"] = memory;
        return d;
      });

  py::class_<nn::Sequential, nn::Model>(m, "Sequential")
      .def(py::init([](const std::vector<std::shared_ptr<nn::Layer>> &layers,
                       std::string name, std::uint64_t seed) {
             std::vector<nn::LayerRef> refs;
             for (const auto &l : layers)
               refs.emplace_back(l->clone());
             return std::make_unique<nn::Sequential>(std::move(refs),
                                                     std::move(name), seed);
           }),
           py::arg("layers"), py::arg("name") = "sequential",
           py::arg("seed") = 1,
           "A stack of copies of `layers` (the first an Input).");
}

} // namespace tessera::python
