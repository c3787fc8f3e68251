// Private to the compiler: the bytes one exchange-like step moves, per tile,
// which the cost model turns into cycles.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <vector>

namespace tessera::compiler {

struct Traffic {
  explicit Traffic(unsigned numTiles, unsigned numIPUs)
      : in(numTiles), out(numTiles), onTile(numTiles), sharedIn(numTiles),
        ipuIn(numIPUs), ipuOut(numIPUs), isTouched(numTiles),
        lastSend_(numTiles, 0xffffffffu), bucket_(numTiles) {}
  std::vector<std::uint64_t> in, out, onTile; // per tile
  /// Per tile: bytes of `in` that its exchange-bus partner also receives
  /// (counted by pairReceives()); the shared bus carries them at twice the
  /// rate.
  std::vector<std::uint64_t> sharedIn;
  std::vector<std::uint64_t> ipuIn, ipuOut; // bytes over IPU-links
  std::uint64_t hostBytes = 0;              // over the host link
  std::uint64_t remoteBytes = 0; // to or from streaming (remote) memory
  std::vector<unsigned> touched; // tiles to reset
  std::vector<bool> isTouched;   // per tile: in `touched`
  /// Contiguous byte ranges tiles send on chip, counted into `out` by
  /// sendsToOut(): a tile sends a byte once however many tiles receive it.
  struct Send {
    unsigned tile;
    std::uint64_t begin, end;
  };
  std::vector<Send> sends;
  /// Contiguous byte ranges of a sender that a tile receives on chip, for
  /// pairReceives().
  struct Receive {
    unsigned tile, from;
    std::uint64_t begin, end;
  };
  std::vector<Receive> receives;

  /// Adds a send range, joined to the tile's last one where they overlap
  /// or meet (their union is what counts). The tile's last range, not only
  /// the step's: an operand read across its variable's intervals (a
  /// transposed weight read element by element) visits many tiles in turn,
  /// and then comes back to each one just past where it left it.
  void addSend(unsigned tile, std::uint64_t begin, std::uint64_t end) {
    std::uint32_t &at = lastSend_[tile];
    if (at < sends.size() && sends[at].tile == tile &&
        join(sends[at].begin, sends[at].end, begin, end))
      return;
    at = static_cast<std::uint32_t>(sends.size());
    sends.push_back({tile, begin, end});
  }
  /// Adds a receive range, joined to the last one of the same tile and
  /// sender as addSend does (found through a small table that may forget:
  /// a range not joined only costs an entry).
  void addReceive(unsigned tile, unsigned from, std::uint64_t begin,
                  std::uint64_t end) {
    std::uint32_t &at =
        lastReceive_[(tile * 0x9e3779b1u ^ from) & (kReceiveSlots - 1)];
    if (at < receives.size() && receives[at].tile == tile &&
        receives[at].from == from &&
        join(receives[at].begin, receives[at].end, begin, end))
      return;
    at = static_cast<std::uint32_t>(receives.size());
    receives.push_back({tile, from, begin, end});
  }

  void touch(unsigned tile) {
    if (!isTouched[tile]) {
      isTouched[tile] = true;
      touched.push_back(tile);
    }
  }
  void reset() {
    for (unsigned t : touched) {
      in[t] = out[t] = onTile[t] = sharedIn[t] = 0;
      isTouched[t] = false;
    }
    touched.clear();
    for (auto &v : ipuIn)
      v = 0;
    for (auto &v : ipuOut)
      v = 0;
    hostBytes = 0;
    remoteBytes = 0;
    sends.clear();
    receives.clear();
  }

