// Central finite differences of a module's scalar loss, computed with the
// double-precision interpreter, for checking autodiff's gradients.
#pragma once

#include "tessera/ir/Interpreter.hpp"
#include "tessera/passes/Autodiff.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace tessera::test {

/// Deterministic values in [lo, hi], away from 0 by at least \p gap when
/// the range spans it (so kinks of relu, abs, max... are not straddled).
inline std::vector<double> testValues(std::size_t n, std::uint64_t seed,
                                      double lo = -1, double hi = 1,
                                      double gap = 0.05) {
  std::vector<double> v(n);
  std::uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (double &x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u = double(s >> 11) / double(1ull << 53);
    x = lo + (hi - lo) * u;
    if (lo < 0 && hi > 0 && std::fabs(x) < gap)
      x = x < 0 ? -gap - std::fabs(x) : gap + x;
  }
  return v;
}

/// Checks d(loss)/d(v) from autodiff (interpreted) against central
/// differences for every float input of \p feeds. The module must have an
/// output named "loss" (a scalar). Returns the number of elements checked.
inline std::size_t checkGradients(ir::Module &m, const ir::Feeds &feeds,
                                  double h = 1e-5, double tol = 1e-6) {
  const ir::Value loss(m, m.output("loss"));
  std::vector<ir::Value> wrt;
  for (ir::ValueId id : m.inputs())
    if (isFloatingPoint(m.typeOf(id).dtype))
      wrt.push_back(ir::Value(m, id));
  const passes::Gradients grads = passes::autodiff(m, loss, wrt);
  const ir::Evaluation e = ir::interpret(m, feeds);
  std::size_t checked = 0;
  for (const auto &[x, g] : grads.entries()) {
    const std::string &name = x.name();
    const ir::HostValue &ad = e[g];
    EXPECT_EQ(ad.shape, x.shape()) << name;
    for (std::size_t i = 0; i < feeds.at(name).values.size(); ++i) {
      ir::Feeds plus = feeds, minus = feeds;
      plus[name].values[i] += h;
      minus[name].values[i] -= h;
      const double fd = (ir::interpret(m, plus).output("loss").values[0] -
                         ir::interpret(m, minus).output("loss").values[0]) /
                        (2 * h);
      EXPECT_NEAR(ad.values[i], fd, tol * std::max(1.0, std::fabs(fd)))
          << "d loss / d " << name << "[" << i << "]";
      ++checked;
    }
  }
  return checked;
}

} // namespace tessera::test
