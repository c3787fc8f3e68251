// Private to the compiler: the bytes one exchange-like step moves, per tile,
// which the cost model turns into cycles.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tessera::compiler {

struct Traffic {
  explicit Traffic(unsigned numTiles, unsigned numIPUs)
      : in(numTiles), out(numTiles), onTile(numTiles), ipuIn(numIPUs),
        ipuOut(numIPUs), isTouched(numTiles) {}
  std::vector<std::uint64_t> in, out, onTile; // per tile
  std::vector<std::uint64_t> ipuIn, ipuOut;   // bytes over IPU-links
  std::uint64_t hostBytes = 0;                // over the host link
  std::vector<unsigned> touched;              // tiles to reset
  std::vector<bool> isTouched;                // per tile: in `touched`
  /// Contiguous byte ranges tiles send on chip, counted into `out` by
  /// sendsToOut(): a tile sends a byte once however many tiles receive it.
  struct Send {
    unsigned tile;
    std::uint64_t begin, end;
  };
  std::vector<Send> sends;

  void touch(unsigned tile) {
    if (!isTouched[tile]) {
      isTouched[tile] = true;
      touched.push_back(tile);
    }
  }
  void reset() {
    for (unsigned t : touched) {
      in[t] = out[t] = onTile[t] = 0;
      isTouched[t] = false;
    }
    touched.clear();
    for (auto &v : ipuIn)
      v = 0;
    for (auto &v : ipuOut)
      v = 0;
    hostBytes = 0;
    sends.clear();
  }

  /// Adds the union of each tile's send ranges to its outgoing bytes.
  void sendsToOut() {
    std::sort(sends.begin(), sends.end(), [](const Send &a, const Send &b) {
      return a.tile != b.tile ? a.tile < b.tile : a.begin < b.begin;
    });
    for (std::size_t i = 0; i < sends.size();) {
      const unsigned tile = sends[i].tile;
      std::uint64_t begin = sends[i].begin, end = sends[i].end;
      for (++i; i < sends.size() && sends[i].tile == tile; ++i) {
        if (sends[i].begin > end) {
          out[tile] += end - begin;
          begin = sends[i].begin;
        }
        end = std::max(end, sends[i].end);
      }
      out[tile] += end - begin;
    }
    sends.clear();
  }
};

} // namespace tessera::compiler
