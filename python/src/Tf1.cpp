// TensorFlow-1-style graphs (tessera.tf.compat.v1): Python builds a
// symbolic graph, writes the part one sess.run needs as an IR module in the
// IR's text form, and runs it here, on the host interpreter or, for what
// ipu_compiler.compile traced, in a session on the IPU Model.
#include "Bindings.hpp"

#include "tessera/data/Dataset.hpp"
#include "tessera/device/DeviceManager.hpp"
#include "tessera/ir/Builder.hpp"
#include "tessera/ir/Interpreter.hpp"
#include "tessera/ir/OpAttrs.hpp"
#include "tessera/ir/Text.hpp"
#include "tessera/passes/GradientAccumulation.hpp"
#include "tessera/passes/Optimizer.hpp"
#include "tessera/passes/TrainingPasses.hpp"
#include "tessera/session/Checkpoint.hpp"
#include "tessera/session/Feeds.hpp"
#include "tessera/session/Session.hpp"

#include <memory>
#include <set>

namespace tessera::python {
namespace {

// A module parsed from the text Python wrote, with its training step.
struct Program {
  ir::Module module;

  explicit Program(const std::string &text) : module(ir::parse(text)) {}

  // The training passes: autodiff, recomputation (pipelining_ops'
  // recomputation of the stages), the optimizer and, for a count above 1,
  // gradient accumulation with the given accumulator type ("float",
  // "half"; empty: each variable's own).
  void train(const std::string &lossOutput, py::object optimizer,
             bool crossReplicaMean, unsigned accumulationCount, bool recompute,
             const std::string &accumulatorType) {
    passes::TrainingPassOptions options;
    options.lossOutput = lossOutput;
    if (py::isinstance<passes::Adam>(optimizer))
      options.training.optimizer = optimizer.cast<passes::Adam>();
    else
      options.training.optimizer = optimizer.cast<passes::SGD>();
    options.training.crossReplicaMean = crossReplicaMean;
    options.accumulation.count = accumulationCount;
    if (accumulatorType == "float")
      options.accumulation.accumulatorType = FLOAT;
    else if (accumulatorType == "half")
      options.accumulation.accumulatorType = HALF;
    else if (!accumulatorType.empty())
      throw TypeError("gradient accumulation: the accumulator type must be "
                      "float32 or float16, got " +
                      accumulatorType);
    options.recompute = recompute;
    passes::runTrainingPasses(module, options);
    // The host writes each variable's new value back from the output
    // "update/<variable>": every update the passes made must be one.
    std::set<std::string> outputs;
    for (const ir::Output &o : module.outputs())
      outputs.insert(o.name);
    for (auto [variable, value] : passes::variableUpdates(module)) {
      const std::string name = "update/" + module.value(variable).name;
      if (!outputs.count(name))
        module.addOutput(name, value);
    }
  }

  // (name, dtype name, shape, trainable) of every variable, the optimizer's
  // state included, so Python can keep their values between runs.
  py::list variables() const {
    py::list out;
    for (const ir::Variable &v : module.variables()) {
      const ir::ValueInfo &info = module.value(v.value);
      out.append(py::make_tuple(info.name, py::str(dtypeOf(info.type.dtype)),
                                py::tuple(py::cast(info.type.shape)),
                                v.trainable));
    }
    return out;
  }

