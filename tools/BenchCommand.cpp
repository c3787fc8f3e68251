// `tessera bench dataset SPEC`: how fast an input pipeline produces
// elements (data::datasetBenchmark), to tell whether input or the model
// limits training. The pipeline is source -> shuffle -> batch -> repeat ->
// prefetch; the JSON result goes to standard output.
#include "Commands.hpp"

#include "tessera/data/Benchmark.hpp"
#include "tessera/data/Dataset.hpp"
#include "tessera/support/Error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <ostream>

namespace tessera::tools {
namespace {

struct DatasetBenchOptions {
  std::string spec;
  std::optional<std::size_t> batchSize;
  std::size_t epochs = 3;
  std::optional<std::size_t> elementsPerEpoch;
  std::optional<std::uint64_t> shuffleSeed;
  std::optional<std::size_t> prefetch;
};

const char *const kSpecHelp =
    "SPEC names the source:\n"
    "  fashion-mnist[:train|:test]  Fashion-MNIST from Debian's "
    "dataset-fashion-mnist\n"
    "                               (train by default; "
    "TESSERA_FASHION_MNIST_DIR overrides\n"
    "                               the folder)\n"
    "  IMAGES,LABELS                an IDX images file and an IDX labels "
    "file (.gz or\n"
    "                               plain): (image, label) elements\n"
    "  FILE.csv, FILE.csv.gz        a CSV file of numeric columns with a "
    "header line:\n"
    "                               one float \"features\" vector per row\n"
    "  FILE                         any other file is read as one IDX "
    "array, sliced\n"
    "                               along its first dimension\n"
    "The pipeline is SPEC -> shuffle (--shuffle) -> batch (--batch-size, "
    "short last\nbatch dropped) -> repeat -> prefetch (--prefetch). An "
    "epoch is one pass over the\nbatched source unless "
    "--elements-per-epoch says otherwise.";

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void requireFile(const std::string &path, const std::string &spec) {
  if (!std::filesystem::is_regular_file(path))
    throw OptionError(fmt::format(
        "dataset \"{}\": there is no file \"{}\"; give an existing IDX or "
        "CSV file, or fashion-mnist[:train|:test]",
        spec, path));
}

data::Dataset fashionMnistSource(const std::string &spec) {
  const std::string split = spec.size() > 13 ? spec.substr(14) : "train";
  if (spec.size() > 13 && spec[13] != ':')
    throw OptionError(fmt::format(
        "unknown dataset \"{}\"; did you mean fashion-mnist:train?", spec));
  if (split != "train" && split != "test")
    throw OptionError(fmt::format(
        "dataset \"{}\": Fashion-MNIST has no split \"{}\"; use "
        "fashion-mnist:train (60000 images) or fashion-mnist:test (10000)",
        spec, split));
  return data::fashionMnist(split == "train" ? data::Split::Train
                                             : data::Split::Test);
}

// The source dataset SPEC names (see kSpecHelp).
data::Dataset sourceFor(const std::string &spec) {
  if (spec.rfind("fashion-mnist", 0) == 0)
    return fashionMnistSource(spec);
  if (const auto comma = spec.find(','); comma != std::string::npos) {
    const std::string images = spec.substr(0, comma),
                      labels = spec.substr(comma + 1);
    requireFile(images, spec);
    requireFile(labels, spec);
    return data::Dataset::idx(images, labels);
  }
  if (endsWith(spec, ".csv") || endsWith(spec, ".csv.gz")) {
    requireFile(spec, spec);
    return data::Dataset::csv(spec);
  }
  if (std::filesystem::is_regular_file(spec))
    return data::Dataset::fromTensors({data::readIdxTensor(spec)});
  throw OptionError(fmt::format(
      "unknown dataset \"{}\": it is neither fashion-mnist[:train|:test] nor "
      "an existing file; give an IDX file, IMAGES,LABELS IDX files or a CSV "
      "file (see `tessera bench dataset --help`)",
      spec));
}

// Elements (batches) in one pass of the source, the default epoch.
std::size_t onePass(const data::Dataset &source, const DatasetBenchOptions &o) {
  const data::Cardinality c = source.cardinality();
  if (!c.isFinite())
    throw OptionError(fmt::format(
        "dataset \"{}\" has {} elements, so an epoch has no natural length; "
        "give --elements-per-epoch",
        o.spec, c.toString()));
  const std::size_t batch = o.batchSize.value_or(1);
  if (c.count() < batch || c.count() == 0)
    throw OptionError(fmt::format(
        "dataset \"{}\" has {} elements, fewer than one batch of {}; give a "
        "--batch-size of at most {}",
        o.spec, c.count(), batch, c.count()));
  return c.count() / batch;
}

// Ceilings on the options that size buffers or loops, so that a typo is
// an error with the range, not an allocation of terabytes.
constexpr std::size_t kMaxEpochs = 10000;
constexpr std::size_t kMaxPrefetch = 1024;

void checkOptions(const DatasetBenchOptions &o) {
  if (o.epochs == 0 || o.epochs > kMaxEpochs)
    throw OptionError(
        fmt::format("--epochs must be 1 to {}, got {}", kMaxEpochs, o.epochs));
  if (o.prefetch && (*o.prefetch == 0 || *o.prefetch > kMaxPrefetch))
    throw OptionError(fmt::format("--prefetch must be 1 to {} elements, got {}",
                                  kMaxPrefetch, *o.prefetch));
  if (o.elementsPerEpoch && *o.elementsPerEpoch == 0)
    throw OptionError("--elements-per-epoch must be at least 1");
}

void runDatasetBench(const DatasetBenchOptions &o,
                     const CommandStreams &streams) {
  checkOptions(o);
  data::Dataset ds = sourceFor(o.spec);
  // onePass also checks that a finite source fills at least one batch.
  std::size_t perEpoch = 0;
  if (ds.cardinality().isFinite() || !o.elementsPerEpoch)
    perEpoch = onePass(ds, o);
  if (o.elementsPerEpoch)
    perEpoch = *o.elementsPerEpoch;
  if (o.shuffleSeed) {
    // A buffer as large as a known dataset shuffles uniformly.
    const data::Cardinality c = ds.cardinality();
    ds =
        ds.shuffle(c.isFinite() ? std::max<std::uint64_t>(c.count(), 1) : 10000,
                   *o.shuffleSeed);
  }
  if (o.batchSize)
    ds = ds.batch(*o.batchSize, /*dropRemainder=*/true);
  ds = ds.repeat();
  if (o.prefetch)
    ds = ds.prefetch(*o.prefetch);
  nlohmann::json result = data::datasetBenchmark(ds, o.epochs, perEpoch);
  nlohmann::ordered_json out = {{"dataset", o.spec},
                                {"element_spec", ds.spec().toString()},
                                {"elements_per_epoch", perEpoch},
                                {"epochs", result["epochs"]}};
  streams.out << out.dump(2) << '\n';
}

} // namespace

void addBenchCommand(CLI::App &app, const CommandStreams &streams) {
  CLI::App *bench =
      app.add_subcommand("bench", "Measure parts of the stack on this host");
  bench->require_subcommand(1);
  auto options = std::make_shared<DatasetBenchOptions>();
  CLI::App *dataset = bench->add_subcommand(
      "dataset", "Measure how fast an input pipeline produces elements; "
                 "prints JSON, one object per epoch");
  dataset->footer(kSpecHelp);
  dataset->add_option("SPEC", options->spec, "The dataset (see below)")
      ->required();
  dataset
      ->add_option("-b,--batch-size", options->batchSize,
                   "Batch this many elements together")
      ->check(CLI::PositiveNumber);
  dataset
      ->add_option("-e,--epochs", options->epochs, "Epochs to time, 1 to 10000")
      ->capture_default_str();
  dataset->add_option("-n,--elements-per-epoch", options->elementsPerEpoch,
                      "Elements (batches, with --batch-size) per epoch; "
                      "default: one pass");
  dataset->add_option("--shuffle", options->shuffleSeed,
                      "Shuffle with this seed, over the whole dataset");
  dataset
      ->add_option("--prefetch", options->prefetch,
                   "Prefetch this many elements (1 to 1024) on a worker "
                   "thread")
      ->check(CLI::PositiveNumber);
  dataset->callback([options, streams] { runDatasetBench(*options, streams); });
}

} // namespace tessera::tools
