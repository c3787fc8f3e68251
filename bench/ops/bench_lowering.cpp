// bench_lowering: what building one op's graph costs on the host, for each
// kind of op ResNet-50's training step lowers to, at its shapes on 224x224
// and on 32x32 images (batch 2, float32, an ipu2 IPU Model of 1472 tiles),
// plus batch norm of channels-last activations. For each case it prints the
// vertices the op adds, their list elements (the tensors bound to their
// fields: what the compiler turns into operands), the runs those tensors
// hold, the host time and heap growth of building the op, and then the
// time and peak resident memory of compiling the graph (Engine's
// constructor). Each case runs in a child process of its own so that one
// case's memory does not hide another's.
//
// Usage: bench_lowering [--no-compile] [--fields] [CASE...]; no CASE runs
// them all; --fields also prints the list elements of each vertex field.
// Prints plain figures (RESULT lines without a target): the cases are the
// measure that ops planning changes are compared by, before and after.
#include "BenchCommon.hpp"

#include "tessera/device/IPUModel.hpp"
#include "tessera/engine/Engine.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/ops/Codelets.hpp"
#include "tessera/ops/Conv.hpp"
#include "tessera/ops/Elementwise.hpp"
#include "tessera/ops/MatMul.hpp"
#include "tessera/ops/NonLinearity.hpp"
#include "tessera/ops/Norms.hpp"
#include "tessera/ops/Pooling.hpp"
#include "tessera/ops/Reduce.hpp"

#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace tessera;
using namespace tessera::ops::expr;
using program::Sequence;

constexpr std::size_t kBatch = 2;

// An activation [N, C, H, W] laid out as the convolution producing it lays
// out its output (a 1x1 convolution of C channels), as in ResNet.
Tensor convActs(Graph &g, std::size_t c, std::size_t h, std::size_t w,
                Sequence &setup) {
  ops::ConvParams p(FLOAT, kBatch, {h, w}, {1, 1}, c, c);
  Tensor in = ops::createInput(g, p, "x0");
  Tensor wt = ops::createWeights(g, p, "w0");
  return ops::convolution(g, in, wt, p, false, setup, "producer");
}

ops::ConvParams convParams(std::size_t cin, std::size_t cout, std::size_t hw,
                           std::size_t k, unsigned stride) {
  ops::ConvParams p(FLOAT, kBatch, {hw, hw}, {k, k}, cin, cout);
  p.stride = {stride, stride};
  const unsigned pad = static_cast<unsigned>(k / 2);
  p.paddingLower = p.paddingUpper = {pad, pad};
  return p;
}

struct Case {
  const char *name;
  // Builds the inputs into setup (not measured), then the op into prog.
  std::function<void(Graph &, Sequence &setup, Sequence &prog,
                     std::function<void()> startClock)>
      build;
};

void convCase(Graph &g, Sequence &setup, Sequence &prog,
              const std::function<void()> &start, const ops::ConvParams &p,
              int pass) {
  Tensor x = convActs(g, p.inputChannelsPerConvGroup, p.inputFieldShape[0],
                      p.inputFieldShape[1], setup);
  Tensor w = ops::createWeights(g, p, "w");
  if (pass == 0) {
    start();
    ops::convolution(g, x, w, p, false, prog, "conv");
    return;
  }
  Tensor dy = convActs(g, p.outputChannelsPerConvGroup, p.getOutputSize(0),
                       p.getOutputSize(1), setup);
  start();
  if (pass == 1)
    ops::convolutionInputGradient(g, dy, w, p, prog, "convBwd");
  else
    ops::convolutionWeightGradient(g, dy, x, p, prog, "convWu");
}

