// The tile plan of reductions: which vertex reduces which elements on which
// tile (stage 1), where each output is finished, and which partials the
// second stage gathers (see ReduceInternal.hpp).
#include "ReduceInternal.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace tessera::ops::reduceplan {
namespace {

// Below this many elements a vertex's fixed cost dominates, so a tile's work
// is not split further between workers.
constexpr std::size_t kMinWorkerElements = 128;
// Splitting a range of outputs between workers cuts every row it covers;
// do so only while the row pieces stay at least this long.
constexpr std::size_t kMinRowPiece = 32;
// ... and while a vertex does not get more row pieces than this: beyond
// that, splitting the rows gives fewer, longer pieces (and the outputs a
// few partials on the tile).
constexpr std::size_t kMaxRowPiecesPerVertex = 32;

std::size_t ceilDiv(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// A piece that covers one output is just a run of elements: one row.
Piece normalised(Piece p) {
  if (p.cover == 1) {
    p.q *= p.rows;
    p.rows = 1;
  }
  return p;
}

// The pieces of view elements [b, e), all on one tile.
void piecesOf(std::size_t b, std::size_t e, const CanonicalView &cv,
              std::vector<Piece> &out) {
  const std::size_t P = cv.P, rowLen = cv.W * cv.P;
  while (b < e) {
    const std::size_t row = b / rowLen, rowBase = row * rowLen;
    const std::size_t outBase = row / cv.S * cv.W;
    std::size_t a0 = b - rowBase;
    if (a0 == 0 && e - b >= rowLen) {
      // Whole rows of the same output group: one piece of several rows.
      const std::size_t k = std::min((e - b) / rowLen, cv.S - row % cv.S);
      out.push_back(normalised({b, outBase, cv.W, P, k}));
      b += k * rowLen;
      continue;
    }
    const std::size_t a1 = std::min(e - rowBase, rowLen);
    if (a0 % P != 0) {
      const std::size_t end = std::min(a1, (a0 / P + 1) * P);
      out.push_back({rowBase + a0, outBase + a0 / P, 1, end - a0, 1});
      a0 = end;
    }
    if (a1 - a0 >= P) {
      const std::size_t jb = a0 / P, je = a1 / P;
      out.push_back(normalised({rowBase + a0, outBase + jb, je - jb, P, 1}));
      a0 = je * P;
    }
    if (a0 < a1)
      out.push_back({rowBase + a0, outBase + a0 / P, 1, a1 - a0, 1});
    b = rowBase + a1;
  }
}

// Cuts the outputs of one connected group into `parts` ranges of about
// equal element count (the elements per output are piecewise constant).
std::vector<std::size_t> balancedCuts(const VertexWork &g, std::size_t parts) {
  std::map<std::size_t, long long> delta; // change of elements per output
  std::size_t total = 0;
  for (const Piece &p : g.pieces) {
    delta[p.out] += static_cast<long long>(p.rows * p.q);
    delta[p.outEnd()] -= static_cast<long long>(p.rows * p.q);
    total += p.size();
  }
  const std::size_t per = ceilDiv(total, parts);
  std::vector<std::size_t> cuts{g.outBegin};
  std::size_t acc = 0, pos = g.outBegin, d = 0;
  for (const auto &[key, change] : delta) {
    // Outputs [pos, key) each hold d elements.
    while (cuts.size() < parts && d > 0) {
      // The output boundary nearest to where the running total reaches the
      // next share (a repeated cut gives an empty range, skipped later).
      const std::size_t want = per * cuts.size();
      const std::size_t x = want > acc ? pos + (want - acc + d / 2) / d : pos;
      if (x > key || x >= g.outEnd)
        break;
      acc += (x - pos) * d;
      pos = x;
      cuts.push_back(x);
    }
    acc += (key - pos) * d;
    pos = key;
    d = static_cast<std::size_t>(static_cast<long long>(d) + change);
  }
  cuts.push_back(g.outEnd);
  return cuts;
}

// Splits a group's rows (and the elements of single-output pieces) into
// `parts` vertices of consecutive work; each covers the hull of its pieces.
std::vector<VertexWork> splitRows(const VertexWork &g, std::size_t parts) {
  std::size_t total = 0;
  for (const Piece &p : g.pieces)
    total += p.size();
  const std::size_t per = ceilDiv(total, parts);
  std::vector<VertexWork> out;
  VertexWork cur;
  std::size_t curElems = 0;
  auto flush = [&] {
    if (cur.pieces.empty())
      return;
    cur.tile = g.tile;
    cur.outBegin = cur.pieces.front().out;
    cur.outEnd = cur.pieces.front().outEnd();
    for (const Piece &p : cur.pieces) {
      cur.outBegin = std::min(cur.outBegin, p.out);
      cur.outEnd = std::max(cur.outEnd, p.outEnd());
    }
    out.push_back(std::move(cur));
    cur = VertexWork();
    curElems = 0;
  };
  for (const Piece &p : g.pieces) {
    if (p.cover == 1) {
      for (std::size_t pos = 0; pos < p.q;) {
        const std::size_t take = std::min(p.q - pos, per - curElems);
        cur.pieces.push_back({p.begin + pos, p.out, 1, take, 1});
        pos += take;
        curElems += take;
        if (curElems >= per)
          flush();
      }
      continue;
    }
    const std::size_t rowLen = p.cover * p.q;
    for (std::size_t r = 0; r < p.rows;) {
      const std::size_t take =
          std::min(p.rows - r,
                   std::max<std::size_t>(1, ceilDiv(per - curElems, rowLen)));
      cur.pieces.push_back({p.begin + r * rowLen, p.out, p.cover, p.q, take});
      r += take;
      curElems += take * rowLen;
      if (curElems >= per)
        flush();
    }
  }
  flush();
  return out;
}

// One connected group of a tile, split into at most maxParts vertices:
// first into ranges of outputs while that keeps row pieces long, then (for
// what is left of the parallelism) into rows or element ranges.
void splitGroup(const VertexWork &g, std::size_t target, std::size_t maxParts,
                std::vector<VertexWork> &out) {
  std::size_t total = 0, qMain = 0, biggest = 0;
  for (const Piece &p : g.pieces) {
    total += p.size();
    if (p.size() > biggest) {
      biggest = p.size();
      qMain = p.q;
    }
  }
  const std::size_t parts = std::min(maxParts, ceilDiv(total, target));
  const std::size_t n = g.outEnd - g.outBegin;
  if (parts <= 1) {
    out.push_back(g);
    return;
  }
  // Each vertex of an output split reads every row of the group's pieces.
  std::size_t rowPieces = 0;
  for (const Piece &p : g.pieces)
    rowPieces += p.rows;
  const std::size_t m = std::min(parts, n);
  if (m >= 2 && n / m * qMain >= kMinRowPiece &&
      rowPieces <= kMaxRowPiecesPerVertex) {
    const std::vector<std::size_t> cuts = balancedCuts(g, m);
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      if (cuts[i] == cuts[i + 1])
        continue;
      VertexWork w;
      w.tile = g.tile;
      w.outBegin = cuts[i];
      w.outEnd = cuts[i + 1];
      w.pieces = restrictPieces(g.pieces, w.outBegin, w.outEnd);
      if (!w.pieces.empty())
        splitGroup(w, target, std::max<std::size_t>(1, parts / m), out);
    }
    return;
  }
  for (VertexWork &w : splitRows(g, parts))
    out.push_back(std::move(w));
}

} // namespace

