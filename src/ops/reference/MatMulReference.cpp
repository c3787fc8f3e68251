// Host reference of the matrix products: the textbook triple loop in double,
// so tests can bound the error of the tile-parallel float and half products.
#include "tessera/ops/Reference.hpp"

#include "tessera/support/Error.hpp"

namespace tessera::ops::reference {

std::vector<double> matMulGrouped(const std::vector<double> &a,
                                  const std::vector<double> &b,
                                  std::size_t groups, std::size_t m,
                                  std::size_t k, std::size_t n) {
  TESSERA_INTERNAL_ASSERT(a.size() == groups * m * k &&
                              b.size() == groups * k * n,
                          "matMul reference: operand sizes do not match");
  std::vector<double> c(groups * m * n, 0.0);
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t q = 0; q < k; ++q) {
        const double x = a[(g * m + i) * k + q];
        for (std::size_t j = 0; j < n; ++j)
          c[(g * m + i) * n + j] += x * b[(g * k + q) * n + j];
      }
  return c;
}

std::vector<double> matMul(const std::vector<double> &a,
                           const std::vector<double> &b, std::size_t m,
                           std::size_t k, std::size_t n) {
  return matMulGrouped(a, b, 1, m, k, n);
}

} // namespace tessera::ops::reference
