#include "tessera/data/Benchmark.hpp"

#include <algorithm>
#include <chrono>

namespace tessera::data {

nlohmann::json datasetBenchmark(const Dataset &dataset, std::size_t epochs,
                                std::size_t elementsPerEpoch) {
  if (epochs == 0 || elementsPerEpoch == 0)
    throw Error("datasetBenchmark: " + std::to_string(epochs) + " epochs of " +
                std::to_string(elementsPerEpoch) +
                " elements measure nothing; ask for at least one epoch of "
                "at least one element");
  const Cardinality card = dataset.cardinality();
  if (card.isFinite() && card.count() < epochs * elementsPerEpoch)
    throw Error("datasetBenchmark: the dataset has " + card.toString() +
                " elements but " + std::to_string(epochs) + " epochs of " +
                std::to_string(elementsPerEpoch) + " need " +
                std::to_string(epochs * elementsPerEpoch) +
                "; repeat() the dataset or ask for fewer");
  using Clock = std::chrono::steady_clock;
  nlohmann::json results = nlohmann::json::array();
  Iterator it = dataset.iterator();
  Element element;
  for (std::size_t epoch = 0; epoch < epochs; ++epoch) {
    std::size_t bytes = 0;
    const Clock::time_point start = Clock::now();
    for (std::size_t i = 0; i < elementsPerEpoch; ++i) {
      if (!it.next(element))
        throw Error("datasetBenchmark: the dataset ended after " +
                    std::to_string(epoch * elementsPerEpoch + i) +
                    " elements, in epoch " + std::to_string(epoch) + " of " +
                    std::to_string(epochs) + " (" +
                    std::to_string(elementsPerEpoch) +
                    " elements each); repeat() the dataset or ask for fewer");
      bytes += element.numBytes();
    }
    // A clock tick is the finest time there is; rates stay finite.
    const double seconds =
        std::max(std::chrono::duration<double>(Clock::now() - start).count(),
                 std::chrono::duration<double>(Clock::duration(1)).count());
    results.push_back(
        {{"elements_processed", elementsPerEpoch},
         {"total_bytes_processed", bytes},
         {"time_elapsed", seconds},
         {"elements_per_second", double(elementsPerEpoch) / seconds},
         {"bandwidth", double(bytes) / seconds}});
  }
  return {{"epochs", results}};
}

} // namespace tessera::data
