/// \file
/// Measuring how fast a dataset produces elements, to tell whether the input
/// pipeline or the model limits training.
///
/// \code
///   nlohmann::json stats = datasetBenchmark(train, 3, 1000);
///   for (const auto &epoch : stats["epochs"])
///     std::cout << epoch["elements_per_second"] << "\n";
/// \endcode
#pragma once

#include "tessera/data/Dataset.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>

namespace tessera::data {

/// Iterates \p dataset for \p epochs epochs of \p elementsPerEpoch elements
/// each (one iteration throughout, so repeat() a finite dataset that has
/// fewer elements than asked for; running out is an Error saying so) and
/// returns, for each epoch:
///
/// \code
///   {"epochs": [{"elements_processed": 1000,        // elements read
///                "total_bytes_processed": 3140000,  // bytes of every
///                component "time_elapsed": 0.0021,            // seconds
///                "elements_per_second": 476190.5,
///                "bandwidth": 1.495e9}, ...]}       // bytes per second
/// \endcode
///
/// The first epoch includes starting the pipeline (filling shuffle buffers,
/// starting prefetch threads).
nlohmann::json datasetBenchmark(const Dataset &dataset, std::size_t epochs,
                                std::size_t elementsPerEpoch);

} // namespace tessera::data
