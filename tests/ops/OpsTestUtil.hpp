// Shared by the ops tests: run a graph built by a callback on an IPU Model
// with host inputs and read the outputs back as doubles.
#pragma once

#include "tessera/device/Device.hpp"
#include "tessera/device/IPUModel.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/ops/Codelets.hpp"
#include "tessera/support/Convert.hpp"

#include <functional>
#include <string>
#include <vector>

namespace tessera::test {

/// Host data for one input: its type, shape and values.
struct HostTensor {
  Type type = FLOAT;
  std::vector<std::size_t> shape;
  std::vector<double> values;
};

/// The results of one run: the outputs as doubles, and the engine's total
/// estimated cycles.
struct RunResult {
  std::vector<std::vector<double>> outputs;
  std::uint64_t cycles = 0;
  std::size_t computeSteps = 0;
  std::size_t hostKernelSteps = 0; ///< compute steps run by a host kernel
  std::vector<std::string> hostKernelSets; ///< their compute sets' names
  std::uint64_t exchangedBytes = 0;        ///< by the exchange steps, estimated
};

using OpBuilder = std::function<std::vector<Tensor>(
    Graph &, const std::vector<Tensor> &, program::Sequence &)>;

/// Builds inputs (mapped linearly), calls \p build for the outputs, runs
/// once on a model of \p tiles tiles (with \p engineOptions), returns the
/// outputs.
inline RunResult runOp(unsigned tiles, const std::vector<HostTensor> &inputs,
                       const OpBuilder &build,
                       const OptionFlags &engineOptions = {}) {
  IPUModel model;
  model.tilesPerIPU = tiles;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  ops::addCodelets(g);
  std::vector<Tensor> ins;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Tensor t = g.addVariable(inputs[i].type, inputs[i].shape,
                             "in" + std::to_string(i));
    mapTensorLinearly(g, t);
    g.createHostWrite("in" + std::to_string(i), t);
    ins.push_back(t);
  }
  program::Sequence prog;
  std::vector<Tensor> outs = build(g, ins, prog);
  for (std::size_t i = 0; i < outs.size(); ++i)
    g.createHostRead("out" + std::to_string(i), outs[i]);
  Engine e(g, prog, engineOptions);
  e.load(device);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor &h = inputs[i];
    std::vector<float> f(h.values.begin(), h.values.end());
    std::vector<std::byte> raw(f.size() * typeSize(h.type));
    convertElements(FLOAT, f.data(), h.type, raw.data(), f.size());
    e.writeTensor("in" + std::to_string(i), raw.data(),
                  raw.data() + raw.size());
  }
  e.run();
  RunResult r;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const Type t = outs[i].elementType();
    std::vector<std::byte> raw(outs[i].numElements() * typeSize(t));
    e.readTensor("out" + std::to_string(i), raw.data(),
                 raw.data() + raw.size());
    std::vector<double> v(outs[i].numElements());
    for (std::size_t k = 0; k < v.size(); ++k)
      v[k] = elementAsDouble(t, raw.data() + k * typeSize(t));
    r.outputs.push_back(std::move(v));
  }
  for (std::uint64_t c : e.getCycleCounts())
    r.cycles += c;
  const Executable &x = e.getExecutable();
  for (std::size_t i = 0; i < x.steps.size(); ++i) {
    const Step &s = x.steps[i];
    r.computeSteps += s.kind == StepKind::Compute;
    if (s.kind == StepKind::Compute && s.count > 0) {
      ++r.hostKernelSteps;
      r.hostKernelSets.push_back(x.computeSetNames[s.c]);
    }
    if (s.kind == StepKind::Exchange)
      r.exchangedBytes += x.estimates[i].bytesExchanged;
  }
  return r;
}

// The regions of the "out" field of each tile vertex (host kernels left
// out) that \p g gained after its first \p before vertices.
inline std::vector<std::size_t> outRegionsSince(const Graph &g,
                                                std::size_t before) {
  std::vector<std::size_t> regions;
  for (std::size_t v = before; v < g.getNumVertices(); ++v) {
    const VertexData &vd = g.data().vertices[v];
    if (g.data().computeSets[vd.computeSet].isHostKernel)
      continue;
    const auto &fields = vd.vertexClass->info.fields;
    for (std::size_t f = 0; f < fields.size(); ++f)
      if (fields[f].name == "out")
        regions.push_back(vd.fields[f].tensors.size());
  }
  return regions;
}

/// Values in [lo, hi) spread deterministically, avoiding exact integers.
inline std::vector<double> spread(std::size_t n, double lo, double hi) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = lo + (hi - lo) * (double((i * 7919 + 13) % 997) + 0.37) / 997.0;
  return v;
}

} // namespace tessera::test
