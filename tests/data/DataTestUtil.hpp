// Helpers for the data tests: small datasets of known values and draining
// a dataset into plain vectors.
#pragma once

#include "tessera/data/Dataset.hpp"

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace tessera::data::test {

/// A dataset of \p n scalar INT elements 0, 1, ..., n-1.
inline Dataset range(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = i;
  return Dataset::fromTensors(
      {HostTensor::fromValues<int>({static_cast<std::size_t>(n)}, v)});
}

/// The first component of every element, each element's values in order.
inline std::vector<int> drainInts(const Dataset &ds) {
  std::vector<int> out;
  Iterator it = ds.iterator();
  while (auto e = it.next())
    for (int v : (*e)[0].values<int>())
      out.push_back(v);
  return out;
}

/// The number of elements the dataset yields.
inline std::size_t countElements(const Dataset &ds) {
  std::size_t n = 0;
  Iterator it = ds.iterator();
  Element e;
  while (it.next(e))
    ++n;
  return n;
}

/// A path in the temporary folder unique to this process.
inline std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("tessera-data-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

} // namespace tessera::data::test
