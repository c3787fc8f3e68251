// Turns draft steps into steps whose operands are byte addresses: copy ops
// for exchanges and host transfers, resolved vertex fields, initial values.
#include "CompilerState.hpp"
#include "CostModel.hpp"

#include "tessera/support/Error.hpp"

#include <algorithm>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <span>
#include <system_error>

#include <sys/mman.h>

namespace tessera::compiler {
namespace {

constexpr std::uint32_t kHost = std::numeric_limits<std::uint32_t>::max();
constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max();

// Where a run of elements starts and how many of them (along the stride) stay
// inside one mapping interval.
struct Span {
  std::uint64_t addr = 0;
  std::int64_t cap = 0;
  unsigned tile = 0;
  bool host = false;
};

// Memory taken straight from the OS and given back when freed: malloc
// would keep chunks of a few MB in its heap after they are freed (its mmap
// threshold grows with the blocks it frees), and CopyOpChunks frees its
// chunks while the executable's table fills so that both are not held.
template <typename T> struct PageAllocator {
  using value_type = T;
  PageAllocator() = default;
  template <typename U> PageAllocator(const PageAllocator<U> &) {}
  T *allocate(std::size_t n) {
    void *p = ::mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw std::bad_alloc();
    return static_cast<T *>(p);
  }
  void deallocate(T *p, std::size_t n) { ::munmap(p, n * sizeof(T)); }
  template <typename U> bool operator==(const PageAllocator<U> &) const {
    return true;
  }
};

// Copy ops as they are made, in chunks of their own. Grown by doubling,
// one table would hold its old and new copies at once each time it moves
// (ResNet-50 at 224x224 makes 13 M ops, 0.5 GB); the chunks move into the
// executable's table, sized exactly, one at a time.
class CopyOpChunks {
public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  CopyOp &back() { return chunks_.back().back(); }
  void push_back(const CopyOp &op) {
    if (chunks_.empty() || chunks_.back().size() == kChunk) {
      chunks_.emplace_back();
      chunks_.back().reserve(kChunk);
    }
    chunks_.back().push_back(op);
    ++size_;
  }
  /// Appends the ops to \p out and empties this.
  void moveInto(std::vector<CopyOp> &out) {
    out.reserve(out.size() + size_);
    for (Chunk &c : chunks_) {
      out.insert(out.end(), c.begin(), c.end());
      Chunk().swap(c);
    }
    chunks_.clear();
    size_ = 0;
  }

private:
  static constexpr std::size_t kChunk = std::size_t(1) << 16;
  using Chunk = std::vector<CopyOp, PageAllocator<CopyOp>>;
  std::vector<Chunk> chunks_;
  std::size_t size_ = 0;
};

class OpBuilder {
public:
  OpBuilder(State &s, Traffic &traffic)
      : s_(s), traffic_(traffic), multiIpu_(s.target.getNumIPUs() > 1) {}

  // Copies src to dst element by element; either may be the host (a run with
  // var kHost whose start is the element position in the host buffer).
  void copy(std::span<const Run> src, std::span<const Run> dst,
            std::uint32_t elemBytes) {
    size_ = elemBytes;
    std::size_t i = 0, j = 0;
    std::int64_t ki = 0, kj = 0;
    while (i < src.size() && j < dst.size()) {
      const Run &a = src[i], &b = dst[j];
      const std::int64_t n = std::min(a.count - ki, b.count - kj);
      piece(a.var, a.start + ki * a.stride, a.stride, b.var,
            b.start + kj * b.stride, b.stride, n);
      ki += n;
      kj += n;
      if (ki == a.count) {
        ++i;
        ki = 0;
      }
      if (kj == b.count) {
        ++j;
        kj = 0;
      }
    }
  }

