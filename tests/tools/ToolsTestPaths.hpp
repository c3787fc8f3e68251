/// \file
/// Where the tools tests find the built programs (set by CMake) and a
/// private folder per test.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#ifndef TESSERA_CLI_PATH
#error "TESSERA_CLI_PATH must name the built tessera program"
#endif
#ifndef TESSERA_HELPER_PATH
#error "TESSERA_HELPER_PATH must name the built tessera_test_helper"
#endif

namespace tessera::testing {

inline const std::string kTesseraCli = TESSERA_CLI_PATH;
inline const std::string kHelper = TESSERA_HELPER_PATH;

/// A fresh, empty folder under the system's temporary folder, removed when
/// the test ends.
class TempDir {
public:
  explicit TempDir(const std::string &prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() /
                           ("tessera-" + prefix + "-XXXXXX"))
                              .string();
    if (::mkdtemp(pattern.data()) == nullptr)
      ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path_ = pattern;
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

} // namespace tessera::testing
