/// \file
/// Helpers shared by the engine benchmarks: robust statistics over
/// interleaved samples, process resident memory, and the RESULT lines each
/// benchmark prints after Google Benchmark's table so a script can collect
/// the acceptance figures (`RESULT empty_vertices_us=42.1 target<=100 PASS`).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

namespace tessera::bench {

using Clock = std::chrono::steady_clock;

/// Seconds elapsed since \p start.
inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The median of \p samples (the mean of the middle two for an even count);
/// the machine is shared, so medians are what the RESULT lines compare.
inline double median(std::vector<double> samples) {
  if (samples.empty())
    return 0;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  return n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

/// The \p q quantile (0..1) of \p samples, nearest rank.
inline double quantile(std::vector<double> samples, double q) {
  if (samples.empty())
    return 0;
  std::sort(samples.begin(), samples.end());
  const auto i = static_cast<std::size_t>(q * double(samples.size() - 1) + 0.5);
  return samples[std::min(i, samples.size() - 1)];
}

inline double minimum(const std::vector<double> &samples) {
  return samples.empty() ? 0
                         : *std::min_element(samples.begin(), samples.end());
}

/// The process's resident set size in bytes, from /proc/self/statm.
inline std::size_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t sizePages = 0, residentPages = 0;
  statm >> sizePages >> residentPages;
  return residentPages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

/// RESULT lines collected while the benchmarks run, printed at the end.
inline std::vector<std::string> &results() {
  static std::vector<std::string> lines;
  return lines;
}

/// Formats a double with \p digits after the point.
inline std::string fixed(double v, int digits = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

/// Records `RESULT <text>`. A benchmark may run more than once (repetitions,
/// filters); the last record of one name wins.
inline void addResult(const std::string &name, const std::string &text) {
  const std::string line = "RESULT " + name + "=" + text;
  auto &lines = results();
  for (std::string &l : lines)
    if (l.rfind("RESULT " + name + "=", 0) == 0) {
      l = line;
      return;
    }
  lines.push_back(line);
}

/// "PASS" or "MISS".
inline const char *verdict(bool pass) { return pass ? "PASS" : "MISS"; }

/// \p n deterministic floats in [-0.5, 0.5) (a linear congruential
/// sequence from \p seed): inputs every benchmark can reproduce.
inline std::vector<float> values(std::size_t n, unsigned seed) {
  std::vector<float> v(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (float &f : v) {
    x = x * 1664525u + 1013904223u;
    f = float(x >> 8) / float(1u << 24) - 0.5f;
  }
  return v;
}

/// CPU seconds of the whole process (all threads).
inline double processCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

/// The largest elementwise difference of \p x and \p y.
inline double maxDifference(const std::vector<float> &x,
                            const std::vector<float> &y) {
  double d = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    d = std::max(d, double(std::fabs(x[i] - y[i])));
  return d;
}

/// Runs the registered benchmarks, then prints the RESULT lines.
inline int runMain(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::cout.flush();
  for (const std::string &line : results())
    std::cout << line << '\n';
  return 0;
}

} // namespace tessera::bench