  // Costs copying src to a temporary on \p tile, making no ops: a
  // temporary is one interval, so only the source's intervals cut the
  // pieces, as copy() would cut them.
  void cost(std::span<const Run> src, unsigned tile, std::uint32_t elemBytes) {
    size_ = elemBytes;
    Span b;
    b.tile = tile;
    for (const Run &r : src)
      for (std::int64_t e = r.start, n = r.count; n > 0;) {
        const Span a = span(r.var, e, r.stride, srcLocator_);
        const std::int64_t k = std::min(n, a.cap);
        contiguousSource_ = k == 1 || r.stride == 1;
        repeatedSource_ = k > 1 && r.stride == 0;
        account(a, b, static_cast<std::uint64_t>(k) * size_);
        e += k * r.stride;
        n -= k;
      }
  }

private:
  Span span(std::uint32_t var, std::int64_t e, std::int64_t stride,
            Locator &locator) const {
    if (var == kHost)
      return {static_cast<std::uint64_t>(e) * size_, kUnbounded, 0, true};
    const std::span<const TileInterval> m = s_.mapping(var);
    auto [tile, idx] = locator(var, m, static_cast<std::size_t>(e));
    const TileInterval &iv = m[idx];
    Span sp;
    sp.addr = s_.addrOf(var, idx) + (e - iv.begin) * size_;
    sp.tile = tile;
    // Elements left in the interval past e, along the stride: divided
    // only when the stride takes more than one step inside it (a
    // transposed read crosses an interval at every element).
    const std::int64_t left = stride >= 0
                                  ? static_cast<std::int64_t>(iv.end) - 1 - e
                                  : e - static_cast<std::int64_t>(iv.begin);
    const std::int64_t step = stride >= 0 ? stride : -stride;
    if (step == 0)
      sp.cap = kUnbounded;
    else if (step == 1)
      sp.cap = left + 1;
    else
      sp.cap = left < step ? 1 : left / step + 1;
    return sp;
  }

  void piece(std::uint32_t sv, std::int64_t se, std::int64_t ss,
             std::uint32_t dv, std::int64_t de, std::int64_t ds,
             std::int64_t n) {
    while (n > 0) {
      const Span a = span(sv, se, ss, srcLocator_),
                 b = span(dv, de, ds, dstLocator_);
      const std::int64_t k = std::min({n, a.cap, b.cap});
      emit(a, b, ss, ds, k);
      se += k * ss;
      de += k * ds;
      n -= k;
    }
  }

  void emit(const Span &a, const Span &b, std::int64_t ss, std::int64_t ds,
            std::int64_t k) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(k) * size_;
    contiguousSource_ = k == 1 || ss == 1;
    repeatedSource_ = k > 1 && ss == 0;
    account(a, b, bytes);
    const auto sz = static_cast<std::int64_t>(size_);
    auto &ops = ops_;
    const bool contiguous = k == 1 || (ss * sz == sz && ds * sz == sz) ||
                            (a.host && ds == 1) || (b.host && ss == 1);
    if (contiguous) {
      const bool sameTiles = a.tile == lastSrcTile_ && b.tile == lastDstTile_;
      if (sameTiles && mergeable_ && !ops.empty() && ops.back().count == 1 &&
          ops.back().src + ops.back().elemBytes == a.addr &&
          ops.back().dst + ops.back().elemBytes == b.addr &&
          ops.back().elemBytes + bytes < (1ull << 31)) {
        ops.back().elemBytes += static_cast<std::uint32_t>(bytes);
        return;
      }
      ops.push_back(
          {a.addr, b.addr, 0, 0, 1, static_cast<std::uint32_t>(bytes)});
    } else {
      const std::int64_t hs = a.host ? 1 : ss, hd = b.host ? 1 : ds;
      ops.push_back({a.addr, b.addr, hs * sz, hd * sz,
                     static_cast<std::uint32_t>(k), size_});
    }
    mergeable_ = true;
    lastSrcTile_ = a.tile;
    lastDstTile_ = b.tile;
  }

