// Lowers a module onto a simulated device, feeds its inputs, runs it once
// and reads values back as doubles, to compare with the interpreter.
#pragma once

#include "tessera/device/Device.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/ir/Interpreter.hpp"
#include "tessera/ir/Lowering.hpp"
#include "tessera/support/Convert.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace tessera::test {

/// A run of a lowered module: the values read back, by value id.
struct LoweredRun {
  std::map<ir::ValueId, ir::HostValue> values;
  std::uint64_t cycles = 0;
};

/// Lowers \p m onto \p numIpus IPUs of \p tilesPerIpu tiles, writes \p feeds
/// to the inputs, runs once and reads \p read. \p inspect (if given) sees
/// the graph and the lowering before the engine is made.
inline LoweredRun
runLowered(const ir::Module &m, const ir::Feeds &feeds,
           const std::vector<ir::ValueId> &read, unsigned numIpus = 1,
           unsigned tilesPerIpu = 16,
           const std::function<void(const Graph &, const ir::LoweredModule &)>
               &inspect = {}) {
  IPUModel model;
  model.numIPUs = numIpus;
  model.tilesPerIPU = tilesPerIpu;
  Device device = model.createDevice();
  Graph graph(device.getTarget());
  program::Sequence prog;
  ir::LoweringOptions options;
  options.keep = read;
  const ir::LoweredModule lowered = ir::lowerToGraph(m, graph, prog, options);
  for (const auto &[name, value] : feeds)
    graph.createHostWrite("in/" + name, lowered.tensor(*m.findValue(name)));
  for (ir::ValueId id : read)
    graph.createHostRead("out/" + std::to_string(id), lowered.tensor(id));
  if (inspect)
    inspect(graph, lowered);
  Engine engine(graph, prog);
  engine.load(device);
  for (const auto &[name, value] : feeds) {
    std::vector<std::byte> raw(value.values.size() * typeSize(value.dtype));
    for (std::size_t i = 0; i < value.values.size(); ++i) {
      const float f = static_cast<float>(value.values[i]);
      const int n = static_cast<int>(value.values[i]);
      if (isFloatingPoint(value.dtype))
        convertElements(FLOAT, &f, value.dtype,
                        raw.data() + i * typeSize(value.dtype), 1);
      else
        convertElements(INT, &n, value.dtype,
                        raw.data() + i * typeSize(value.dtype), 1);
    }
    engine.writeTensor("in/" + name, raw.data(), raw.data() + raw.size());
  }
  engine.run();
  LoweredRun r;
  for (ir::ValueId id : read) {
    const Tensor &t = lowered.tensor(id);
    const Type type = t.elementType();
    std::vector<std::byte> raw(t.numElements() * typeSize(type));
    engine.readTensor("out/" + std::to_string(id), raw.data(),
                      raw.data() + raw.size());
    ir::HostValue v{type, m.typeOf(id).shape,
                    std::vector<double>(t.numElements())};
    for (std::size_t k = 0; k < v.values.size(); ++k)
      v.values[k] = elementAsDouble(type, raw.data() + k * typeSize(type));
    r.values[id] = std::move(v);
  }
  for (std::uint64_t c : engine.getCycleCounts())
    r.cycles += c;
  return r;
}

/// Expects \p got to match the interpreter's \p want within \p rel relative
/// (of the larger of 1 and the value's largest magnitude).
inline void expectClose(const ir::HostValue &got, const ir::HostValue &want,
                        double rel, const std::string &what) {
  ASSERT_EQ(got.values.size(), want.values.size()) << what;
  double scale = 1;
  for (double w : want.values)
    if (std::isfinite(w))
      scale = std::max(scale, std::fabs(w));
  for (std::size_t i = 0; i < got.values.size(); ++i) {
    if (std::isnan(want.values[i])) {
      EXPECT_TRUE(std::isnan(got.values[i])) << what << "[" << i << "]";
      continue;
    }
    if (std::isinf(want.values[i])) {
      EXPECT_EQ(got.values[i], want.values[i]) << what << "[" << i << "]";
      continue;
    }
    EXPECT_NEAR(got.values[i], want.values[i], rel * scale)
        << what << "[" << i << "]";
  }
}

} // namespace tessera::test
