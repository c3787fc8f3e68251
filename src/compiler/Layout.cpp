// Liveness of every variable over the flat steps, then a per-tile layout that
// lets values whose lifetimes do not overlap share bytes, then the
// out-of-memory check.
#include "CompilerState.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/Logging.hpp"
#include "tessera/support/ThreadPool.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::compiler {
namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

struct Live {
  std::int64_t first = -1, def = -1, last = -1;
  std::size_t written = 0;
  int program = -2;
  bool always = false;
};

// Calls fn(var, read, write, elements) for every tensor a draft touches.
template <typename F>
void forEachTouch(const State &s, const Draft &d, F &&fn) {
  auto tensor = [&](const Tensor &t, bool read, bool write) {
    for (const Run &r : t.runs())
      fn(r.var, read, write, static_cast<std::size_t>(r.count));
  };
  switch (d.step.kind) {
  case StepKind::Compute: {
    for (const Touch &t : s.csPlans[d.computeSet].touches)
      fn(t.var, t.read, t.write, static_cast<std::size_t>(t.elements));
    // A host kernel run in the compute set's place reads its operands where
    // they lie, at this step: they must not share bytes with what the step
    // writes (the vertices above read gathered copies, whose sources are
    // otherwise last read by the exchange before). The graph's kernel, not
    // the plan's choice, so the layout and the memory it reports are the
    // same whether engine.hostKernels runs the kernel or not.
    if (const auto k = s.data.computeSets[d.computeSet].hostKernel)
      for (unsigned v : s.data.computeSets[*k].vertices) {
        const VertexData &vd = s.data.vertices[v];
        const auto &fields = vd.vertexClass->info.fields;
        for (unsigned f = 0; f < fields.size(); ++f)
          if (fields[f].direction == codelet::Direction::Input ||
              fields[f].direction == codelet::Direction::InOut)
            for (const Tensor &t : vd.fields[f].tensors)
              tensor(t, true, false);
      }
    return;
  }
  case StepKind::Exchange:
    for (const auto &[src, dst] : d.copies) {
      tensor(src, true, false);
      tensor(dst, false, true);
    }
    if (d.touches)
      for (const Touch &t : *d.touches)
        fn(t.var, t.read, t.write, static_cast<std::size_t>(t.elements));
    return;
  case StepKind::CrossReplica:
    // Replicas outside the map keep their values: never a definition.
    for (const auto &[src, dst] : d.copies) {
      tensor(src, true, false);
      for (const Run &r : dst.runs())
        fn(r.var, false, true, 0);
    }
    return;
  case StepKind::StreamIn:
    tensor(d.tensors[0], false, true);
    return;
  case StepKind::RemoteIn:
    tensor(d.tensors[0], false, true);
    for (std::size_t i = 1; i < d.tensors.size(); ++i)
      tensor(d.tensors[i], true, false);
    return;
  case StepKind::Jump:
    if (d.step.c == 1) // WriteUndef: the contents start afresh
      for (const Run &r : d.tensors[0].runs())
        fn(r.var, false, true, s.numElements(r.var));
    return;
  default:
    for (const Tensor &t : d.tensors)
      tensor(t, true, false);
    return;
  }
}

std::vector<Live> computeLiveness(const State &s) {
  std::vector<Live> live(s.numVars());
  for (std::size_t i = 0; i < s.drafts.size(); ++i) {
    const Draft &d = s.drafts[i];
    forEachTouch(
        s, d, [&](std::uint32_t var, bool read, bool write, std::size_t elems) {
          Live &l = live[var];
          if (d.program == -1 || (l.program != -2 && l.program != d.program))
            l.always = true;
          l.program = d.program;
          if (read && l.def < 0)
            l.always = true;
          if (write && l.def < 0 && !d.conditional) {
            l.written += elems;
            if (l.written + s.gapElements(var) >= s.numElements(var))
              l.def = static_cast<std::int64_t>(i);
          }
          if (l.first < 0)
            l.first = static_cast<std::int64_t>(i);
          l.last = static_cast<std::int64_t>(i);
        });
  }
  for (const auto &h : s.data.hostAccesses)
    for (const Run &r : h.tensor.runs())
      live[r.var].always = true;
  for (std::uint32_t v = 0; v < s.numVars(); ++v) {
    Live &l = live[v];
    const VariableData *var = s.graphVar(v);
    if (l.def < 0 || (var && (var->isConstant || !var->initialValue.empty())))
      l.always = true;
  }
  // A value first written before a loop and used inside it must survive
  // every iteration; repeat until nested loops agree.
  for (bool changed = true; changed;) {
    changed = false;
    for (const LoopRange &loop : s.loops)
      for (Live &l : live)
        if (!l.always && l.first < loop.begin && l.last >= loop.begin &&
            l.last < loop.end) {
          l.last = loop.end;
          changed = true;
        }
  }
  return live;
}