  void account(const Span &a, const Span &b, std::uint64_t bytes) {
    const unsigned perIpu = s_.target.getTilesPerIPU();
    if (a.host || b.host) {
      (remote_ ? traffic_.remoteBytes : traffic_.hostBytes) += bytes;
      const unsigned tile = a.host ? b.tile : a.tile;
      traffic_.touch(tile);
      (a.host ? traffic_.in : traffic_.out)[tile] += bytes;
      return;
    }
    traffic_.touch(a.tile);
    traffic_.touch(b.tile);
    if (crossReplica_) {
      // Between replicas, every byte leaves one IPU and enters another.
      traffic_.out[a.tile] += bytes;
      traffic_.in[b.tile] += bytes;
      traffic_.ipuOut[a.tile / perIpu] += bytes;
      traffic_.ipuIn[b.tile / perIpu] += bytes;
      return;
    }
    if (a.tile == b.tile) {
      traffic_.onTile[a.tile] += bytes;
      return;
    }
    // (One IPU, the common case, needs no division by a count not known
    // at compile time on every piece.)
    if (multiIpu_ && a.tile / perIpu != b.tile / perIpu) {
      traffic_.in[b.tile] += bytes;
      traffic_.out[a.tile] += bytes;
      traffic_.ipuOut[a.tile / perIpu] += bytes;
      traffic_.ipuIn[b.tile / perIpu] += bytes;
      return;
    }
    if (repeatedSource_) {
      // One element repeated (a broadcast view): the sender sends it once
      // to every tile listening, and each receiver takes it once and
      // repeats it with on-tile copies, rather than the exchange carrying
      // every repeat from the one sender to each receiver in turn.
      traffic_.in[b.tile] += size_;
      traffic_.onTile[b.tile] += bytes - size_;
      traffic_.addSend(a.tile, a.addr, a.addr + size_);
      traffic_.addReceive(b.tile, a.tile, a.addr, a.addr + size_);
      return;
    }
    traffic_.in[b.tile] += bytes;
    // On chip, every tile listening to the sender's exchange bus receives
    // what it sends, so a broadcast costs the sender once; two tiles on one
    // shared bus receiving the same bytes take them at once.
    if (contiguousSource_) {
      traffic_.addSend(a.tile, a.addr, a.addr + bytes);
      traffic_.addReceive(b.tile, a.tile, a.addr, a.addr + bytes);
    } else {
      traffic_.out[a.tile] += bytes;
    }
  }

public:
  void startStep() { mergeable_ = false; }
  void setCrossReplica(bool on) { crossReplica_ = on; }
  /// The host side of the next copies is streaming (remote) memory.
  void setRemote(bool on) { remote_ = on; }
  /// The index the next copy op will have in the executable's table.
  std::uint32_t nextOp() const {
    return static_cast<std::uint32_t>(s_.exe.copyOps.size() + ops_.size());
  }
  /// Moves the ops made so far into the executable.
  void finish() { ops_.moveInto(s_.exe.copyOps); }

private:
  State &s_;
  CopyOpChunks ops_;
  Traffic &traffic_;
  const bool multiIpu_;
  Locator srcLocator_, dstLocator_;
  std::uint32_t size_ = 4;
  bool mergeable_ = false;
  bool crossReplica_ = false;
  bool remote_ = false;
  bool contiguousSource_ = false;
  bool repeatedSource_ = false;
  unsigned lastSrcTile_ = 0, lastDstTile_ = 0;
};

std::vector<Run> hostRuns(std::size_t n) {
  return {Run{kHost, 0, 1, static_cast<std::int64_t>(n)}};
}

std::uint64_t scalarAddr(const State &s, const Tensor &t, Locator &locator) {
  const Run &r = t.runs().at(0);
  const std::span<const TileInterval> m = s.mapping(r.var);
  auto [tile, idx] = locator(r.var, m, static_cast<std::size_t>(r.start));
  (void)tile;
  return s.addrOf(r.var, idx) +
         (r.start - m[idx].begin) * typeSize(s.type(r.var));
}

class StepResolver {
public:
  explicit StepResolver(State &s)
      : s_(s), traffic_(s.target.getNumTiles(), s.target.getNumIPUs()),
        ops_(s, traffic_) {}

  // The vertices' fields and the steps' copy ops fill different parts of
  // the executable from the same read-only state, so they are resolved at
  // once on two threads (the only shared input written, each compute
  // set's first vertex, is set before); the result is the same as one
  // after the other.
  void run() {
    assignFirstVertices();
    s_.exe.steps.resize(s_.drafts.size());
    s_.exe.estimates.resize(s_.drafts.size());
    std::future<void> vertices;
    try {
      vertices = std::async(std::launch::async, [this] { resolveVertices(); });
    } catch (const std::system_error &) {
      resolveVertices(); // no second thread to be had
    }
    try {
      for (std::size_t i = 0; i < s_.drafts.size(); ++i)
        lowerStep(i);
      lowerHostAccesses();
      lowerInitialValues();
    } catch (...) {
      if (vertices.valid())
        vertices.wait();
      throw;
    }
    if (vertices.valid())
      vertices.get();
    ops_.finish();
  }

private:
  // Copy ops of a step go in one range; the traffic they cause is costed.
  template <typename F> void opsFor(std::size_t i, F &&build) {
    Step &st = s_.exe.steps[i];
    const std::uint32_t first = ops_.nextOp();
    ops_.startStep();
    traffic_.reset();
    build();
    traffic_.sendsToOut();
    traffic_.pairReceives(s_.target.getTilesPerSharedExchangeBus(),
                          s_.target.getTilesPerIPU());
    const std::uint32_t n = ops_.nextOp() - first;
    if (st.kind == StepKind::Exchange || st.kind == StepKind::CrossReplica) {
      st.a = first;
      st.b = n;
    } else {
      st.b = first;
      st.c = n;
    }
    s_.exe.estimates[i] = estimateTraffic(s_, traffic_);
  }

