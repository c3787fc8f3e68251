// The step interpreter. Compute steps run vertex chunks on the thread pool;
// chunks are fixed at load from the estimated cycles, so results never depend
// on the thread count. The inner loop allocates nothing and looks nothing up.
#include "Runtime.hpp"

#include "../support/Copy.hpp"

#include "tessera/device/CostFormulas.hpp"

#include "tessera/support/Convert.hpp"
#include "tessera/support/Error.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <utility>

namespace tessera::engine {

namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

// Copies `count` elements of a fixed size with strides; the switch lets the
// compiler turn small copies into single moves.
template <std::size_t N>
void stridedCopy(const std::byte *s, std::byte *d, std::int64_t ss,
                 std::int64_t ds, std::uint32_t count) {
  for (std::uint32_t k = 0; k < count; ++k, s += ss, d += ds)
    std::memcpy(d, s, N);
}

} // namespace

Runtime::Runtime(Executable &exe, const EngineOptions &options)
    : exe_(exe), options_(options), print_(&std::cout) {
  streams_.resize(exe_.streams.size(),
                  std::vector<StreamConnection>(exe_.replicationFactor));
  remote_.resize(exe_.remoteBuffers.size());
  counters_.assign(exe_.numCounters, 0);
  counts_.stepCounts.assign(exe_.steps.size(), 0);
  // One IPU's elapsed time is a sum the counts already give; only several
  // IPUs need the order of the steps, so only they pay for the clocks.
  if (exe_.numIPUs > 1) {
    timeline_ = std::make_unique<Timeline>(exe_);
    counts_.ipuClocks.assign(timeline_->numIPUs(), 0);
  }
  // The streams each program can reach, to check connections before a run.
  programStreams_.resize(exe_.programEntry.size());
  for (std::size_t p = 0; p < exe_.programEntry.size(); ++p) {
    std::set<std::uint32_t> seen, ids;
    std::vector<std::uint32_t> worklist{exe_.programEntry[p]};
    while (!worklist.empty()) {
      std::uint32_t pc = worklist.back();
      worklist.pop_back();
      for (; pc < exe_.steps.size() && seen.insert(pc).second; ++pc) {
        const Step &st = exe_.steps[pc];
        if (st.kind == StepKind::StreamIn || st.kind == StepKind::StreamOut)
          ids.insert(st.a);
        if (st.kind == StepKind::Call || st.kind == StepKind::Jump ||
            st.kind == StepKind::JumpIfZero ||
            st.kind == StepKind::JumpIfNonZero)
          worklist.push_back(st.a);
        if (st.kind == StepKind::RepeatStart)
          worklist.push_back(st.b);
        if (st.kind == StepKind::Switch) {
          worklist.push_back(st.c);
          for (std::uint32_t i = 0; i < st.b; ++i)
            worklist.push_back(exe_.switchTable[st.a + i].second);
        }
        if (st.kind == StepKind::End || st.kind == StepKind::Return ||
            st.kind == StepKind::Jump)
          break;
      }
    }
    programStreams_[p].assign(ids.begin(), ids.end());
  }
}

Runtime::~Runtime() {
  if (!objects_)
    return;
  const std::size_t n = exe_.vertices.size();
  // Only the vertices built (all of them, unless building threw).
  for (std::size_t i = 0; i < vertices_.size(); ++i)
    if (vertices_[i].object)
      classes_[exe_.vertices[i % n].vertexClass]->info.destroy(
          vertices_[i].object);
}

namespace {

struct Hull {
  std::uint64_t lo = 0, hi = 0;
};

// Boundaries of chunks of the n ops (\p total bytes) for \p threads
// threads. Chunks of at least 64 KiB: a smaller share of a copy is over
// before a sleeping worker would have woken for it.
void byteChunks(const CopyOp *ops, std::uint32_t n, std::uint64_t total,
                unsigned threads, std::vector<std::uint32_t> &c) {
  const std::uint64_t target =
      threads == 1 ? total + 1
                   : std::max<std::uint64_t>(total / (threads * 2), 64 << 10);
  c.push_back(0);
  std::uint64_t acc = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    acc += std::uint64_t(ops[i].count) * ops[i].elemBytes;
    if (acc >= target && i + 1 < n) {
      c.push_back(i + 1);
      acc = 0;
    }
  }
  c.push_back(n);
}