Tensor channelsVar(Graph &g, std::size_t c, const char *name) {
  Tensor t = g.addVariable(FLOAT, {c}, name);
  mapTensorLinearly(g, t);
  return t;
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  struct ConvSpec {
    const char *name;
    std::size_t cin, cout, hw, k;
    unsigned stride;
  };
  const ConvSpec convs[] = {
      {"conv7x7s2_3_64_224", 3, 64, 224, 7, 2},
      {"conv1x1_64_256_56", 64, 256, 56, 1, 1},
      {"conv3x3_64_64_56", 64, 64, 56, 3, 1},
      {"conv1x1_256_64_56", 256, 64, 56, 1, 1},
      {"conv3x3_512_512_7", 512, 512, 7, 3, 1},
      // The same network on 32x32 images: stages at 8x8 down to 1x1.
      {"conv3x3_64_64_8", 64, 64, 8, 3, 1},
      {"conv1x1_512_128_4", 512, 128, 4, 1, 1},
      {"conv3x3_256_256_2", 256, 256, 2, 3, 1},
      {"conv1x1_256_1024_2", 256, 1024, 2, 1, 1},
      {"conv3x3_512_512_1", 512, 512, 1, 3, 1},
      {"conv1x1_2048_512_1", 2048, 512, 1, 1, 1},
  };
  const char *passes[] = {"fwd", "bwd", "wu"};
  for (const ConvSpec &c : convs)
    for (int pass = 0; pass < 3; ++pass) {
      if (pass == 1 && c.cin == 3)
        continue; // the first layer has no input gradient
      cs.push_back({strdup((std::string(c.name) + "_" + passes[pass]).c_str()),
                    [c, pass](Graph &g, Sequence &s, Sequence &p,
                              std::function<void()> start) {
                      convCase(g, s, p, start,
                               convParams(c.cin, c.cout, c.hw, c.k, c.stride),
                               pass);
                    }});
    }
  for (std::size_t hw : {8, 56, 112}) {
    const std::size_t c = hw == 112 ? 64 : 256;
    const std::string shape = std::to_string(c) + "_" + std::to_string(hw);
    cs.push_back({strdup(("bn_fwd_" + shape).c_str()),
                  [c, hw](Graph &g, Sequence &s, Sequence &p,
                          std::function<void()> start) {
                    Tensor x = convActs(g, c, hw, hw, s);
                    Tensor gamma = channelsVar(g, c, "gamma");
                    Tensor beta = channelsVar(g, c, "beta");
                    start();
                    auto [mean, istd] = ops::batchNormStatistics(
                        g, x, 1e-3f, p, false, true, FLOAT, "bn");
                    ops::batchNormalise(g, x, gamma, beta, mean, istd, p, "bn");
                  }});
    cs.push_back({strdup(("bn_grad_" + shape).c_str()),
                  [c, hw](Graph &g, Sequence &s, Sequence &p,
                          std::function<void()> start) {
                    Tensor x = convActs(g, c, hw, hw, s);
                    Tensor dy = convActs(g, c, hw, hw, s);
                    Tensor gamma = channelsVar(g, c, "gamma");
                    Tensor mean = channelsVar(g, c, "mean");
                    Tensor istd = channelsVar(g, c, "istd");
                    start();
                    ops::batchNormGradients(g, x, dy, mean, istd, gamma, p,
                                            FLOAT, "bnGrad");
                  }});
  }
  // The case: batch norm of channels-last activations [N, H, W, C]
  // seen channels-first.
  cs.push_back(
      {"bn_fwd_channels_last_256_56",
       [](Graph &g, Sequence &, Sequence &p, std::function<void()> start) {
         Tensor x = g.addVariable(FLOAT, {kBatch, 56, 56, 256}, "x");
         mapTensorLinearly(g, x);
         Tensor gamma = channelsVar(g, 256, "gamma");
         Tensor beta = channelsVar(g, 256, "beta");
         start();
         Tensor xc = x.dimShuffle({0, 3, 1, 2});
         auto [mean, istd] = ops::batchNormStatistics(g, xc, 1e-3f, p, false,
                                                      true, FLOAT, "bn");
         ops::batchNormalise(g, xc, gamma, beta, mean, istd, p, "bn");
       }});
  cs.push_back(
      {"relu_256_56",
       [](Graph &g, Sequence &s, Sequence &p, std::function<void()> start) {
         Tensor x = convActs(g, 256, 56, 56, s);
         start();
         ops::nonLinearity(g, ops::NonLinearityType::RELU, x, p, "relu");
       }});
  cs.push_back({"relu_grad_256_56", [](Graph &g, Sequence &s, Sequence &p,
                                       std::function<void()> start) {
                  Tensor y = convActs(g, 256, 56, 56, s);
                  Tensor dy = convActs(g, 256, 56, 56, s);
                  start();
                  ops::nonLinearityInputGradient(g, ops::NonLinearityType::RELU,
                                                 y, dy, p, "reluGrad");
                }});
  cs.push_back({"add_256_56", [](Graph &g, Sequence &s, Sequence &p,
                                 std::function<void()> start) {
                  Tensor a = convActs(g, 256, 56, 56, s);
                  Tensor b = convActs(g, 256, 56, 56, s);
                  start();
                  ops::map(g, _1 + _2, {a, b}, p, "add");
                }});
  cs.push_back({"add_256_8", [](Graph &g, Sequence &s, Sequence &p,
                                std::function<void()> start) {
                  Tensor a = convActs(g, 256, 8, 8, s);
                  Tensor b = convActs(g, 256, 8, 8, s);
                  start();
                  ops::map(g, _1 + _2, {a, b}, p, "add");
                }});
  // An optimizer's update of 3x3 256 -> 256 weights by their gradient, as
  // the two lie.
  cs.push_back(
      {"update_w3x3_256_256",
       [](Graph &g, Sequence &s, Sequence &p, std::function<void()> start) {
         const ops::ConvParams cp = convParams(256, 256, 2, 3, 1);
         Tensor w = ops::createWeights(g, cp, "w");
         Tensor x = convActs(g, 256, 2, 2, s);
         Tensor dy = convActs(g, 256, 2, 2, s);
         Tensor dw = ops::convolutionWeightGradient(g, dy, x, cp, s, "dw");
         start();
         ops::mapInPlace(g, _1 - _2 * Const(0.01f), {w, dw}, p, "update");
       }});
  cs.push_back({"maxpool3x3s2_64_112", [](Graph &g, Sequence &s, Sequence &p,
                                          std::function<void()> start) {
                  Tensor x = convActs(g, 64, 112, 112, s);
                  ops::PoolParams pp(ops::PoolingType::MAX, {112, 112}, {3, 3},
                                     {2, 2}, {1, 1}, {1, 1}, 64, kBatch, FLOAT);
                  start();
                  ops::pool(g, pp, x, p, "pool");
                }});
  cs.push_back(
      {"maxpool3x3s2_64_112_grad",
       [](Graph &g, Sequence &s, Sequence &p, std::function<void()> start) {
         Tensor x = convActs(g, 64, 112, 112, s);
         ops::PoolParams pp(ops::PoolingType::MAX, {112, 112}, {3, 3}, {2, 2},
                            {1, 1}, {1, 1}, 64, kBatch, FLOAT);
         Tensor y = ops::pool(g, pp, x, s, "pool");
         Tensor dy = g.clone(y, "dy");
         start();
         ops::poolInputGradient(g, pp, x, y, dy, p, "poolGrad");
       }});
  cs.push_back(
      {"global_avg_2048_7",
       [](Graph &g, Sequence &s, Sequence &p, std::function<void()> start) {
         Tensor x = convActs(g, 2048, 7, 7, s);
         start();
         ops::reduce(g, x, {2, 3},
                     ops::ReduceParams(ops::Operation::ADD, false, 1.0f / 49),
                     p, "gap");
       }});
  cs.push_back({"dense_2048_1000", [](Graph &g, Sequence &, Sequence &p,
                                      std::function<void()> start) {
                  Tensor x = ops::createMatMulInputLHS(g, FLOAT, {kBatch, 2048},
                                                       {2048, 1000}, "x");
                  Tensor w = ops::createMatMulInputRHS(g, FLOAT, {kBatch, 2048},
                                                       {2048, 1000}, "w");
                  start();
                  ops::matMul(g, x, w, p, FLOAT, "dense");
                }});
  return cs;
}

