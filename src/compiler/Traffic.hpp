// Private to the compiler: the bytes one exchange-like step moves, per tile,
// which the cost model turns into cycles.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::compiler {

struct Traffic {
  explicit Traffic(unsigned numTiles, unsigned numIPUs)
      : in(numTiles), out(numTiles), onTile(numTiles), ipuIn(numIPUs),
        ipuOut(numIPUs) {}
  std::vector<std::uint64_t> in, out, onTile; // per tile
  std::vector<std::uint64_t> ipuIn, ipuOut;   // bytes over IPU-links
  std::uint64_t hostBytes = 0;                // over the host link
  std::vector<unsigned> touched;              // tiles to reset

  void touch(unsigned tile) {
    if (!in[tile] && !out[tile] && !onTile[tile])
      touched.push_back(tile);
  }
  void reset() {
    for (unsigned t : touched)
      in[t] = out[t] = onTile[t] = 0;
    touched.clear();
    for (auto &v : ipuIn)
      v = 0;
    for (auto &v : ipuOut)
      v = 0;
    hostBytes = 0;
  }
};

} // namespace tessera::compiler