  // Runs the module on the host. \p feeds holds inputs and, by name, the
  // variables' current values; returns every output as a float64 array.
  py::dict interpret(const py::dict &feeds) const {
    ir::Feeds hostFeeds;
    for (auto [key, value] : feeds) {
      const std::string name = py::str(key);
      std::optional<ir::ValueId> id = module.findValue(name);
      if (!id)
        throw ir::IrError("the feed " + name + " names no value of the module");
      py::array_t<double, py::array::c_style | py::array::forcecast> a(
          py::reinterpret_borrow<py::object>(value));
      ir::HostValue h;
      h.dtype = module.typeOf(*id).dtype;
      h.shape.assign(a.shape(), a.shape() + a.ndim());
      h.values.assign(a.data(), a.data() + a.size());
      hostFeeds.emplace(name, std::move(h));
    }
    ir::Evaluation e = ir::interpret(module, hostFeeds);
    py::dict out;
    auto put = [&](const std::string &name, const ir::HostValue &h) {
      py::array_t<double> a(
          std::vector<py::ssize_t>(h.shape.begin(), h.shape.end()));
      std::copy(h.values.begin(), h.values.end(), a.mutable_data());
      out[py::str(name)] = a;
    };
    for (const ir::Output &o : module.outputs())
      if (o.name.rfind("update/", 0) != 0)
        put(o.name, e.at(o.value));
    // The write-back outputs carry the variables after the run: with
    // gradient accumulation, the weight update applies only on a step's
    // last micro-batch, and the accumulators are then zeroed.
    const ir::Feeds after = ir::variablesAfterRun(module, e, {});
    for (const auto &[name, h] : after)
      put("update/" + name, h);
    return out;
  }
};

// A Program compiled for the IPU Model: one run() is `steps` steps, each
// taking the next element of the infeed and queueing the outfed outputs.
class IpuProgram {
public:
  IpuProgram(const Program &p, const session::Config &config,
             std::vector<std::string> feeds, std::vector<std::string> outfeeds,
             unsigned steps)
      : session_(p.module, config,
                 {std::move(feeds), std::move(outfeeds), steps}) {}

  bool compile() { return session_.compile(); }

  // Sets the device's variables, runs, and returns the variables after
  // the run; dequeue() takes what the steps outfed. \p dataset feeds the
  // loop; it is kept between runs (an infeed continues where it stopped)
  // until another dataset is given.
  py::dict run(const py::dict &variables,
               std::optional<data::Dataset> dataset) {
    session::Checkpoint ckpt;
    ckpt.model = "tf1";
    const ir::Module &m = session_.module();
    for (const ir::Variable &v : m.variables()) {
      const ir::ValueInfo &info = m.value(v.value);
      if (!variables.contains(info.name))
        throw ir::IrError("no value for the variable " + info.name);
      ckpt.variables.emplace_back(info.name,
                                  toHostTensor(variables[py::str(info.name)],
                                               info.type.dtype, info.name));
    }
    if (dataset || !infeed_) {
      // Without a dataset the module's one input is a step counter nobody
      // reads: the session feeds every step from an infeed.
      data::Dataset d =
          dataset ? *dataset
                  : data::Dataset::fromElement(
                        data::Element{data::HostTensor::scalar<int>(0)})
                        .repeat();
      infeed_.reset();
      infeed_ = std::make_unique<session::Infeed>(std::move(d));
      session_.connect(*infeed_, outfeed_);
    }
    {
      py::gil_scoped_release release;
      session_.writeVariables(ckpt, "the session's variables");
      session_.run();
    }
    py::dict after;
    for (auto &[name, t] : session_.readVariables().variables)
      after[py::str(name)] = toNumpy(std::move(t));
    return after;
  }