// The bytes [lo, hi) an op's side touches (base, stride and its count and
// element size). An empty op touches nothing. The validator bounds the
// strides only of the sides an op moves through device memory, so a crafted
// side's span may not fit: it then covers everything (no parallel chunks),
// which is always safe.
Hull hullOf(const CopyOp &op, std::uint64_t base, std::int64_t stride) {
  if (op.count == 0)
    return {base, base};
  std::int64_t last = 0;
  if (__builtin_mul_overflow(std::int64_t(op.count - 1), stride, &last))
    return {0, UINT64_MAX};
  return {base + std::min<std::int64_t>(0, last),
          base + std::max<std::int64_t>(0, last) + op.elemBytes};
}

// Sorts \p v by lo (or hi) with a least-significant-digit radix sort,
// unless it is in order already: the keys are device addresses, a few
// dozen bits wide, so a few linear passes replace a comparison sort.
void sortHulls(std::vector<Hull> &v, std::vector<Hull> &tmp, bool byHi) {
  const auto key = [byHi](const Hull &h) { return byHi ? h.hi : h.lo; };
  std::uint64_t top = 0;
  bool sorted = true;
  for (std::size_t i = 0; i < v.size(); ++i) {
    top = std::max(top, key(v[i]));
    sorted = sorted && (i == 0 || key(v[i - 1]) <= key(v[i]));
  }
  if (sorted)
    return;
  constexpr unsigned kBits = 11;
  constexpr std::size_t kBuckets = std::size_t{1} << kBits;
  std::vector<std::size_t> start(kBuckets);
  tmp.resize(v.size());
  for (unsigned shift = 0; shift < 64 && (top >> shift) != 0; shift += kBits) {
    std::fill(start.begin(), start.end(), 0);
    for (const Hull &h : v)
      ++start[(key(h) >> shift) & (kBuckets - 1)];
    std::size_t at = 0;
    for (std::size_t &s : start)
      at += std::exchange(s, at);
    for (const Hull &h : v)
      tmp[start[(key(h) >> shift) & (kBuckets - 1)]++] = h;
    v.swap(tmp);
  }
}

// Whether a destination of ops [0, n) overlaps a source of any of them. A
// destination [lo, hi) overlaps iff some source starting before hi ends
// after lo: with the sources in order of their starts and the destinations
// in order of their ends, the sources starting before each end are a
// growing prefix, swept once with the maximum of its ends (a binary search
// per destination was most of a ResNet-50 load's chunk planning). \p src,
// \p dst and \p tmp are scratch space, reused from step to step.
bool copiesOverlap(const CopyOp *ops, std::uint32_t n, std::vector<Hull> &src,
                   std::vector<Hull> &dst, std::vector<Hull> &tmp) {
  src.resize(n);
  dst.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    src[i] = hullOf(ops[i], ops[i].src, ops[i].srcStride);
    dst[i] = hullOf(ops[i], ops[i].dst, ops[i].dstStride);
  }
  sortHulls(src, tmp, false);
  sortHulls(dst, tmp, true);
  std::size_t j = 0;
  std::uint64_t maxEnd = 0;
  for (const Hull &d : dst) {
    for (; j < src.size() && src[j].lo < d.hi; ++j)
      maxEnd = std::max(maxEnd, src[j].hi);
    if (j > 0 && maxEnd > d.lo)
      return true;
  }
  return false;
}

} // namespace

