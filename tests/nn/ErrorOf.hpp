// The message of the error of type E that f throws, for the nn tests'
// expectations on user-facing errors.
#pragma once

#include <string>

namespace tessera::nn::test {

/// What \p f throws as an E, or a text no expectation matches when it
/// throws nothing (another type propagates and fails the test).
template <typename E, typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const E &e) {
    return e.what();
  }
  return "no error of the expected type";
}

} // namespace tessera::nn::test