  // The steps' outfed elements queued so far, oldest first, removed. Safe
  // from another thread while run() runs (it releases the GIL), so a
  // loop's results can be read as it goes.
  py::list dequeue() {
    py::list elements;
    for (data::Element &e : outfeed_.dequeueAll()) {
      py::list components;
      for (data::HostTensor &t : e.components)
        components.append(toNumpy(std::move(t)));
      elements.append(components);
    }
    return elements;
  }

private:
  session::Session session_;
  session::Outfeed outfeed_;
  std::unique_ptr<session::Infeed> infeed_;
};

// Attributes as a dict of Python values, for Python to write into the text.
py::dict toDict(const ir::Attributes &attrs) {
  py::dict d;
  for (const auto &[name, value] : attrs.all())
    std::visit([&](const auto &v) { d[py::str(name)] = py::cast(v); }, value);
  return d;
}

ir::Pair pairOf(const std::vector<unsigned> &v, const char *what) {
  if (v.size() != 2)
    throw ShapeError(std::string(what) +
                     " needs 2 numbers (height, width), "
                     "not " +
                     std::to_string(v.size()));
  return {v[0], v[1]};
}

} // namespace

void bindTf1(py::module_ &m) {
  // The attribute records of the convolution, pooling and reduction
  // families, written by the IR's own encoder so that Python does not
  // spell their names.
  m.def(
      "conv2d_attributes",
      [](const std::vector<unsigned> &strides,
         const std::vector<unsigned> &padLower,
         const std::vector<unsigned> &padUpper) {
        ir::Conv2dOptions o;
        o.strides = pairOf(strides, "strides");
        o.padLower = pairOf(padLower, "padLower");
        o.padUpper = pairOf(padUpper, "padUpper");
        return toDict(ir::encode(o));
      },
      py::arg("strides"), py::arg("pad_lower"), py::arg("pad_upper"));
  m.def(
      "pool_attributes",
      [](const std::vector<unsigned> &kernel,
         const std::vector<unsigned> &strides,
         const std::vector<unsigned> &padLower,
         const std::vector<unsigned> &padUpper) {
        ir::PoolOptions o;
        o.kernel = pairOf(kernel, "kernel");
        o.strides = pairOf(strides, "strides");
        o.padLower = pairOf(padLower, "padLower");
        o.padUpper = pairOf(padUpper, "padUpper");
        return toDict(ir::encode(o));
      },
      py::arg("kernel"), py::arg("strides"), py::arg("pad_lower"),
      py::arg("pad_upper"));
  m.def(
      "reduce_attributes",
      [](std::vector<std::int64_t> axes, bool keepDims) {
        return toDict(ir::encode(ir::ReduceAttrs{std::move(axes), keepDims}));
      },
      py::arg("axes"), py::arg("keep_dims"));

  py::class_<Program>(m, "Tf1Program",
                      "An IR module written in the IR's text form.")
      .def(py::init<const std::string &>(), py::arg("text"))
      .def("train", &Program::train, py::arg("loss_output"),
           py::arg("optimizer"), py::arg("cross_replica_mean") = false,
           py::arg("accumulation_count") = 1, py::arg("recompute") = false,
           py::arg("accumulator_type") = "")
      .def("variables", &Program::variables)
      .def("interpret", &Program::interpret, py::arg("feeds"))
      .def("text", [](const Program &p) { return ir::print(p.module); });

  py::class_<IpuProgram>(m, "Tf1IpuProgram")
      .def(py::init<const Program &, const session::Config &,
                    std::vector<std::string>, std::vector<std::string>,
                    unsigned>(),
           py::arg("program"), py::arg("config"), py::arg("feeds"),
           py::arg("outfeeds"), py::arg("steps"))
      .def("compile", &IpuProgram::compile,
           py::call_guard<py::gil_scoped_release>())
      .def("run", &IpuProgram::run, py::arg("variables"),
           py::arg("dataset") = std::nullopt)
      .def("dequeue", &IpuProgram::dequeue);

  // The system's IPUs a session holds while it runs, so `tessera monitor`
  // lists them (the IPU Model computes; these are attached for the session).
  py::class_<Device>(m, "AttachedDevice")
      .def_property_readonly("id", &Device::getId)
      .def_property_readonly("ipus", &Device::ipuIds)
      .def("detach", &Device::detach);
  m.def("acquire_ipus", [](unsigned n) {
    return DeviceManager::createDeviceManager().acquireAvailableDevice(n);
  });
  m.def("attach_device", [](unsigned id) {
    Device d = DeviceManager::createDeviceManager().getDevice(id);
    d.attach();
    return d;
  });
  m.def("device_ipus", [](unsigned id) {
    return DeviceManager::createDeviceManager().deviceIpus(id);
  });
}

} // namespace tessera::python