void Runtime::planChunks() {
  // Compute steps: ~4 chunks a thread of about equal estimated cycles.
  // Exchange steps: chunks of about equal bytes, and whether their sources
  // and destinations overlap (then they go through a scratch buffer).
  // Stream steps: chunks of about equal bytes.
  const unsigned threads = pool_->size();
  chunks_.assign(exe_.steps.size(), {});
  staged_.assign(exe_.steps.size(), false);
  prefetch_.assign(exe_.steps.size(), false);
  // Below this many bytes a step's sources are likely still in cache,
  // where asking for them ahead only costs instructions.
  constexpr std::uint64_t kPrefetchBytes = 256 << 10;
  std::size_t maxStaged = 0;
  std::vector<Hull> src, dst, tmp;
  for (std::size_t pc = 0; pc < exe_.steps.size(); ++pc) {
    const Step &st = exe_.steps[pc];
    std::vector<std::uint32_t> &c = chunks_[pc];
    if (st.kind == StepKind::Compute) {
      const auto [first, n] = computeVertices(st);
      std::uint64_t total = 0;
      for (std::uint32_t i = 0; i < n; ++i)
        total += exe_.vertices[first + i].cycles + 1;
      const unsigned parts =
          threads == 1 ? 1 : std::min<std::uint32_t>(threads * 4, n);
      c.push_back(0);
      std::uint64_t acc = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        acc += exe_.vertices[first + i].cycles + 1;
        if (c.size() < parts && acc * parts >= total * c.size())
          c.push_back(i + 1);
      }
      if (c.back() != n)
        c.push_back(n);
    } else if (st.kind == StepKind::StreamIn ||
               st.kind == StepKind::StreamOut) {
      // A batch of inputs is scattered to (outputs gathered from) many
      // tiles: a large transfer's pieces are shared out as an exchange's.
      const CopyOp *ops = exe_.copyOps.data() + st.b;
      std::uint64_t total = 0;
      for (std::uint32_t i = 0; i < st.c; ++i)
        total += std::uint64_t(ops[i].count) * ops[i].elemBytes;
      byteChunks(ops, st.c, total, threads, c);
      prefetch_[pc] = total >= kPrefetchBytes;
    } else if (st.kind == StepKind::Exchange) {
      const CopyOp *ops = exe_.copyOps.data() + st.a;
      std::uint64_t total = 0;
      for (std::uint32_t i = 0; i < st.b; ++i)
        total += std::uint64_t(ops[i].count) * ops[i].elemBytes;
      const bool overlap = copiesOverlap(ops, st.b, src, dst, tmp);
      staged_[pc] = overlap;
      if (overlap)
        maxStaged = std::max<std::size_t>(maxStaged, total);
      byteChunks(ops, st.b, total, threads, c);
      prefetch_[pc] = total >= kPrefetchBytes;
    }
  }
  scratch_.resize(maxStaged);
}

void Runtime::applyOps(const CopyOp *ops, std::size_t n, const std::byte *src,
                       std::byte *dst, bool prefetch) {
  // An exchange gathers pieces of a few bytes from all over the tiles'
  // memory: asking for the source a few ops ahead overlaps the misses that
  // the hardware prefetchers cannot foresee (a gather of 4-byte pieces
  // from random places runs in 2/3 of the time; from cache, 15 % slower).
  constexpr std::size_t kAhead = 16;
  for (std::size_t i = 0; i < n; ++i) {
    const CopyOp &op = ops[i];
    const std::byte *s = src + op.src;
    std::byte *d = dst + op.dst;
    if (prefetch && i + kAhead < n)
      __builtin_prefetch(src + ops[i + kAhead].src);
    if (op.count == 1) {
      // Exchanges move many pieces of tens of bytes.
      support::copyBytes(d, s, op.elemBytes);
      continue;
    }
    switch (op.elemBytes) {
    case 1:
      stridedCopy<1>(s, d, op.srcStride, op.dstStride, op.count);
      break;
    case 2:
      stridedCopy<2>(s, d, op.srcStride, op.dstStride, op.count);
      break;
    case 4:
      stridedCopy<4>(s, d, op.srcStride, op.dstStride, op.count);
      break;
    default:
      for (std::uint32_t k = 0; k < op.count; ++k)
        std::memcpy(d + k * op.dstStride, s + k * op.srcStride, op.elemBytes);
    }
  }
}