  /// Adds the union of each tile's send ranges to its outgoing bytes.
  void sendsToOut() {
    sortByTile(sends, sendScratch_,
               [](const Send &a, const Send &b) { return a.begin < b.begin; });
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

  /// Sets sharedIn of tiles 2t and 2t+1 (on one IPU of \p tilesPerIpu
  /// tiles) to the bytes both receive from the same sender's same
  /// addresses, when \p tilesPerBus is 2; a no-op when it is 1.
  void pairReceives(unsigned tilesPerBus, unsigned tilesPerIpu) {
    if (tilesPerBus != 2 || receives.empty()) {
      receives.clear();
      return;
    }
    auto key = [](const Receive &r) {
      return std::tie(r.from, r.begin, r.end);
    };
    sortByTile(
        receives, receiveScratch_,
        [&](const Receive &a, const Receive &b) { return key(a) < key(b); });
    // Merge each tile's ranges per sender so each byte counts once.
    std::size_t kept = 0;
    for (std::size_t i = 0; i < receives.size(); ++i) {
      const Receive r = receives[i];
      Receive *last = kept ? &receives[kept - 1] : nullptr;
      if (last && last->tile == r.tile && last->from == r.from &&
          r.begin <= last->end)
        last->end = std::max(last->end, r.end);
      else
        receives[kept++] = r;
    }
    receives.resize(kept);
    const std::vector<Receive> &merged = receives;
    for (std::size_t i = 0; i < merged.size();) {
      const unsigned tile = merged[i].tile;
      std::size_t j = i;
      while (j < merged.size() && merged[j].tile == tile)
        ++j;
      std::size_t k = j;
      while (k < merged.size() && merged[k].tile == tile + 1)
        ++k;
      if (tile % 2 == 0 && j < k &&
          tile / tilesPerIpu == (tile + 1) / tilesPerIpu) {
        const std::uint64_t both = overlap(merged, i, j, j, k);
        sharedIn[tile] = sharedIn[tile + 1] = both;
        i = k;
      } else {
        i = j;
      }
    }
    receives.clear();
  }

private:
  // Widens [begin, end) to its union with [b, e) when they overlap or meet.
  static bool join(std::uint64_t &begin, std::uint64_t &end, std::uint64_t b,
                   std::uint64_t e) {
    if (b > end || e < begin)
      return false;
    begin = std::min(begin, b);
    end = std::max(end, e);
    return true;
  }

  static constexpr std::size_t kReceiveSlots = std::size_t(1) << 14;
  /// Per tile, the index in `sends` of its last range; per hashed (tile,
  /// sender), that of a receive range. Stale after the lists are cleared,
  /// so an entry counts only if the range it names is the tile's.
  std::vector<std::uint32_t> lastSend_;
  std::vector<std::uint32_t> lastReceive_ =
      std::vector<std::uint32_t>(kReceiveSlots, 0xffffffffu);

  // Orders items by tile, then by `less` within a tile: a counting pass
  // over the few tiles a step's copies touch, then a sort of each tile's
  // items only where they are out of order (copies usually emit a tile's
  // ranges in address order), instead of one comparison sort of them all.
  template <class T, class Less>
  void sortByTile(std::vector<T> &items, std::vector<T> &scratch, Less less) {
    tiles_.clear();
    for (const T &x : items)
      if (bucket_[x.tile]++ == 0)
        tiles_.push_back(x.tile);
    std::sort(tiles_.begin(), tiles_.end());
    std::size_t start = 0;
    for (unsigned t : tiles_) {
      const std::size_t n = bucket_[t];
      bucket_[t] = start;
      start += n;
    }
    scratch.resize(items.size());
    for (const T &x : items)
      scratch[bucket_[x.tile]++] = x;
    items.swap(scratch);
    start = 0;
    for (unsigned t : tiles_) {
      const std::size_t end = bucket_[t];
      bucket_[t] = 0;
      const auto first = items.begin() + static_cast<std::ptrdiff_t>(start);
      const auto last = items.begin() + static_cast<std::ptrdiff_t>(end);
      if (!std::is_sorted(first, last, less))
        std::sort(first, last, less);
      start = end;
    }
  }

  /// Per tile: a count, then an offset, while sortByTile runs; else 0.
  std::vector<std::size_t> bucket_;
  std::vector<unsigned> tiles_;
  std::vector<Send> sendScratch_;
  std::vector<Receive> receiveScratch_;

  // Bytes common to sorted, disjoint ranges [a0, a1) and [b0, b1) of `r`.
  static std::uint64_t overlap(const std::vector<Receive> &r, std::size_t a0,
                               std::size_t a1, std::size_t b0, std::size_t b1) {
    std::uint64_t bytes = 0;
    while (a0 < a1 && b0 < b1) {
      const Receive &x = r[a0], &y = r[b0];
      if (x.from != y.from) {
        (x.from < y.from ? a0 : b0)++;
        continue;
      }
      const std::uint64_t lo = std::max(x.begin, y.begin);
      const std::uint64_t hi = std::min(x.end, y.end);
      if (lo < hi)
        bytes += hi - lo;
      (x.end < y.end ? a0 : b0)++;
    }
    return bytes;
  }
};

} // namespace tessera::compiler