CanonicalView canonicalView(const Tensor &in,
                            const std::vector<bool> &reduced) {
  std::vector<std::pair<std::size_t, bool>> blocks;
  for (unsigned d = 0; d < in.rank(); ++d) {
    if (in.dim(d) == 1)
      continue;
    if (!blocks.empty() && blocks.back().second == reduced[d])
      blocks.back().first *= in.dim(d);
    else
      blocks.emplace_back(in.dim(d), reduced[d]);
  }
  CanonicalView cv;
  if (blocks.empty()) {
    cv.flat = in.flatten();
    return cv;
  }
  std::vector<std::size_t> shape;
  for (const auto &b : blocks)
    shape.push_back(b.first);
  const Tensor t = in.reshape(shape);
  const long m = static_cast<long>(blocks.size());
  long pIdx = -1, wIdx = -1;
  if (blocks.back().second) {
    pIdx = m - 1;
    wIdx = m >= 2 ? m - 2 : -1;
  } else {
    wIdx = m - 1;
  }
  const long outerEnd = wIdx >= 0 ? wIdx : pIdx;
  std::vector<unsigned> perm;
  for (long i = 0; i < outerEnd; ++i)
    if (!blocks[i].second) {
      perm.push_back(static_cast<unsigned>(i));
      cv.G *= blocks[i].first;
    }
  for (long i = 0; i < outerEnd; ++i)
    if (blocks[i].second) {
      perm.push_back(static_cast<unsigned>(i));
      cv.S *= blocks[i].first;
    }
  if (wIdx >= 0) {
    perm.push_back(static_cast<unsigned>(wIdx));
    cv.W = blocks[wIdx].first;
  }
  if (pIdx >= 0) {
    perm.push_back(static_cast<unsigned>(pIdx));
    cv.P = blocks[pIdx].first;
  }
  cv.flat = t.dimShuffle(perm).flatten();
  return cv;
}