struct Figures {
  std::size_t vertices = 0, listElements = 0, runs = 0;
  /// List elements by "class.field", for --fields.
  std::map<std::string, std::size_t> byField;
};

Figures count(const Graph &g, std::size_t firstVertex) {
  Figures f;
  const auto &vs = g.data().vertices;
  f.vertices = vs.size() - firstVertex;
  for (std::size_t i = firstVertex; i < vs.size(); ++i) {
    const auto &info = vs[i].vertexClass->info;
    for (std::size_t k = 0; k < vs[i].fields.size(); ++k) {
      const FieldBinding &b = vs[i].fields[k];
      f.listElements += b.tensors.size();
      f.byField[info.name + "." + info.fields[k].name] += b.tensors.size();
      for (const Tensor &t : b.tensors)
        f.runs += t.runs().size();
    }
  }
  return f;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

// The child: builds and (unless !compile) compiles one case, printing
// its figures.
int runCase(const Case &c, bool compile, bool fields) {
  IPUModel model("ipu2");
  model.tilesPerIPU = 1472;
  Device device = model.createDevice();
  Graph g(device.getTarget());
  ops::addCodelets(g);
  Sequence setup, prog;
  std::size_t firstVertex = 0, heap0 = 0;
  auto t0 = std::chrono::steady_clock::now();
  c.build(g, setup, prog, [&] {
    firstVertex = g.data().vertices.size();
    heap0 = mallinfo2().uordblks;
    t0 = std::chrono::steady_clock::now();
  });
  const double lowerS = secondsSince(t0);
  const double heapMB = (double(mallinfo2().uordblks) - double(heap0)) / 1e6;
  const Figures f = count(g, firstVertex);
  double compileS = 0;
  if (compile) {
    const auto t1 = std::chrono::steady_clock::now();
    Sequence all({setup, prog});
    Engine engine(g, all, OptionFlags{{"engine.hostThreads", "1"}});
    compileS = secondsSince(t1);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("RESULT lower_%s=vertices %zu list_elements %zu runs %zu "
              "lower_s %.3f heap_MB %.1f compile_s %.3f peak_rss_MB %.0f\n",
              c.name, f.vertices, f.listElements, f.runs, lowerS, heapMB,
              compileS, ru.ru_maxrss / 1024.0);
  if (fields)
    for (const auto &[name, n] : f.byField)
      if (n)
        std::printf("  %-60s %zu\n", name.c_str(), n);
  std::fflush(stdout);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  bool compile = true, fields = false;
  std::vector<std::string> wanted;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-compile") == 0)
      compile = false;
    else if (std::strcmp(argv[i], "--fields") == 0)
      fields = true;
    else
      wanted.push_back(argv[i]);
  }
  int status = 0;
  for (const Case &c : cases()) {
    if (!wanted.empty() &&
        std::find(wanted.begin(), wanted.end(), c.name) == wanted.end())
      continue;
    const pid_t pid = ::fork();
    if (pid == 0)
      ::_exit(runCase(c, compile, fields));
    int st = 0;
    ::waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::printf("RESULT lower_%s=failed (status %d)\n", c.name, st);
      status = 1;
    }
  }
  return status;
}