  void lowerStep(std::size_t i) {
    const Draft &d = s_.drafts[i];
    Step &st = s_.exe.steps[i];
    st = d.step;
    const bool predicated =
        st.kind == StepKind::JumpIfZero || st.kind == StepKind::JumpIfNonZero ||
        st.kind == StepKind::Switch || st.kind == StepKind::AbortIf;
    if (predicated) {
      st.hasAddr = true;
      st.addr = scalarAddr(s_, d.tensors[0], stepLocator_);
      st.type = d.tensors[0].elementType();
    }
    switch (st.kind) {
    case StepKind::Compute:
      st.a = s_.csPlans[d.computeSet].firstVertex;
      st.b = static_cast<std::uint32_t>(
          s_.data.computeSets[d.computeSet].vertices.size());
      st.c = static_cast<std::uint32_t>(d.computeSet);
      if (const int k = s_.csPlans[d.computeSet].hostKernel; k >= 0) {
        // The engine runs these vertices instead (Graph::setHostKernel).
        st.addr = s_.csPlans[k].firstVertex;
        st.count = s_.data.computeSets[k].vertices.size();
      }
      return;
    case StepKind::CrossReplica:
      ops_.setCrossReplica(true);
      opsFor(i, [&] {
        for (const auto &[src, dst] : d.copies)
          ops_.copy(src.runs(), dst.runs(),
                    static_cast<std::uint32_t>(typeSize(src.elementType())));
      });
      ops_.setCrossReplica(false);
      return;
    case StepKind::Exchange:
      opsFor(i, [&] {
        for (const auto &[src, dst] : d.copies)
          ops_.copy(src.runs(), dst.runs(),
                    static_cast<std::uint32_t>(typeSize(src.elementType())));
        if (d.gathers)
          gather(*d.gathers);
        if (d.scatters)
          scatter(*d.scatters);
        if (d.costOnlyGathers)
          costGathers(*d.costOnlyGathers);
      });
      return;
    case StepKind::StreamIn:
    case StepKind::RemoteIn:
    case StepKind::StreamOut:
    case StepKind::RemoteOut: {
      const Tensor &t = d.tensors[0];
      const bool in =
          st.kind == StepKind::StreamIn || st.kind == StepKind::RemoteIn;
      const auto size = static_cast<std::uint32_t>(typeSize(t.elementType()));
      ops_.setRemote(st.kind == StepKind::RemoteIn ||
                     st.kind == StepKind::RemoteOut);
      opsFor(i, [&] {
        if (in)
          ops_.copy(hostRuns(t.numElements()), t.runs(), size);
        else
          ops_.copy(t.runs(), hostRuns(t.numElements()), size);
      });
      ops_.setRemote(false);
      if (d.step.hasAddr) {
        st.addr = scalarAddr(s_, d.tensors[1], stepLocator_);
        st.type = d.tensors[1].elementType();
      }
      return;
    }
    case StepKind::Print: {
      const Tensor &t = d.tensors[0];
      PrintInfo p;
      p.title = s_.exe.strings[d.step.a];
      p.type = t.elementType();
      p.shape.assign(t.shape().begin(), t.shape().end());
      p.firstOp = ops_.nextOp();
      opsFor(i, [&] {
        ops_.copy(t.runs(), hostRuns(t.numElements()),
                  static_cast<std::uint32_t>(typeSize(t.elementType())));
      });
      p.numOps = ops_.nextOp() - p.firstOp;
      st.a = static_cast<std::uint32_t>(s_.exe.prints.size());
      st.b = st.c = 0;
      s_.exe.prints.push_back(std::move(p));
      return;
    }
    default:
      return;
    }
  }

  // Copies each field element's tensor to its temporary.
  void gather(const std::vector<FieldCopies> &copies) {
    s_.forEachCopy(copies, [&](const Tensor &t, const Substitution &sub) {
      const Run dst = sub.run();
      ops_.copy(t.runs(), {&dst, 1},
                static_cast<std::uint32_t>(typeSize(t.elementType())));
    });
  }

  // Costs each field element's copy to its temporary, which the simulator
  // skips.
  void costGathers(const std::vector<FieldCopies> &copies) {
    s_.forEachCopy(copies, [&](const Tensor &t, const Substitution &sub) {
      // A temporary is one interval on its vertex's tile.
      ops_.cost(t.runs(), s_.mapping(sub.var)[0].tile,
                static_cast<std::uint32_t>(typeSize(t.elementType())));
    });
  }

