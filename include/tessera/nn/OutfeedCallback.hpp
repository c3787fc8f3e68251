/// \file
/// A fit() callback that empties an outfeed queue (Outfeed.hpp) at the end
/// of each epoch, or every K steps, and reports statistics of each tensor
/// it got, as the tensor-inspection tutorial's OutfeedCallback does:
///
/// \code
///   auto grads = std::make_shared<nn::MaybeOutfeedQueue>(
///       std::vector<std::string>{"Dense_128"});
///   nn::OutfeedCallbackOptions o;
///   o.name = "Gradients callback";
///   o.csvPath = "grads.csv";                // also one CSV row per tensor
///   nn::FitOptions f;
///   f.callbacks.push_back(std::make_shared<nn::OutfeedCallback>(grads, o));
/// \endcode
///
/// prints, after each epoch,
///
/// \code
///   Gradients callback
///   key: Dense_128/kernel_grad shape: (500, 256, 128)
///   Epoch 1 - Summary Stats
///   Index Name                      Mean         Std          Minimum ...
///   0     Dense_128/kernel_grad     -0.000120    0.012575     -0.186476 ...
/// \endcode
#pragma once

#include "tessera/nn/Model.hpp"
#include "tessera/nn/Outfeed.hpp"

#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace tessera::nn {

/// Statistics of one tensor over all its elements. NaN and infinite
/// elements are counted and left out of the others; zeroFraction is the
/// fraction of all elements that are exactly zero.
struct TensorStats {
  std::string name;
  Shape shape;
  std::size_t count = 0;
  double mean = 0, std = 0, min = 0, max = 0, l2Norm = 0, zeroFraction = 0;
  std::size_t nans = 0, infs = 0;
};

/// The statistics of \p t (float or half; std is the population standard
/// deviation, as NumPy's np.std). TypeError for other element types.
TensorStats tensorStats(const std::string &name, const data::HostTensor &t);

struct OutfeedCallbackOptions {
  /// The heading of each report.
  std::string name = "Outfeed callback";
  /// Dequeue after the device run that reaches each multiple of this many
  /// training steps (counted over the fit); 0: at the end of each epoch.
  std::size_t everySteps = 0;
  /// Where the table goes (null: nowhere).
  std::ostream *out = &std::cout;
  /// When set, each report's statistics are appended to this CSV file
  /// (a header first when the file is new or empty) and to this file of
  /// JSON objects, one per line. Each report is appended in one write
  /// under an exclusive lock, so readers and other writers never see part
  /// of a line.
  std::string csvPath;
  std::string jsonLinesPath;
};

class OutfeedCallback : public Callback {
public:
  /// Throws OptionError without a queue.
  explicit OutfeedCallback(std::shared_ptr<OutfeedQueue> queue,
                           OutfeedCallbackOptions options = {});
  void onEpochBegin(unsigned epoch) override;
  void onRunEnd(std::size_t step, const Logs &logs) override;
  void onEpochEnd(unsigned epoch, const Logs &logs) override;

  /// Empties the queue and reports what it held for \p epoch (0-based)
  /// after \p step training steps of the fit; returns the statistics.
  /// Throws Error naming a file it cannot write.
  std::vector<TensorStats> report(unsigned epoch, std::size_t step);
  /// The latest report's tensors and statistics (empty before any, or
  /// when nothing was queued).
  const OutfeedStep &lastDequeued() const { return last_; }
  const std::vector<TensorStats> &lastStats() const { return stats_; }

private:
  std::shared_ptr<OutfeedQueue> queue_;
  OutfeedCallbackOptions options_;
  unsigned epoch_ = 0;
  std::size_t epochStart_ = 0, steps_ = 0;
  OutfeedStep last_;
  std::vector<TensorStats> stats_;
};

} // namespace tessera::nn
