/// \file
/// A fresh TESSERA_SYSTEM_DIR per test, so tests that attach IPUs never
/// meet each other's locks, even when ctest runs them in parallel.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tessera::testing {

class TempSystemDirTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tessera-system-XXXXXX")
            .string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    const char *old = std::getenv("TESSERA_SYSTEM_DIR");
    hadOld_ = old != nullptr;
    if (hadOld_)
      old_ = old;
    ::setenv("TESSERA_SYSTEM_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (hadOld_)
      ::setenv("TESSERA_SYSTEM_DIR", old_.c_str(), 1);
    else
      ::unsetenv("TESSERA_SYSTEM_DIR");
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;

private:
  bool hadOld_ = false;
  std::string old_;
};

} // namespace tessera::testing