  // Copies each field element's temporary back to its tensor.
  void scatter(const std::vector<FieldCopies> &copies) {
    s_.forEachCopy(copies, [&](const Tensor &t, const Substitution &sub) {
      const Run src = sub.run();
      ops_.copy({&src, 1}, t.runs(),
                static_cast<std::uint32_t>(typeSize(s_.type(src.var))));
    });
  }

  std::uint32_t classIndex(const RegisteredVertex *cls) {
    auto [it, added] = classes_.try_emplace(
        cls, static_cast<std::uint32_t>(s_.exe.vertexClasses.size()));
    if (added) {
      VertexClassRef ref;
      ref.name = cls->info.name;
      if (!cls->builtin) {
        auto [c, newCodelet] = codelets_.try_emplace(
            cls->codeletSource,
            static_cast<std::int32_t>(s_.exe.codelets.size()));
        if (newCodelet)
          s_.exe.codelets.push_back(
              {cls->codeletName, cls->codeletSource, cls->compileFlags});
        ref.codelet = c->second;
      }
      s_.exe.vertexClasses.push_back(std::move(ref));
    }
    return it->second;
  }

  FieldValue edge(const Tensor &t) {
    const std::size_t n = elementsOf(t);
    if (n == 0)
      return {};
    return {scalarAddr(s_, t, locator_), static_cast<std::uint32_t>(n)};
  }

  // Field element (v, f, i) where the vertex reads or writes it: its
  // temporary, unless it has none or reads its own tensor in place.
  FieldValue fieldEdge(unsigned v, unsigned f, unsigned i) {
    const std::optional<Substitution> sub = s_.substitution(v, f, i);
    if (!sub || sub->inPlace)
      return edge(s_.data.vertices[v].fields[f].tensors[i]);
    // A temporary is one interval on the vertex's tile.
    return {s_.addrOf(sub->var, 0) + sub->offset * typeSize(s_.type(sub->var)),
            static_cast<std::uint32_t>(sub->count)};
  }

  // Each planned compute set's vertices follow the previous set's.
  void assignFirstVertices() {
    std::uint32_t next = 0;
    for (unsigned cs = 0; cs < s_.csPlans.size(); ++cs) {
      ComputeSetPlan &plan = s_.csPlans[cs];
      if (!plan.planned)
        continue;
      plan.firstVertex = next;
      next +=
          static_cast<std::uint32_t>(s_.data.computeSets[cs].vertices.size());
    }
  }

  void resolveVertices() {
    reserveVertices();
    for (unsigned cs = 0; cs < s_.csPlans.size(); ++cs) {
      const ComputeSetPlan &plan = s_.csPlans[cs];
      if (!plan.planned)
        continue;
      TESSERA_INTERNAL_ASSERT(plan.firstVertex == s_.exe.vertices.size(),
                              "vertices resolved out of order");
      for (unsigned v : s_.data.computeSets[cs].vertices)
        lowerVertex(v);
    }
  }

  // Sizes the vertex tables and state bytes exactly: grown by doubling,
  // the list elements' table (millions of entries) would take up to twice
  // its bytes, and three times while it moves.
  void reserveVertices() {
    std::size_t vertices = 0, fields = 0, spans = 0, state = 0;
    for (unsigned cs = 0; cs < s_.csPlans.size(); ++cs) {
      if (!s_.csPlans[cs].planned)
        continue;
      for (unsigned v : s_.data.computeSets[cs].vertices) {
        const VertexData &vd = s_.data.vertices[v];
        const auto &info = vd.vertexClass->info.fields;
        ++vertices;
        fields += info.size();
        for (unsigned f = 0; f < info.size(); ++f)
          if (info[f].direction == codelet::Direction::State)
            state += (vd.fields[f].state.size() + 7) / 8 * 8;
          else if (info[f].shape != codelet::Shape::Scalar &&
                   info[f].shape != codelet::Shape::Vector)
            spans += vd.fields[f].tensors.size();
      }
    }
    s_.exe.vertices.reserve(vertices);
    s_.exe.fields.reserve(fields);
    s_.exe.spans.reserve(spans);
    s_.exe.stateBytes.reserve(s_.exe.stateBytes.size() + state);
  }

