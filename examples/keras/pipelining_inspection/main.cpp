// The TensorFlow 2 tutorial on pipelining and tensor inspection, in C++ on
// tessera::nn: a fully connected model trained on Fashion-MNIST (Debian's
// dataset-fashion-mnist) in four variants (functional Model and
// Sequential, each on one IPU and pipelined over two), returning
// activations and gradients to the host through outfeed queues and
// printing their statistics after each epoch (OutfeedCallback).
//
// Usage: keras_pipelining_inspection [--variant NAME] [--steps N]
//          [--epochs E] [--pre-accumulated] [--gradient-filters F,..|none]
//          [--activation-filters F,..|none] [--stats-dir DIR]
//   NAME: all (default), model, sequential, pipelined-model,
//   pipelined-sequential. --stats-dir also writes each callback's
//   statistics as CSV and JSON lines there.
#include "Models.hpp"

#include "tessera/data/Dataset.hpp"
#include "tessera/nn/OutfeedCallback.hpp"

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace nn = tessera::nn;
namespace data = tessera::data;
using namespace pipelining_inspection;

namespace {

struct Args {
  std::string variant = "all";
  std::size_t steps = 64;
  unsigned epochs = 2;
  bool preAccumulated = false;
  std::vector<std::string> gradientFilters{"Dense_128"};
  std::vector<std::string> activationFilters;
  std::string statsDir;
};

// "a,b" -> {a, b}; "none" -> {} (no filtering), as the tutorial's
// process_filters.
std::vector<std::string> filters(const std::string &text) {
  std::vector<std::string> out;
  if (text == "none")
    return out;
  std::stringstream in(text);
  for (std::string f; std::getline(in, f, ',');)
    if (!f.empty())
      out.push_back(f);
  return out;
}

Args parse(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << k << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--variant")
      a.variant = value();
    else if (k == "--steps")
      a.steps = std::stoul(value());
    else if (k == "--epochs")
      a.epochs = unsigned(std::stoul(value()));
    else if (k == "--pre-accumulated")
      a.preAccumulated = true;
    else if (k == "--gradient-filters")
      a.gradientFilters = filters(value());
    else if (k == "--activation-filters")
      a.activationFilters = filters(value());
    else if (k == "--stats-dir")
      a.statsDir = value();
    else {
      std::cerr << "unknown option " << k
                << "; see the comment at the top of main.cpp\n";
      std::exit(2);
    }
  }
  return a;
}

std::shared_ptr<nn::OutfeedCallback>
callback(std::shared_ptr<nn::OutfeedQueue> q, const std::string &name,
         const std::string &file, const Args &a) {
  nn::OutfeedCallbackOptions o;
  o.name = name;
  if (!a.statsDir.empty()) {
    o.csvPath = a.statsDir + "/" + file + ".csv";
    o.jsonLinesPath = a.statsDir + "/" + file + ".jsonl";
  }
  return std::make_shared<nn::OutfeedCallback>(std::move(q), o);
}

// Trains one variant and returns its last epoch's loss.
double run(ModelType type, bool pipelined, const data::Dataset &train,
           const Args &a) {
  constexpr unsigned kAccumulation = 4;
  Queues q;
  q.gradients = std::make_shared<nn::MaybeOutfeedQueue>(a.gradientFilters);
  q.multiActivations =
      std::make_shared<nn::MaybeOutfeedQueue>(a.activationFilters);
  std::unique_ptr<nn::Model> model =
      createModel(type, pipelined, pipelined, q, kAccumulation);
  std::cout << "\n==== "
            << (type == ModelType::Sequential ? "Sequential" : "Model")
            << (pipelined ? ", pipelined over 2 IPUs" : ", one IPU")
            << ", gradient accumulation " << kAccumulation << "\n";
  model->summary(std::cout);

  nn::FitOptions f;
  f.epochs = a.epochs;
  f.stepsPerEpoch = a.steps;
  f.verbose = nn::Verbosity::LinePerEpoch;
  f.callbacks.push_back(
      callback(q.gradients, "Gradients callback", "gradients", a));
  if (pipelined)
    f.callbacks.push_back(callback(q.multiActivations,
                                   "Multi-layer activations callback",
                                   "multi_layer_activations", a));
  else
    f.callbacks.push_back(callback(q.activations,
                                   "Single layer activations callback",
                                   "single_layer_activations", a));

  nn::CompileOptions c;
  c.optimizer = tessera::passes::SGD{0.05};
  c.stepsPerExecution = unsigned(a.steps); // one device run per epoch
  c.config.autoSelectIpus = pipelined ? 2 : 1;
  c.config.executableCachePath =
      std::getenv("TESSERA_CACHE_DIR") ? std::getenv("TESSERA_CACHE_DIR") : "";
  c.gradientOutfeed = {
      q.gradients, a.preAccumulated ? nn::GradientOutfeedMode::PreAccumulated
                                    : nn::GradientOutfeedMode::Accumulated};
  model->compile(c);
  const nn::History h = model->fit(train, f);
  return nn::logValue(h.epochs.back(), "loss");
}

} // namespace

int main(int argc, char **argv) {
  const Args a = parse(argc, argv);
  if (a.steps == 0 || a.steps % 4 != 0) {
    std::cerr << "--steps must be a positive multiple of 4 (the gradient "
                 "accumulation count)\n";
    return 2;
  }
  try {
    const data::Dataset train = data::fashionMnist(data::Split::Train)
                                    .shuffle(60000, /*seed=*/42)
                                    .batch(32, /*dropRemainder=*/true);
    struct Variant {
      const char *name;
      ModelType type;
      bool pipelined;
    };
    const Variant variants[] = {
        {"model", ModelType::Functional, false},
        {"sequential", ModelType::Sequential, false},
        {"pipelined-model", ModelType::Functional, true},
        {"pipelined-sequential", ModelType::Sequential, true}};
    bool any = false;
    for (const Variant &v : variants)
      if (a.variant == "all" || a.variant == v.name) {
        any = true;
        const double loss = run(v.type, v.pipelined, train, a);
        std::cout << "final loss (" << v.name << "): " << loss << "\n";
      }
    if (!any) {
      std::cerr << "unknown variant \"" << a.variant
                << "\"; use all, model, sequential, pipelined-model or "
                   "pipelined-sequential\n";
      return 2;
    }
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