void Runtime::checkStreamsConnected(unsigned prog) const {
  for (std::uint32_t id : programStreams_[prog])
    for (unsigned r = localBegin(); r < localEnd(); ++r)
      if (streams_[id][r].kind == StreamConnection::Kind::None)
        throw StreamError(
            "stream \"" + exe_.streams[id].handle + "\"" +
            (replicas() > 1 ? " of replica " + str(r) : std::string()) +
            " is not connected, but program " + str(prog) +
            " uses it; call engine.connectStream(\"" + exe_.streams[id].handle +
            "\", ...) before engine.run()");
}

std::int64_t Runtime::scalar(const Step &st, const char *what) const {
  const auto value = [&](unsigned r) {
    return static_cast<std::int64_t>(
        elementAsDouble(st.type, replicaMemory(r) + st.addr));
  };
  const unsigned r0 = localBegin();
  const std::int64_t v = value(r0);
  for (unsigned r = r0 + 1; r < localEnd(); ++r)
    if (value(r) != v)
      throw RuntimeError(std::string(what) + ": replica " + str(r) +
                         " has a different value (" + std::to_string(value(r)) +
                         ") from replica " + str(r0) + " (" +
                         std::to_string(v) +
                         "); control flow must be the same on every replica");
  return v;
}

void Runtime::run(unsigned prog) {
  checkStreamsConnected(prog);
  // Prefetched transfers do not outlive the run, even one that throws.
  struct DropPrefetched {
    Runtime &rt;
    ~DropPrefetched() { rt.invalidatePrefetched(); }
  } dropPrefetched{*this};
  ++counts_.runs;
  // The host side of the run, charged when it ends (a run that throws has
  // still paid its round trip and the callbacks it made).
  struct ChargeHost {
    Runtime &rt;
    HostActivity before;
    std::uint64_t streams;
    ~ChargeHost() {
      HostActivity &now = rt.counts_.hostActivity;
      ++now.runs;
      now.streamSetups += streams;
      TESSERA_INTERNAL_ASSERT(rt.target_);
      rt.counts_.hostCycles += hostCycles(
          rt.target_->costs(), rt.target_->getTileClockFrequency(),
          {1, streams, now.callbackTransfers - before.callbackTransfers});
    }
  } chargeHost{*this, counts_.hostActivity,
               std::uint64_t(programStreams_[prog].size()) *
                   (localEnd() - localBegin())};
  if (timeline_)
    runSteps<true>(prog);
  else
    runSteps<false>(prog);
}

// Timed: the executable has several IPUs, and each step moves their clocks.
// A separate instantiation keeps the one-IPU loop exactly as it was, not
// one test a step heavier (bench_steps under callgrind: the same 20.5
// instructions a step before and after the timeline).
template <bool Timed> void Runtime::runSteps(unsigned prog) {
  const bool tracing = options_.profileExecution();
  std::uint32_t pc = exe_.programEntry[prog];
  callStack_.clear();
  [[maybe_unused]] const Timeline *timeline = timeline_.get();
  [[maybe_unused]] std::uint64_t *clocks = counts_.ipuClocks.data();
  for (;;) {
    const Step &st = exe_.steps[pc];
    ++counts_.stepCounts[pc];
    if constexpr (Timed)
      timeline->advance(pc, clocks);
    if (tracing && counts_.trace.size() < counts_.traceLimit)
      counts_.trace.push_back(pc);
    std::uint32_t next = pc + 1;
    switch (st.kind) {
    case StepKind::Compute:
      compute(st, pc);
      break;
    case StepKind::Exchange:
      exchange(st, pc);
      break;
    case StepKind::StreamIn:
      streamIn(st, pc);
      break;
    case StepKind::StreamOut:
      streamOut(st, pc);
      break;
    case StepKind::RemoteIn:
      remoteCopy(st, true);
      break;
    case StepKind::RemoteOut:
      remoteCopy(st, false);
      break;
    case StepKind::Jump:
      next = st.a;
      break;
    case StepKind::JumpIfZero:
      if (scalar(st, "a branch predicate") == 0)
        next = st.a;
      break;
    case StepKind::JumpIfNonZero:
      if (scalar(st, "a branch predicate") != 0)
        next = st.a;
      break;
    case StepKind::RepeatStart:
      counters_[st.a] = st.count;
      break;
    case StepKind::RepeatEnd:
      if (--counters_[st.a] > 0)
        next = st.b;
      break;
    case StepKind::Switch: {
      const std::int64_t v = scalar(st, "a Switch control value");
      next = st.c;
      for (std::uint32_t i = 0; i < st.b; ++i)
        if (exe_.switchTable[st.a + i].first == v)
          next = exe_.switchTable[st.a + i].second;
      break;
    }
    case StepKind::Call:
      callStack_.push_back(next);
      next = st.a;
      break;
    case StepKind::Return:
      TESSERA_INTERNAL_ASSERT(!callStack_.empty(), "return without call");
      next = callStack_.back();
      callStack_.pop_back();
      break;
    case StepKind::Print:
      print(st);
      break;
    case StepKind::Abort:
      throw RuntimeError("the program aborted" +
                         (exe_.strings[st.a].empty()
                              ? std::string()
                              : ": " + exe_.strings[st.a]));
    case StepKind::AbortIf:
      if (scalar(st, "an AbortOnCondition predicate") != 0)
        throw RuntimeError("the program aborted on its condition" +
                           (exe_.strings[st.a].empty()
                                ? std::string()
                                : ": " + exe_.strings[st.a]));
      break;
    case StepKind::CrossReplica:
      crossReplica(st);
      break;
    case StepKind::Sync:
      break;
    case StepKind::End:
      return;
    }
    pc = next;
  }
}