struct Block {
  std::uint32_t var = 0;
  std::size_t interval = 0;
  std::uint64_t bytes = 0, offset = 0;
  std::int64_t begin = 0, end = 0; // live step range; always: whole run
  bool always = false;
};

// The bytes in use on one tile over time: the placed blocks, sorted by
// offset, in chunks of at most kChunk that each know the highest byte and
// the span of steps of their blocks. First fit walks them upwards and stops
// at the first gap wide enough among those live at the same time; a chunk
// whose blocks all end below the candidate offset, or none of which is live
// with the block placed, cannot move it and is passed over whole. A
// ResNet-50 tile places thousands of blocks, and looking at each of them
// was 10 % of its compile at 32x32 (6 % with the chunks).
class Occupancy {
public:
  // The lowest offset from \p floor where \p bytes fit free in every step
  // of [begin, end]. (Any order of the blocks that are live at the same
  // time and start below the result gives that same offset.)
  std::uint64_t firstFit(std::int64_t begin, std::int64_t end,
                         std::uint64_t floor, std::uint64_t bytes) const {
    std::uint64_t off = floor;
    for (const Chunk &c : chunks_) {
      // This chunk and all after it start at or above off + bytes.
      if (off + bytes <= c.placed.front().lo)
        break;
      if (c.hi <= off || end < c.begin || c.end < begin)
        continue;
      for (const Placed &p : c.placed) {
        if (off + bytes <= p.lo)
          return off;
        if (p.begin <= end && begin <= p.end)
          off = std::max(off, p.hi);
      }
    }
    return off;
  }

  // Marks [lo, hi) used in every step of [begin, end]; it must be free.
  void occupy(std::int64_t begin, std::int64_t end, std::uint64_t lo,
              std::uint64_t hi) {
    if (lo == hi)
      return;
    // The last chunk starting at or below lo (or the first).
    auto c = std::upper_bound(chunks_.begin(), chunks_.end(), lo,
                              [](std::uint64_t x, const Chunk &k) {
                                return x < k.placed.front().lo;
                              });
    if (c != chunks_.begin())
      --c;
    if (c == chunks_.end())
      c = chunks_.insert(c, Chunk{});
    const auto at = std::upper_bound(
        c->placed.begin(), c->placed.end(), lo,
        [](std::uint64_t x, const Placed &p) { return x < p.lo; });
    c->placed.insert(at, Placed{begin, end, lo, hi});
    c->add(Placed{begin, end, lo, hi});
    if (c->placed.size() >= 2 * kChunk)
      split(c);
  }

private:
  static constexpr std::size_t kChunk = 32;
  struct Placed {
    std::int64_t begin, end; ///< live steps
    std::uint64_t lo, hi;    ///< bytes [lo, hi)
  };
  struct Chunk {
    std::vector<Placed> placed; ///< sorted by lo
    std::uint64_t hi = 0;       ///< the highest byte end of placed
    std::int64_t begin = INT64_MAX, end = INT64_MIN; ///< their steps' span
    void add(const Placed &p) {
      hi = std::max(hi, p.hi);
      begin = std::min(begin, p.begin);
      end = std::max(end, p.end);
    }
  };
  // Splits a full chunk in two halves, each with its own summary.
  void split(std::vector<Chunk>::iterator c) {
    Chunk upper;
    upper.placed.assign(c->placed.begin() + kChunk, c->placed.end());
    c->placed.resize(kChunk);
    Chunk lower;
    lower.placed = std::move(c->placed);
    for (const Placed &p : lower.placed)
      lower.add(p);
    for (const Placed &p : upper.placed)
      upper.add(p);
    *c = std::move(lower);
    chunks_.insert(c + 1, std::move(upper));
  }
  std::vector<Chunk> chunks_;
};

