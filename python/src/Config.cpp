// The IPU system's configuration (session::Config, TensorFlow-for-IPU's
// IPUConfig) and the optimizers, as plain records Python fills in.
#include "Bindings.hpp"

#include "tessera/passes/Optimizer.hpp"
#include "tessera/session/Session.hpp"

#include <pybind11/stl.h>

namespace tessera::python {

void bindConfig(py::module_ &m) {
  py::class_<session::IpuModelConfig>(m, "IpuModelConfig")
      .def(py::init<>())
      .def_readwrite("tiles_per_ipu", &session::IpuModelConfig::tilesPerIpu)
      .def_readwrite("version", &session::IpuModelConfig::version)
      .def_readwrite("compile_ipu_code",
                     &session::IpuModelConfig::compileIpuCode);
  py::class_<session::FloatingPointBehaviour>(m, "FloatingPointBehaviour")
      .def(py::init<>())
      .def_readwrite("inv", &session::FloatingPointBehaviour::inv)
      .def_readwrite("div0", &session::FloatingPointBehaviour::div0)
      .def_readwrite("oflo", &session::FloatingPointBehaviour::oflo)
      .def_readwrite("nanoo", &session::FloatingPointBehaviour::nanoo);
  py::enum_<session::DeviceConnectionType>(m, "DeviceConnectionType")
      .value("ALWAYS", session::DeviceConnectionType::ALWAYS)
      .value("ON_DEMAND", session::DeviceConnectionType::ON_DEMAND)
      .value("PRE_COMPILE", session::DeviceConnectionType::PRE_COMPILE)
      .value("NEVER", session::DeviceConnectionType::NEVER);
  py::class_<session::PipelineConfig>(m, "PipelineConfig")
      .def(py::init<>())
      .def_property(
          "schedule",
          [](const session::PipelineConfig &c) {
            return std::string(session::scheduleName(c.schedule));
          },
          [](session::PipelineConfig &c, const std::string &name) {
            const auto s = session::parseSchedule(name);
            if (!s)
              throw OptionError("pipeline schedule \"" + name +
                                "\" is not one of grouped, interleaved, "
                                "sequential");
            c.schedule = *s;
          })
      // Per stage an IPU, or a list of IPUs (concurrent sub-stages).
      .def_property(
          "device_mapping",
          [](const session::PipelineConfig &c) {
            py::list out;
            for (const session::StageIpus &s : c.deviceMapping)
              if (s.ipus.size() == 1)
                out.append(s.ipus[0]);
              else
                out.append(py::cast(s.ipus));
            return out;
          },
          [](session::PipelineConfig &c, const py::list &mapping) {
            std::vector<session::StageIpus> out;
            for (const py::handle &entry : mapping) {
              if (py::isinstance<py::int_>(entry)) {
                out.emplace_back(entry.cast<unsigned>());
                continue;
              }
              out.emplace_back(std::initializer_list<unsigned>{});
              out.back().ipus = entry.cast<std::vector<unsigned>>();
            }
            c.deviceMapping = std::move(out);
          })
      .def_readwrite("offload_optimizer_state",
                     &session::PipelineConfig::offloadOptimizerState);
  py::class_<session::Config>(m, "Config", "The IPU system a model runs on.")
      .def(py::init<>())
      .def_readwrite("auto_select_ipus", &session::Config::autoSelectIpus)
      .def_readwrite("replication_factor", &session::Config::replicationFactor)
      .def_readwrite("ipu_model", &session::Config::ipuModel)
      .def_readwrite("floating_point_behaviour",
                     &session::Config::floatingPointBehaviour)
      .def_readwrite("executable_cache_path",
                     &session::Config::executableCachePath)
      .def_readwrite("device_connection_type",
                     &session::Config::deviceConnectionType)
      .def_readwrite("synthetic_data", &session::Config::syntheticData)
      .def_readwrite("host_threads", &session::Config::hostThreads)
      .def_readwrite("pipeline", &session::Config::pipeline);

  py::class_<passes::SGD>(m, "SGD")
      .def(py::init([](double lr, double momentum, bool nesterov,
                       double weightDecay) {
             passes::SGD s;
             s.learningRate = lr;
             s.momentum = momentum;
             s.nesterov = nesterov;
             s.weightDecay = weightDecay;
             return s;
           }),
           py::arg("learning_rate"), py::arg("momentum"), py::arg("nesterov"),
           py::arg("weight_decay"))
      .def_readwrite("learning_rate", &passes::SGD::learningRate);
  py::class_<passes::Adam>(m, "Adam")
      .def(py::init([](double lr, double b1, double b2, double eps,
                       double weightDecay, bool decoupled) {
             passes::Adam a;
             a.learningRate = lr;
             a.beta1 = b1;
             a.beta2 = b2;
             a.epsilon = eps;
             a.weightDecay = weightDecay;
             a.decoupledWeightDecay = decoupled;
             return a;
           }),
           py::arg("learning_rate"), py::arg("beta_1"), py::arg("beta_2"),
           py::arg("epsilon"), py::arg("weight_decay"), py::arg("decoupled"))
      .def_readwrite("learning_rate", &passes::Adam::learningRate);
  py::class_<passes::RMSprop>(m, "RMSprop")
      .def(py::init([](double lr, double rho, double momentum, double eps,
                       double weightDecay, bool centered) {
             passes::RMSprop r;
             r.learningRate = lr;
             r.rho = rho;
             r.momentum = momentum;
             r.epsilon = eps;
             r.weightDecay = weightDecay;
             r.centered = centered;
             return r;
           }),
           py::arg("learning_rate"), py::arg("rho"), py::arg("momentum"),
           py::arg("epsilon"), py::arg("weight_decay"), py::arg("centered"))
      .def_readwrite("learning_rate", &passes::RMSprop::learningRate);
}

} // namespace tessera::python