void Runtime::compute(const Step &st, std::size_t pc) {
  const std::vector<std::uint32_t> &c = chunks_[pc];
  const std::size_t perReplica = c.size() - 1;
  const std::size_t n = exe_.vertices.size();
  const std::uint32_t first = computeVertices(st).first;
  std::atomic<std::uint64_t> failed{~std::uint64_t(0)};
  auto runChunk = [&](std::size_t task, unsigned) {
    const std::size_t r = localBegin() + task / perReplica,
                      k = task % perReplica;
    const RtVertex *v = vertices_.data() + r * n + first;
    for (std::uint32_t i = c[k]; i < c[k + 1]; ++i) {
      const RtVertex &x = v[i];
      bool ok = true;
      if (!x.multi) {
        ok = x.compute(x.object, 0);
      } else {
        for (unsigned w = 0; w < 6; ++w)
          ok = x.compute(x.object, w) && ok;
      }
      if (!ok) {
        std::uint64_t cur = failed.load();
        while (i < cur && !failed.compare_exchange_weak(cur, i)) {
        }
      }
    }
  };
  const std::size_t tasks = perReplica * (localEnd() - localBegin());
  if (tasks == 1)
    runChunk(0, 0);
  else
    pool_->parallelFor(tasks, runChunk);
  if (floatChecker_ && failed.load() == ~std::uint64_t(0))
    for (unsigned r = localBegin(); r < localEnd(); ++r)
      floatChecker_->check(st, pc, replicaMemory(r), r);
  if (failed.load() != ~std::uint64_t(0)) {
    const VertexInstance &inst = exe_.vertices[first + failed.load()];
    throw RuntimeError("vertex " + str(failed.load()) + " of compute set \"" +
                       exe_.computeSetNames[st.c] + "\" (class " +
                       exe_.vertexClasses[inst.vertexClass].name + ", tile " +
                       str(inst.tile) + ") returned false from compute()");
  }
}

void Runtime::exchange(const Step &st, std::size_t pc) {
  const CopyOp *ops = exe_.copyOps.data() + st.a;
  for (unsigned r = localBegin(); r < localEnd(); ++r) {
    std::byte *mem = replicaMemory(r);
    if (staged_[pc]) {
      // Sources and destinations overlap: read everything, then write, as
      // the exchange phase of a superstep does.
      gatherOps(ops, st.b, mem, scratch_.data());
      scatterOps(ops, st.b, scratch_.data(), mem);
      continue;
    }
    applyChunked(pc, ops, st.b, mem, mem);
  }
}