// First fit: the lowest offset that collides with no placed block whose
// lifetime overlaps.
std::uint64_t placeTile(std::vector<Block> &blocks) {
  std::sort(blocks.begin(), blocks.end(), [](const Block &a, const Block &b) {
    if (a.always != b.always)
      return a.always;
    return a.bytes > b.bytes;
  });
  Occupancy used;
  std::uint64_t top = 0, alwaysTop = 0;
  for (Block &b : blocks) {
    if (b.always) {
      b.offset = alwaysTop;
      alwaysTop += b.bytes;
      top = alwaysTop;
      continue;
    }
    b.offset = used.firstFit(b.begin, b.end, alwaysTop, b.bytes);
    used.occupy(b.begin, b.end, b.offset, b.offset + b.bytes);
    top = std::max(top, b.offset + b.bytes);
  }
  return top;
}

// placeTile of every tile: each tile's layout is its own, so the upper
// half of the tiles is placed on a second thread (a tenth of a ResNet-50
// compile on one); the result is the same as one tile after the other.
std::vector<std::uint64_t> placeTiles(std::vector<std::vector<Block>> &tiles) {
  std::vector<std::uint64_t> arenas(tiles.size());
  forEachOnTwoThreads(tiles.size(), 2,
                      [&](std::size_t t) { arenas[t] = placeTile(tiles[t]); });
  return arenas;
}

std::uint64_t vertexStateBytes(const State &s, unsigned v) {
  const VertexData &vd = s.data.vertices[v];
  const auto &fields = vd.vertexClass->info.fields;
  std::uint64_t bytes = 4; // the vertex's entry in its compute set's list
  for (unsigned f = 0; f < fields.size(); ++f) {
    const FieldBinding &b = vd.fields[f];
    switch (fields[f].shape) {
    case codelet::Shape::Scalar:
      bytes +=
          fields[f].direction == codelet::Direction::State ? b.state.size() : 4;
      break;
    case codelet::Shape::Vector:
      // A shared table's bytes are its tile's (SharedTables), once.
      bytes +=
          fields[f].direction == codelet::Direction::State && !fields[f].shared
              ? 8 + b.state.size()
              : 8;
      break;
    default:
      bytes += 8 + 8 * b.tensors.size();
    }
  }
  return alignUp(bytes);
}

// The distinct values of the shared fields (FieldInfo::shared) on each
// tile. On the IPU such a table (a map's program) is read-only data that
// every vertex holding the same value points at, as a codelet's code is
// stored once per tile however many vertices run it: counting it per
// vertex made a tile with hundreds of maps of one program (an optimizer's
// update of each weight) hold hundreds of copies.
class SharedTables {
public:
  explicit SharedTables(unsigned numTiles) : onTile_(numTiles) {}

  // Notes field \p field's \p value on \p tile.
  void add(unsigned tile, unsigned field, const FieldState &value) {
    const std::string_view bytes(reinterpret_cast<const char *>(value.data()),
                                 value.size());
    // The vertices of a compute set come one after another and hold one
    // value: compare with the field's last value before hashing.
    if (field >= last_.size())
      last_.resize(field + 1);
    auto &[lastBytes, lastId] = last_[field];
    if (!lastId || bytes != lastBytes) {
      const auto [it, added] =
          ids_.try_emplace(bytes, static_cast<std::uint32_t>(bytes_.size()));
      if (added)
        bytes_.push_back(alignUp(bytes.size()));
      lastBytes = bytes;
      lastId = it->second;
    }
    onTile_[tile].push_back(*lastId);
  }

