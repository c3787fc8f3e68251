#include "tessera/session/Progress.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ostream>

namespace tessera::session {

double nowSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string formatElapsed(double seconds) {
  const auto tenths = static_cast<long long>(std::llround(seconds * 10));
  const long long h = tenths / 36000, m = tenths / 600 % 60,
                  s = tenths / 10 % 60, t = tenths % 10;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld.%lld", h, m, s, t);
  return buf;
}

std::string compileBarLine(double fraction, const std::string &phase,
                           bool finished, double elapsedSeconds) {
  constexpr int kWidth = 50;
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(fraction * kWidth);
  std::string line =
      "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] ";
  line += std::to_string(static_cast<int>(fraction * 100)) + "% ";
  line += finished ? "Compilation Finished" : phase;
  line += " [Elapsed: " + formatElapsed(elapsedSeconds) + "]";
  return line;
}

CompileProgressBar::CompileProgressBar(std::ostream &out)
    : out_(out), start_(nowSeconds()) {}

void CompileProgressBar::operator()(const char *phase, double done) {
  const int percent = static_cast<int>(done * 100);
  // Redraw only when the bar moves: compile callbacks can be frequent.
  if (percent == lastPercent_)
    return;
  lastPercent_ = percent;
  out_ << '\r' << compileBarLine(done, phase, false, nowSeconds() - start_)
       << std::flush;
}

void CompileProgressBar::finish() {
  out_ << '\r' << compileBarLine(1.0, "", true, nowSeconds() - start_) << '\n'
       << std::flush;
}

namespace {

// Keras prints per-step time in the unit that keeps it readable.
std::string perStep(double seconds) {
  char buf[32];
  if (seconds >= 1)
    std::snprintf(buf, sizeof buf, "%.0fs/step", seconds);
  else if (seconds >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.0fms/step", seconds * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0fus/step", seconds * 1e6);
  return buf;
}

} // namespace

std::string kerasProgressLine(std::size_t step, std::size_t total,
                              double elapsedSeconds, const Metrics &metrics) {
  constexpr std::size_t kWidth = 30;
  const std::string count = std::to_string(total);
  std::string s = std::to_string(step);
  s = std::string(count.size() - std::min(count.size(), s.size()), ' ') + s +
      "/" + count + " [";
  const std::size_t filled = total ? kWidth * step / total : kWidth;
  if (step >= total) {
    s += std::string(kWidth, '=');
  } else {
    s += std::string(filled > 0 ? filled - 1 : 0, '=') + ">" +
         std::string(kWidth - std::max<std::size_t>(filled, 1), '.');
  }
  s += "] - ";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0fs ", elapsedSeconds);
  s += buf;
  s += perStep(step ? elapsedSeconds / double(step) : 0.0);
  for (const auto &[name, value] : metrics) {
    std::snprintf(buf, sizeof buf, " - %s: %.4f", name.c_str(), value);
    s += buf;
  }
  return s;
}

} // namespace tessera::session
