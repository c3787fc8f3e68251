#include "support/Copy.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace {

// Every length through the vector, short-move and memcpy paths, at every
// alignment of source and destination within a vector: the bytes in range
// are copied and the bytes around them are untouched.
TEST(CopyBytes, CopiesExactlyTheRangeAtEveryLengthAndAlignment) {
  constexpr std::size_t kMax = 1100, kGuard = 40;
  std::vector<unsigned char> src(kMax + 64), dst(kMax + 64 + 2 * kGuard);
  for (std::size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<unsigned char>(i * 7 + 1);
  for (std::size_t n = 0; n <= kMax; ++n)
    for (std::size_t so : {0, 1, 3, 31})
      for (std::size_t dOff : {0, 5, 32}) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        unsigned char *d = dst.data() + kGuard + dOff;
        tessera::support::copyBytes(d, src.data() + so, n);
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_EQ(d[i], src[so + i]) << "n " << n << " byte " << i;
        for (std::size_t i = 0; i < kGuard; ++i) {
          ASSERT_EQ(d[-1 - std::ptrdiff_t(i)], 0xEE) << "n " << n;
          ASSERT_EQ(d[n + i], 0xEE) << "n " << n;
        }
      }
}

} // namespace