void Runtime::applyChunked(std::size_t pc, const CopyOp *ops, std::size_t n,
                           const std::byte *src, std::byte *dst) {
  const std::vector<std::uint32_t> &c = chunks_[pc];
  const bool prefetch = prefetch_[pc];
  if (c.size() <= 2) {
    applyOps(ops, n, src, dst, prefetch);
    return;
  }
  pool_->parallelFor(c.size() - 1, [&](std::size_t k, unsigned) {
    applyOps(ops + c[k], c[k + 1] - c[k], src, dst, prefetch);
  });
}

void Runtime::crossReplica(const Step &st) {
  // Every source is read before any destination is written, so a rotation
  // of one tensor around the replicas moves each value exactly once.
  const CopyOp *ops = exe_.copyOps.data() + st.a;
  std::size_t bytes = 0;
  for (std::uint32_t i = 0; i < st.b; ++i)
    bytes += std::size_t(ops[i].count) * ops[i].elemBytes;
  if (localEnd() - localBegin() < replicas())
    return crossInstance(st, bytes);
  const auto *pairs = exe_.replicaPairs.data() + st.c;
  transfer_.resize(bytes * st.count);
  for (std::uint64_t p = 0; p < st.count; ++p)
    gatherOps(ops, st.b, replicaMemory(pairs[p].first),
              transfer_.data() + p * bytes);
  for (std::uint64_t p = 0; p < st.count; ++p)
    scatterOps(ops, st.b, transfer_.data() + p * bytes,
               replicaMemory(pairs[p].second));
}

void Runtime::crossInstance(const Step &st, std::size_t bytes) {
  // Byte for byte the same moves as crossReplica: each instance packs the
  // sources of the pairs it owns (in pair order), every instance receives
  // all of them, and each writes the destinations it owns. The arithmetic
  // around the copies runs unchanged on every replica, so the results are
  // bit-identical to one process running every replica.
  const CopyOp *ops = exe_.copyOps.data() + st.a;
  const auto *pairs = exe_.replicaPairs.data() + st.c;
  const unsigned local = localEnd() - localBegin();
  const unsigned instances = replicas() / local;
  std::vector<std::size_t> sizes(instances, 0), offsets(instances + 1, 0);
  for (std::uint64_t p = 0; p < st.count; ++p)
    sizes[pairs[p].first / local] += bytes;
  for (unsigned i = 0; i < instances; ++i)
    offsets[i + 1] = offsets[i] + sizes[i];
  const unsigned me = localBegin() / local;
  std::vector<std::byte> mine(sizes[me]);
  std::size_t packed = 0;
  for (std::uint64_t p = 0; p < st.count; ++p)
    if (pairs[p].first / local == me) {
      gatherOps(ops, st.b, replicaMemory(pairs[p].first), mine.data() + packed);
      packed += bytes;
    }
  transfer_.resize(offsets[instances]);
  hostExchange_->allGather(mine.data(), sizes, transfer_.data());
  // On IPU-Machines only the pairs between instances leave the machine,
  // over its GW-Links, in both directions at once.
  std::size_t out = 0, in = 0;
  for (std::uint64_t p = 0; p < st.count; ++p) {
    const bool from = pairs[p].first / local == me;
    const bool to = pairs[p].second / local == me;
    out += from && !to ? bytes : 0;
    in += to && !from ? bytes : 0;
  }
  TESSERA_INTERNAL_ASSERT(target_);
  counts_.gatewayCycles += cost::gwLinkCycles(*target_, std::max(out, in));
  for (std::uint64_t p = 0; p < st.count; ++p) {
    std::size_t &at = offsets[pairs[p].first / local];
    if (pairs[p].second / local == me)
      scatterOps(ops, st.b, transfer_.data() + at,
                 replicaMemory(pairs[p].second));
    at += bytes;
  }
}

void Runtime::gatherOps(const CopyOp *ops, std::size_t n, const std::byte *src,
                        std::byte *packed) {
  std::size_t off = 0;
  for (std::size_t i = 0; i < n; ++i) {
    CopyOp in = ops[i];
    in.dst = off;
    in.dstStride = in.count == 1 ? 0 : in.elemBytes;
    applyOps(&in, 1, src, packed);
    off += std::size_t(in.count) * in.elemBytes;
  }
}