std::vector<Piece> restrictPieces(const std::vector<Piece> &pieces,
                                  std::size_t begin, std::size_t end) {
  std::vector<Piece> out;
  for (const Piece &p : pieces) {
    const std::size_t lo = std::max(begin, p.out),
                      hi = std::min(end, p.outEnd());
    if (lo >= hi)
      continue;
    if (lo == p.out && hi == p.outEnd()) {
      out.push_back(p);
      continue;
    }
    // Cutting the outputs of a multi-row piece leaves one run per row.
    for (std::size_t r = 0; r < p.rows; ++r)
      out.push_back(
          normalised({p.begin + r * p.cover * p.q + (lo - p.out) * p.q, lo,
                      hi - lo, p.q, 1}));
  }
  return out;
}

std::vector<VertexWork> planStage1(const Graph &graph, const CanonicalView &cv,
                                   unsigned workers) {
  std::vector<VertexWork> result;
  if (cv.flat.numElements() == 0)
    return result;
  const TileMapping mapping = graph.getTileMapping(cv.flat);
  for (unsigned tile = 0; tile < mapping.size(); ++tile) {
    if (mapping[tile].empty())
      continue;
    std::vector<Piece> pieces;
    for (const Interval &iv : mapping[tile])
      piecesOf(iv.begin(), iv.end(), cv, pieces);
    // Connected groups of outputs; within a group pieces keep view order.
    std::vector<std::size_t> order(pieces.size());
    for (std::size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) {
      return pieces[a].out < pieces[b].out;
    });
    std::vector<VertexWork> groups;
    std::vector<std::vector<std::size_t>> members;
    for (std::size_t i : order) {
      const Piece &p = pieces[i];
      if (groups.empty() || p.out > groups.back().outEnd) {
        groups.push_back({tile, p.out, p.outEnd(), {}});
        members.emplace_back();
      }
      groups.back().outEnd = std::max(groups.back().outEnd, p.outEnd());
      members.back().push_back(i);
    }
    std::size_t total = 0;
    for (const Piece &p : pieces)
      total += p.size();
    const std::size_t target =
        std::max(kMinWorkerElements, ceilDiv(total, workers));
    for (std::size_t g = 0; g < groups.size(); ++g) {
      std::sort(members[g].begin(), members[g].end());
      for (std::size_t i : members[g])
        groups[g].pieces.push_back(pieces[i]);
      splitGroup(groups[g], target, workers, result);
    }
  }
  return result;
}

std::vector<Coverage> coverage(const std::vector<VertexWork> &work,
                               std::size_t numOutputs) {
  // Events: +1 at a vertex's first output, -1 after its last.
  std::vector<std::pair<std::size_t, long>> events;
  for (std::size_t v = 0; v < work.size(); ++v) {
    events.emplace_back(work[v].outBegin, static_cast<long>(v) + 1);
    events.emplace_back(work[v].outEnd, -(static_cast<long>(v) + 1));
  }
  std::sort(events.begin(), events.end());
  std::vector<Coverage> cov;
  std::map<unsigned, unsigned> tiles;
  std::size_t pos = 0, idSum = 0;
  unsigned count = 0;
  auto emit = [&](std::size_t end) {
    if (end <= pos)
      return;
    Coverage c{pos, end, count, -1, count == 1 ? idSum : 0};
    if (tiles.size() == 1)
      c.tile = tiles.begin()->first;
    if (!cov.empty() && cov.back().end == pos && cov.back().count == c.count &&
        cov.back().tile == c.tile && cov.back().vertex == c.vertex)
      cov.back().end = end;
    else
      cov.push_back(c);
    pos = end;
  };
  for (const auto &[at, e] : events) {
    emit(at);
    const std::size_t v = static_cast<std::size_t>(std::abs(e)) - 1;
    const unsigned tile = work[v].tile;
    if (e > 0) {
      ++count;
      idSum += v;
      ++tiles[tile];
    } else {
      --count;
      idSum -= v;
      if (--tiles[tile] == 0)
        tiles.erase(tile);
    }
  }
  emit(numOutputs);
  return cov;
}