  void lowerVertex(unsigned v) {
    const VertexData &vd = s_.data.vertices[v];
    VertexInstance inst;
    inst.vertexClass = classIndex(vd.vertexClass);
    inst.tile = *vd.tile;
    inst.firstField = static_cast<std::uint32_t>(s_.exe.fields.size());
    const auto &fields = vd.vertexClass->info.fields;
    for (unsigned f = 0; f < fields.size(); ++f) {
      const FieldBinding &b = vd.fields[f];
      if (fields[f].direction == codelet::Direction::State) {
        FieldValue fv;
        fv.addr = s_.exe.stateBytes.size();
        fv.size = static_cast<std::uint32_t>(b.state.count());
        s_.exe.stateBytes.insert(s_.exe.stateBytes.end(), b.state.begin(),
                                 b.state.end());
        // Keep every state value aligned for its type.
        while (s_.exe.stateBytes.size() % 8)
          s_.exe.stateBytes.push_back(std::byte{0});
        s_.exe.fields.push_back(fv);
        continue;
      }
      if (fields[f].shape == codelet::Shape::Scalar ||
          fields[f].shape == codelet::Shape::Vector) {
        s_.exe.fields.push_back(fieldEdge(v, f, 0));
        continue;
      }
      FieldValue list;
      list.addr = s_.exe.spans.size();
      list.size = static_cast<std::uint32_t>(b.tensors.size());
      for (unsigned i = 0; i < b.tensors.size(); ++i)
        s_.exe.spans.push_back(fieldEdge(v, f, i));
      s_.exe.fields.push_back(list);
    }
    s_.exe.vertices.push_back(inst);
  }

  void lowerHostAccesses() {
    for (const HostAccessData &h : s_.data.hostAccesses) {
      HostAccessInfo info;
      info.handle = h.handle;
      info.type = h.tensor.elementType();
      info.numElements = h.tensor.numElements();
      info.write = h.write;
      info.firstOp = ops_.nextOp();
      const auto size = static_cast<std::uint32_t>(typeSize(info.type));
      ops_.startStep();
      if (h.write)
        ops_.copy(hostRuns(info.numElements), h.tensor.runs(), size);
      else
        ops_.copy(h.tensor.runs(), hostRuns(info.numElements), size);
      info.numOps = ops_.nextOp() - info.firstOp;
      s_.exe.hostAccesses.push_back(std::move(info));
    }
    traffic_.reset();
  }

  void lowerInitialValues() {
    // Temporaries have no initial values.
    for (std::uint32_t v = 0; v < s_.numGraphVars; ++v) {
      const VariableData &var = *s_.graphVar(v);
      if (var.initialValue.empty())
        continue;
      const std::size_t size = typeSize(var.type);
      for (std::size_t i = 0; i < var.mapping.size(); ++i) {
        const TileInterval &iv = var.mapping[i];
        addInitialBytes(s_.addrOf(v, i),
                        var.initialValue.data() + iv.begin * size,
                        (iv.end - iv.begin) * size);
      }
    }
  }

  // The engine starts every replica's memory zeroed (Runtime::load), so
  // only the non-zero stretches of an initial value are kept: optimizer
  // state and biases start at zero, and were most of a ResNet-50
  // executable's initial bytes. Zero gaps shorter than kMinZeroGap stay
  // in their region, so a region is not cut at every zero weight.
  void addInitialBytes(std::uint64_t addr, const std::byte *src,
                       std::size_t size) {
    constexpr std::size_t kMinZeroGap = 64;
    for (std::size_t i = 0; i < size;) {
      while (i < size && src[i] == std::byte{0})
        ++i;
      if (i == size)
        return;
      const std::size_t begin = i;
      std::size_t end = i, zeros = 0;
      for (; i < size && zeros < kMinZeroGap; ++i) {
        zeros = src[i] == std::byte{0} ? zeros + 1 : 0;
        if (zeros == 0)
          end = i + 1;
      }
      InitRegion r;
      r.addr = addr + begin;
      r.dataOffset = s_.exe.initData.size();
      r.size = end - begin;
      s_.exe.initData.insert(s_.exe.initData.end(), src + begin, src + end);
      s_.exe.initRegions.push_back(r);
    }
  }

  State &s_;
  Traffic traffic_;
  OpBuilder ops_;
  Locator locator_, stepLocator_; ///< of the vertices' and steps' threads
  std::map<const RegisteredVertex *, std::uint32_t> classes_;
  std::map<std::string, std::int32_t> codelets_;
};

} // namespace

void resolveSteps(State &s) { StepResolver(s).run(); }

} // namespace tessera::compiler