  // The bytes of the distinct values on \p tile.
  std::uint64_t bytesOn(unsigned tile) {
    std::vector<std::uint32_t> &ids = onTile_[tile];
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::uint64_t sum = 0;
    for (const std::uint32_t id : ids)
      sum += bytes_[id];
    return sum;
  }

private:
  // Each distinct value's id (views of the graph's states) and bytes.
  std::unordered_map<std::string_view, std::uint32_t> ids_;
  std::vector<std::uint64_t> bytes_;
  std::vector<std::pair<std::string_view, std::optional<std::uint32_t>>> last_;
  std::vector<std::vector<std::uint32_t>> onTile_; // ids, repeated
};

[[noreturn]] void reportOutOfMemory(const State &s, unsigned tile,
                                    const TileMemory &m, unsigned numOver,
                                    const std::vector<Block> &blocks) {
  std::vector<std::pair<std::uint64_t, std::string>> big;
  for (const Block &b : blocks)
    big.emplace_back(b.bytes, s.name(b.var));
  std::sort(big.rbegin(), big.rend());
  std::string list;
  for (std::size_t i = 0; i < big.size() && i < 5; ++i)
    list += (i ? ", " : "") + std::string("\"") + big[i].second + "\" " +
            str(big[i].first) + " B";
  const unsigned perIpu = s.target.getTilesPerIPU();
  throw MemoryError(
      "out of memory on tile " + str(tile) + " (IPU " + str(tile / perIpu) +
      "): it needs " + str(m.total()) + " bytes but a tile has " +
      str(s.target.getBytesPerTile()) + " (variables always live " +
      str(m.alwaysLive) + ", constants " + str(m.constants) +
      ", not always live " + str(m.notAlwaysLive) + ", vertex state " +
      str(m.vertexState) + ", code " + str(m.code) +
      "). Largest variables on the tile: " + (list.empty() ? "none" : list) +
      "." +
      (numOver > 1 ? " " + str(numOver - 1) + " other tiles are over too."
                   : "") +
      " Spread large tensors over more tiles (mapTensorLinearly), or set the "
      "engine option debug.allowOutOfMemory to \"true\" to compile anyway "
      "and read the memory report.");
}

} // namespace