TileMapping ownerMapping(const std::vector<Coverage> &cov,
                         std::size_t numOutputs, unsigned numTiles) {
  TileMapping m(numTiles);
  std::size_t spread = 0;
  for (const Coverage &c : cov)
    if (c.tile < 0)
      spread += c.end - c.begin;
  auto add = [&](unsigned tile, std::size_t b, std::size_t e) {
    auto &ivs = m[tile];
    if (!ivs.empty() && ivs.back().end() == b)
      ivs.back() = Interval(ivs.back().begin(), e);
    else
      ivs.emplace_back(b, e);
  };
  // The r-th spread output goes to tile r * numTiles / spread.
  std::size_t rank = 0;
  for (const Coverage &c : cov) {
    if (c.tile >= 0) {
      add(static_cast<unsigned>(c.tile), c.begin, c.end);
      continue;
    }
    for (std::size_t o = c.begin; o < c.end;) {
      const auto tile = static_cast<unsigned>(rank * numTiles / spread);
      const std::size_t nextRank = ceilDiv((tile + 1) * spread, numTiles);
      const std::size_t take = std::min(c.end - o, nextRank - rank);
      add(tile, o, o + take);
      o += take;
      rank += take;
    }
  }
  (void)numOutputs;
  return m;
}

std::vector<OwnedRange> ownedRanges(const TileMapping &mapping) {
  std::vector<OwnedRange> r;
  for (unsigned t = 0; t < mapping.size(); ++t)
    for (const Interval &iv : mapping[t])
      if (iv.size())
        r.push_back({iv.begin(), iv.end(), t});
  std::sort(r.begin(), r.end(),
            [](const auto &a, const auto &b) { return a.begin < b.begin; });
  return r;
}

SplitWork splitFinishing(const std::vector<VertexWork> &work,
                         const std::vector<Coverage> &cov,
                         const std::vector<OwnedRange> &owners) {
  // Finishing runs: outputs covered only by vertex v, owned by its tile.
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> fin(
      work.size());
  std::size_t oi = 0;
  for (const Coverage &c : cov) {
    if (c.count != 1)
      continue;
    const unsigned tile = work[c.vertex].tile;
    while (oi < owners.size() && owners[oi].end <= c.begin)
      ++oi;
    for (std::size_t k = oi; k < owners.size() && owners[k].begin < c.end;
         ++k) {
      if (owners[k].tile != tile)
        continue;
      const std::size_t lo = std::max(c.begin, owners[k].begin),
                        hi = std::min(c.end, owners[k].end);
      auto &runs = fin[c.vertex];
      if (!runs.empty() && runs.back().second == lo)
        runs.back().second = hi;
      else
        runs.emplace_back(lo, hi);
    }
  }
  SplitWork split;
  for (std::size_t v = 0; v < work.size(); ++v) {
    const VertexWork &w = work[v];
    auto addPart = [&](std::vector<VertexWork> &to, std::size_t b,
                       std::size_t e) {
      if (b >= e)
        return;
      if (b == w.outBegin && e == w.outEnd) {
        to.push_back(w);
        return;
      }
      to.push_back({w.tile, b, e, restrictPieces(w.pieces, b, e)});
    };
    std::size_t pos = w.outBegin;
    for (const auto &[b, e] : fin[v]) {
      addPart(split.partial, pos, b);
      addPart(split.finishing, b, e);
      pos = e;
    }
    addPart(split.partial, pos, w.outEnd);
  }
  return split;
}

