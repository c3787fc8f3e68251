/// \file
/// Progress lines users of TensorFlow-for-IPU and Keras know: the compile
/// bar on stderr and the per-epoch training bar.
///
/// \code
///   [##################################################] 100% Compilation
///   Finished [Elapsed: 00:00:02.1] 1875/1875 [==============================]
///   - 2s 1ms/step - loss: 0.5212 - accuracy: 0.8114
/// \endcode
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace tessera::session {

/// "00:00:02.1": hours, minutes, seconds with tenths.
std::string formatElapsed(double seconds);

/// One compile bar line for \p fraction in [0, 1] done; \p finished says
/// "Compilation Finished" instead of the current \p phase.
std::string compileBarLine(double fraction, const std::string &phase,
                           bool finished, double elapsedSeconds);

/// Draws the compile bar on \p out (usually std::cerr) as compilation
/// proceeds, redrawing one line; finish() ends it.
class CompileProgressBar {
public:
  explicit CompileProgressBar(std::ostream &out);
  /// A compileGraph progress callback: (phase, fraction done).
  void operator()(const char *phase, double done);
  /// Draws the 100% line and a newline.
  void finish();

private:
  std::ostream &out_;
  double start_;
  int lastPercent_ = -1;
};

/// Named metric values, printed in order ("loss", 0.5212).
using Metrics = std::vector<std::pair<std::string, double>>;

/// One Keras progress line after \p step of \p total steps of an epoch:
/// the bar, the time so far (or the epoch's when done), time per step and
/// the metrics with four decimals.
std::string kerasProgressLine(std::size_t step, std::size_t total,
                              double elapsedSeconds, const Metrics &metrics);

/// Seconds since an arbitrary fixed point (steady clock).
double nowSeconds();

} // namespace tessera::session