void layoutMemory(State &s) {
  const std::vector<Live> live = computeLiveness(s);
  const unsigned numTiles = s.target.getNumTiles();
  const auto lastStep = static_cast<std::int64_t>(s.drafts.size());
  std::vector<std::vector<Block>> tiles(numTiles);
  s.exe.variables.resize(s.numVars());
  // Names are kept once. The temporaries' few dozen are looked up once
  // each, by their index in State::temporaryNames.
  std::unordered_map<std::string_view, std::uint32_t> nameIndex;
  const auto intern = [&](const std::string &name) {
    const auto [it, added] = nameIndex.try_emplace(
        name, static_cast<std::uint32_t>(s.exe.variableNames.size()));
    if (added)
      s.exe.variableNames.push_back(name);
    return it->second;
  };
  constexpr std::uint32_t kUnseen = 0xffffffffu;
  std::vector<std::uint32_t> temporaryName(s.temporaryNames.size(), kUnseen);
  const auto nameOf = [&](std::uint32_t v) {
    if (s.graphVar(v))
      return intern(s.name(v));
    std::uint32_t &name = temporaryName[s.temporaries[v - s.numGraphVars].name];
    if (name == kUnseen)
      name = intern(s.name(v));
    return name;
  };
  s.firstInterval.assign(s.numVars() + 1, 0);
  for (std::uint32_t v = 0; v < s.numVars(); ++v)
    s.firstInterval[v + 1] = s.firstInterval[v] + s.mapping(v).size();
  s.intervalAddr.assign(s.firstInterval.back(), 0);
  for (std::uint32_t v = 0; v < s.numVars(); ++v) {
    const std::span<const TileInterval> mapping = s.mapping(v);
    const Type type = s.type(v);
    const Live &l = live[v];
    VariableInfo &info = s.exe.variables[v];
    info.name = nameOf(v);
    info.type = type;
    info.shapeBegin = s.exe.variableShapes.size();
    if (const VariableData *var = s.graphVar(v))
      s.exe.variableShapes.insert(s.exe.variableShapes.end(),
                                  var->shape.begin(), var->shape.end());
    else
      s.exe.variableShapes.push_back(s.numElements(v));
    info.rank = static_cast<std::uint32_t>(s.exe.variableShapes.size() -
                                           info.shapeBegin);
    info.bytes = s.numElements(v) * typeSize(type);
    info.alwaysLive = l.always;
    // A value is live from its first write, not from the step that
    // completes it: the pieces of a variable that several steps write
    // (outputs finished by different compute sets) must survive until the
    // last piece arrives.
    info.liveBegin = static_cast<std::uint32_t>(l.always ? 0 : l.first);
    info.liveEnd = static_cast<std::uint32_t>(l.always ? lastStep : l.last);
    std::vector<unsigned> used;
    for (std::size_t i = 0; i < mapping.size(); ++i) {
      const TileInterval &iv = mapping[i];
      Block b;
      b.var = v;
      b.interval = i;
      b.bytes = alignUp((iv.end - iv.begin) * typeSize(type));
      b.always = l.always;
      b.begin = l.always ? 0 : l.first;
      b.end = l.always ? lastStep : l.last;
      tiles[iv.tile].push_back(b);
      used.push_back(iv.tile);
    }
    std::sort(used.begin(), used.end());
    info.tiles = static_cast<std::uint32_t>(
        std::unique(used.begin(), used.end()) - used.begin());
  }

  s.exe.tileMemory.assign(numTiles, TileMemory{});
  std::vector<std::vector<const RegisteredVertex *>> classesOnTile(numTiles);
  SharedTables tables(numTiles);
  for (unsigned v = 0; v < s.data.vertices.size(); ++v) {
    const VertexData &vd = s.data.vertices[v];
    if (!vd.tile || s.data.computeSets[vd.computeSet].isHostKernel)
      continue;
    TileMemory &m = s.exe.tileMemory[*vd.tile];
    m.vertexState += vertexStateBytes(s, v);
    classesOnTile[*vd.tile].push_back(vd.vertexClass);
    const auto &fields = vd.vertexClass->info.fields;
    for (unsigned f = 0; f < fields.size(); ++f)
      if (fields[f].shared)
        tables.add(*vd.tile, f, vd.fields[f].state);
  }

  const std::vector<std::uint64_t> arenas = placeTiles(tiles);
  s.exe.tileBase.assign(numTiles + 1, 0);
  unsigned numOver = 0, worst = 0;
  std::uint64_t worstOver = 0;
  for (unsigned t = 0; t < numTiles; ++t) {
    TileMemory &m = s.exe.tileMemory[t];
    auto &cls = classesOnTile[t];
    std::sort(cls.begin(), cls.end());
    const auto distinct = std::unique(cls.begin(), cls.end()) - cls.begin();
    m.code =
        distinct * s.target.costs().codeBytesPerVertexClass + tables.bytesOn(t);
    const std::uint64_t arena = arenas[t];
    for (const Block &b : tiles[t]) {
      s.addrOf(b.var, b.interval) = b.offset; // tile-relative for now
      const VariableData *var = s.graphVar(b.var);
      if (b.always && var && var->isConstant)
        m.constants += b.bytes;
      else if (b.always)
        m.alwaysLive += b.bytes;
    }
    m.notAlwaysLive = arena - m.alwaysLive - m.constants;
    s.exe.tileBase[t + 1] = s.exe.tileBase[t] + alignUp(arena);
    if (m.total() > s.target.getBytesPerTile()) {
      ++numOver;
      if (m.total() - s.target.getBytesPerTile() > worstOver) {
        worstOver = m.total() - s.target.getBytesPerTile();
        worst = t;
      }
    }
  }
  if (numOver > 0) {
    if (!s.options.allowOutOfMemory)
      reportOutOfMemory(s, worst, s.exe.tileMemory[worst], numOver,
                        tiles[worst]);
    logging::warn("{} tiles are out of memory (worst: tile {}, {} bytes "
                  "over); compiling anyway because debug.allowOutOfMemory "
                  "is set",
                  numOver, worst, worstOver);
  }
  for (std::uint32_t v = 0; v < s.numVars(); ++v) {
    const std::span<const TileInterval> mapping = s.mapping(v);
    for (std::size_t i = 0; i < mapping.size(); ++i)
      s.addrOf(v, i) += s.exe.tileBase[mapping[i].tile];
  }
}

} // namespace tessera::compiler