namespace {

// The outputs no finishing vertex writes, as owned runs in output order.
std::vector<OwnedRange> unfinished(const SplitWork &split,
                                   const std::vector<OwnedRange> &owners) {
  std::vector<std::pair<std::size_t, std::size_t>> done;
  for (const VertexWork &f : split.finishing)
    done.emplace_back(f.outBegin, f.outEnd);
  std::sort(done.begin(), done.end());
  std::vector<OwnedRange> pending;
  std::size_t di = 0;
  for (const OwnedRange &r : owners) {
    std::size_t pos = r.begin;
    while (di < done.size() && done[di].second <= pos)
      ++di;
    for (std::size_t k = di; k < done.size() && done[k].first < r.end; ++k) {
      if (done[k].first > pos)
        pending.push_back({pos, done[k].first, r.tile});
      pos = std::max(pos, done[k].second);
    }
    if (pos < r.end)
      pending.push_back({pos, r.end, r.tile});
  }
  return pending;
}

// The partials as runs of constant membership: bounds[i] to bounds[i + 1]
// is covered by the partials lists[i], in partial order.
struct PartialSegments {
  std::vector<std::size_t> bounds;
  std::vector<std::vector<std::size_t>> lists;

  explicit PartialSegments(const std::vector<OwnedRange> &partial) {
    for (const OwnedRange &w : partial) {
      bounds.push_back(w.begin);
      bounds.push_back(w.end);
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    lists.resize(bounds.empty() ? 0 : bounds.size() - 1);
    for (std::size_t v = 0; v < partial.size(); ++v) {
      auto i =
          std::lower_bound(bounds.begin(), bounds.end(), partial[v].begin) -
          bounds.begin();
      for (; bounds[i] < partial[v].end; ++i)
        lists[i].push_back(v);
    }
  }

  // Calls f(begin, end, segment or -1) for the runs of [a, b).
  template <typename F> void spans(std::size_t a, std::size_t b, F &&f) const {
    for (std::size_t pos = a; pos < b;) {
      const auto it = std::upper_bound(bounds.begin(), bounds.end(), pos);
      const std::size_t next = it == bounds.end() ? b : std::min(b, *it);
      const long seg = it == bounds.begin() || it == bounds.end()
                           ? -1
                           : static_cast<long>(it - bounds.begin()) - 1;
      f(pos, next, seg);
      pos = next;
    }
  }
  std::size_t fanIn(long seg) const { return seg < 0 ? 0 : lists[seg].size(); }
};

// Below this weight (outputs times partials read) a stage-2 vertex is not
// split between workers.
constexpr std::size_t kMinStage2Weight = 64;
// Nor into vertices of fewer outputs than this: every vertex reads a slice
// of each partial it overlaps, and short slices cost more in per-partial
// overhead (and exchanged pieces) than the split saves.
constexpr std::size_t kMinGatherOutputs = 8;

// Vertices producing the outputs `pending` (runs on their tiles) from the
// partials `sources`: at most about `workers` a tile, each reading the
// partials that overlap its outputs.
std::vector<Stage2Vertex> planGather(const std::vector<OwnedRange> &sources,
                                     const std::vector<OwnedRange> &pending,
                                     unsigned workers) {
  const PartialSegments segs(sources);
  // Work per output: one per partial read, plus the store.
  std::map<unsigned, std::size_t> tileWeight, tileOutputs;
  for (const OwnedRange &r : pending) {
    tileOutputs[r.tile] += r.end - r.begin;
    segs.spans(r.begin, r.end, [&](std::size_t b, std::size_t e, long seg) {
      tileWeight[r.tile] += (e - b) * (segs.fanIn(seg) + 1);
    });
  }
  std::vector<Stage2Vertex> result;
  auto emit = [&](unsigned tile, std::size_t b, std::size_t e) {
    if (b >= e)
      return;
    Stage2Vertex v{tile, b, e, {}};
    segs.spans(b, e, [&](std::size_t, std::size_t, long seg) {
      if (seg >= 0)
        v.sources.insert(v.sources.end(), segs.lists[seg].begin(),
                         segs.lists[seg].end());
    });
    std::sort(v.sources.begin(), v.sources.end());
    v.sources.erase(std::unique(v.sources.begin(), v.sources.end()),
                    v.sources.end());
    result.push_back(std::move(v));
  };
  for (const OwnedRange &r : pending) {
    const std::size_t parts = std::clamp<std::size_t>(
        tileOutputs[r.tile] / kMinGatherOutputs, 1, workers);
    const std::size_t per =
        std::max(kMinStage2Weight, ceilDiv(tileWeight[r.tile], parts));
    std::size_t start = r.begin, acc = 0;
    segs.spans(r.begin, r.end, [&](std::size_t b, std::size_t e, long seg) {
      const std::size_t w = segs.fanIn(seg) + 1;
      for (std::size_t pos = b; pos < e;) {
        const std::size_t fit = acc >= per ? 0 : ceilDiv(per - acc, w);
        if (pos + fit >= e) {
          acc += (e - pos) * w;
          break;
        }
        pos += fit;
        emit(r.tile, start, pos);
        start = pos;
        acc = 0;
      }
    });
    emit(r.tile, start, r.end);
  }
  return result;
}

// The largest number of partials any output has.
std::size_t maxFanIn(const std::vector<OwnedRange> &sources) {
  std::vector<std::pair<std::size_t, int>> events;
  for (const OwnedRange &r : sources) {
    events.emplace_back(r.begin, 1);
    events.emplace_back(r.end, -1);
  }
  std::sort(events.begin(), events.end());
  std::size_t best = 0;
  long cur = 0;
  for (const auto &[at, d] : events) {
    cur += d;
    best = std::max(best, static_cast<std::size_t>(std::max(0L, cur)));
  }
  return best;
}

// Outputs [begin, end) in sorted, merged runs.
std::vector<std::pair<std::size_t, std::size_t>>
unionOf(std::vector<std::pair<std::size_t, std::size_t>> runs) {
  std::sort(runs.begin(), runs.end());
  std::vector<std::pair<std::size_t, std::size_t>> merged;
  for (const auto &r : runs) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  return merged;
}

} // namespace

std::vector<OwnedRange> sourcesOf(const std::vector<VertexWork> &partial) {
  std::vector<OwnedRange> sources;
  for (const VertexWork &w : partial)
    sources.push_back({w.outBegin, w.outEnd, w.tile});
  return sources;
}

std::vector<Stage2Vertex> planStage2(const std::vector<OwnedRange> &sources,
                                     const SplitWork &split,
                                     const std::vector<OwnedRange> &owners,
                                     unsigned workers) {
  return planGather(sources, unfinished(split, owners), workers);
}

std::vector<Stage2Vertex>
planIntermediate(const std::vector<OwnedRange> &sources, unsigned workers,
                 std::size_t maxFan) {
  const std::size_t fan = maxFanIn(sources);
  if (fan <= maxFan)
    return {};
  // Groups of about sqrt(fan) consecutive tiles.
  std::vector<unsigned> tiles;
  for (const OwnedRange &r : sources)
    tiles.push_back(r.tile);
  std::sort(tiles.begin(), tiles.end());
  tiles.erase(std::unique(tiles.begin(), tiles.end()), tiles.end());
  // About sqrt(fan) partials of an output per group; a tile may hold
  // several partials of one output (its workers').
  const double perTile = static_cast<double>(fan) / tiles.size();
  const auto groupTiles = static_cast<std::size_t>(
      std::max(1.0, std::ceil(std::sqrt(static_cast<double>(fan)) / perTile)));
  std::vector<Stage2Vertex> result;
  for (std::size_t g0 = 0; g0 < tiles.size(); g0 += groupTiles) {
    const std::size_t g1 = std::min(tiles.size(), g0 + groupTiles);
    std::vector<std::size_t> members;
    std::vector<OwnedRange> local;
    std::vector<std::pair<std::size_t, std::size_t>> covered;
    for (std::size_t i = 0; i < sources.size(); ++i)
      if (sources[i].tile >= tiles[g0] && sources[i].tile <= tiles[g1 - 1]) {
        members.push_back(i);
        local.push_back(sources[i]);
        covered.emplace_back(sources[i].begin, sources[i].end);
      }
    // The group's outputs spread evenly over the group's tiles.
    const auto runs = unionOf(covered);
    std::size_t total = 0;
    for (const auto &r : runs)
      total += r.second - r.first;
    const std::size_t n = g1 - g0;
    std::vector<OwnedRange> pending;
    std::size_t rank = 0;
    for (const auto &[b, e] : runs)
      for (std::size_t o = b; o < e;) {
        const std::size_t k = rank * n / total;
        const std::size_t take =
            std::min(e - o, ceilDiv((k + 1) * total, n) - rank);
        pending.push_back({o, o + take, tiles[g0 + k]});
        o += take;
        rank += take;
      }
    for (Stage2Vertex &v : planGather(local, pending, workers)) {
      for (std::size_t &s : v.sources)
        s = members[s];
      result.push_back(std::move(v));
    }
  }
  return result;
}

} // namespace tessera::ops::reduceplan