void Runtime::scatterOps(const CopyOp *ops, std::size_t n,
                         const std::byte *packed, std::byte *dst) {
  std::size_t off = 0;
  for (std::size_t i = 0; i < n; ++i) {
    CopyOp out = ops[i];
    out.src = off;
    out.srcStride = out.count == 1 ? 0 : out.elemBytes;
    applyOps(&out, 1, packed, dst);
    off += std::size_t(out.count) * out.elemBytes;
  }
}

const std::byte *Runtime::takeTransfer(StreamConnection &c, std::size_t bytes) {
  const std::byte *src = nullptr;
  switch (c.kind) {
  case StreamConnection::Kind::Buffer:
    src = c.begin + c.pos;
    c.pos = (c.pos + bytes) % static_cast<std::size_t>(c.end - c.begin);
    break;
  case StreamConnection::Kind::Pointer:
    src = c.begin;
    break;
  case StreamConnection::Kind::Function:
    ++counts_.hostActivity.callbackTransfers;
    transfer_.resize(bytes);
    c.function(transfer_.data());
    src = transfer_.data();
    break;
  case StreamConnection::Kind::Callback:
    ++counts_.hostActivity.callbackTransfers;
    if (c.prefetched) {
      c.prefetched = false;
      src = c.prefetchedData.data();
      break;
    }
    transfer_.resize(bytes);
    c.callback->fetch(transfer_.data());
    src = transfer_.data();
    break;
  case StreamConnection::Kind::None:
    TESSERA_INTERNAL_ASSERT(false, "unconnected stream reached a copy");
  }
  return src;
}

void Runtime::streamIn(const Step &st, std::size_t pc) {
  const StreamInfo &info = exe_.streams[st.a];
  const std::size_t bytes = info.numElements * typeSize(info.type);
  const CopyOp *ops = exe_.copyOps.data() + st.b;
  // A broadcast stream's transfer comes once, from the first local
  // replica's connection; each replica otherwise takes its own.
  const std::byte *src = nullptr;
  for (unsigned r = localBegin(); r < localEnd(); ++r) {
    const bool own = !info.broadcast || r == localBegin();
    StreamConnection &c = streams_[st.a][own ? r : localBegin()];
    if (own)
      src = takeTransfer(c, bytes);
    applyChunked(pc, ops, st.c, src, replicaMemory(r));
    if (own && c.kind == StreamConnection::Kind::Callback)
      c.callback->complete();
  }
  if (options_.enablePrefetch)
    prefetchNext(st.a, bytes, info.broadcast);
}

// After every replica's transfer, not after each: replicas sharing one
// callback then take its transfers in replica order, prefetched or not.
void Runtime::prefetchNext(std::uint32_t stream, std::size_t bytes,
                           bool broadcast) {
  const unsigned end = broadcast ? localBegin() + 1 : localEnd();
  for (unsigned r = localBegin(); r < end; ++r) {
    StreamConnection &c = streams_[stream][r];
    if (c.kind != StreamConnection::Kind::Callback || c.prefetched)
      continue;
    c.prefetchedData.resize(bytes);
    c.prefetched = c.callback->prefetch(c.prefetchedData.data()) ==
                   StreamCallback::Result::Success;
  }
}

void Runtime::invalidatePrefetched() {
  std::vector<const StreamCallback *> told;
  for (std::vector<StreamConnection> &replicas : streams_)
    for (StreamConnection &c : replicas) {
      if (!c.prefetched)
        continue;
      c.prefetched = false;
      if (std::find(told.begin(), told.end(), c.callback.get()) != told.end())
        continue;
      told.push_back(c.callback.get());
      c.callback->invalidatePrefetched();
    }
}

void Runtime::streamOut(const Step &st, std::size_t pc) {
  const StreamInfo &info = exe_.streams[st.a];
  const std::size_t bytes = info.numElements * typeSize(info.type);
  const CopyOp *ops = exe_.copyOps.data() + st.b;
  for (unsigned r = localBegin(); r < localEnd(); ++r) {
    StreamConnection &c = streams_[st.a][r];
    switch (c.kind) {
    case StreamConnection::Kind::Buffer:
      applyChunked(pc, ops, st.c, replicaMemory(r), c.begin + c.pos);
      c.pos = (c.pos + bytes) % static_cast<std::size_t>(c.end - c.begin);
      break;
    case StreamConnection::Kind::Pointer:
      applyChunked(pc, ops, st.c, replicaMemory(r), c.begin);
      break;
    case StreamConnection::Kind::Function:
    case StreamConnection::Kind::Callback:
      ++counts_.hostActivity.callbackTransfers;
      transfer_.resize(bytes);
      applyChunked(pc, ops, st.c, replicaMemory(r), transfer_.data());
      if (c.kind == StreamConnection::Kind::Function) {
        c.function(transfer_.data());
      } else {
        c.callback->fetch(transfer_.data());
        c.callback->complete();
      }
      break;
    case StreamConnection::Kind::None:
      TESSERA_INTERNAL_ASSERT(false, "unconnected stream reached a copy");
    }
  }
}

void Runtime::remoteCopy(const Step &st, bool in) {
  const RemoteBufferInfo &info = exe_.remoteBuffers[st.a];
  const std::size_t slotBytes = info.numElements * typeSize(info.type);
  const CopyOp *ops = exe_.copyOps.data() + st.b;
  for (unsigned r = localBegin(); r < localEnd(); ++r) {
    std::int64_t slot = 0;
    if (st.hasAddr)
      slot = static_cast<std::int64_t>(
          elementAsDouble(st.type, replicaMemory(r) + st.addr));
    if (slot < 0 || static_cast<std::uint64_t>(slot) >= info.repeats)
      throw RuntimeError("remote buffer \"" + info.handle + "\": offset " +
                         std::to_string(slot) + " is outside its " +
                         str(info.repeats) + " repeats (0.." +
                         str(info.repeats - 1) + ")");
    std::byte *base = remote_[st.a][r].data() + slot * slotBytes;
    if (in)
      applyOps(ops, st.c, base, replicaMemory(r));
    else
      applyOps(ops, st.c, replicaMemory(r), base);
  }
}

namespace {

void printNested(std::ostream &os, const std::byte *data, Type type,
                 const std::vector<std::uint64_t> &shape, unsigned dim,
                 std::size_t &index, unsigned indent) {
  const std::size_t size = typeSize(type);
  if (dim + 1 >= shape.size()) {
    os << '[';
    const std::uint64_t n = shape.empty() ? 1 : shape[dim];
    for (std::uint64_t i = 0; i < n; ++i, ++index)
      os << (i ? " " : "") << formatElement(type, data + index * size);
    os << ']';
    return;
  }
  os << "[\n";
  for (std::uint64_t i = 0; i < shape[dim]; ++i) {
    os << std::string(indent + 1, ' ');
    printNested(os, data, type, shape, dim + 1, index, indent + 1);
    os << '\n';
  }
  os << std::string(indent, ' ') << ']';
}

} // namespace

void Runtime::print(const Step &st) {
  const PrintInfo &p = exe_.prints[st.a];
  std::size_t n = 1;
  for (std::uint64_t d : p.shape)
    n *= d;
  std::vector<std::byte> buf(n * typeSize(p.type));
  for (unsigned r = localBegin(); r < localEnd(); ++r) {
    applyOps(exe_.copyOps.data() + p.firstOp, p.numOps, replicaMemory(r),
             buf.data());
    std::ostream &os = *print_;
    if (!p.title.empty())
      os << p.title;
    if (replicas() > 1)
      os << (p.title.empty() ? "" : " ") << "(replica " << r << ")";
    if (!p.title.empty() || replicas() > 1)
      os << ": ";
    std::size_t index = 0;
    printNested(os, buf.data(), p.type, p.shape, 0, index, 0);
    os << '\n';
  }
}

std::size_t Runtime::hostMemoryBytes() const {
  return std::size_t(replicas()) * exe_.replicaBytes() +
         objectBytes_ * replicas() + listBytes_ * replicas() +
         stateBytes_ * replicas() + vertices_.size() * sizeof(RtVertex) +
         scratch_.size();
}

} // namespace tessera::engine
