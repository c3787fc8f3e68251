// Private to the engine: the loaded state of an executable and the step
// interpreter. Everything the inner loop touches is resolved at load time.
#pragma once

#include "FloatChecks.hpp"

#include "tessera/compiler/Executable.hpp"
#include "tessera/compiler/Options.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/engine/ExecutionCounts.hpp"
#include "tessera/engine/ReplicaExchange.hpp"
#include "tessera/engine/StreamCallback.hpp"
#include "tessera/engine/Timeline.hpp"
#include "tessera/graph/VertexRegistry.hpp"
#include "tessera/support/ThreadPool.hpp"

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace tessera::engine {

/// A vertex ready to run: its compute function and its object.
struct RtVertex {
  bool (*compute)(void *, unsigned) = nullptr;
  void *object = nullptr;
  bool multi = false;
};

/// One replica's connection of one stream.
struct StreamConnection {
  enum class Kind {
    None,
    Buffer,
    Pointer,
    Function,
    Callback
  } kind = Kind::None;
  std::byte *begin = nullptr, *end = nullptr;
  std::size_t pos = 0;
  std::function<void(void *)> function;
  std::shared_ptr<StreamCallback> callback;
  /// The next transfer, when callback->prefetch() gave it early.
  std::vector<std::byte> prefetchedData;
  bool prefetched = false;
};

/// Memory released with free(), or with munmap() when it was mapped
/// (\p mapped bytes).
struct FreeDeleter {
  std::size_t mapped = 0;
  void operator()(void *p) const;
};
using Bytes = std::unique_ptr<std::byte, FreeDeleter>;

class Runtime {
public:
  Runtime(Executable &exe, const EngineOptions &options);
  ~Runtime();

  /// Allocates memory, builds vertices, writes initial values.
  void load();
  bool loaded() const { return loaded_; }
  /// Runs a program to its end.
  void run(unsigned prog);

  std::byte *replicaMemory(unsigned r) const {
    return memory_.get() + std::size_t(r) * exe_.replicaBytes();
  }
  unsigned replicas() const { return exe_.replicationFactor; }
  /// The replicas this process runs: [localBegin(), localEnd()).
  unsigned localBegin() const { return localFirst_; }
  unsigned localEnd() const {
    return localCount_ ? localFirst_ + localCount_ : replicas();
  }
  /// The device's target: its GW-Link figures price crossInstance's
  /// traffic and its host figures (CostFigures' host*Microseconds) each
  /// run's host side.
  void setTarget(const Target &target) { target_ = target; }
  void setLocalReplicas(unsigned first, unsigned count,
                        std::shared_ptr<ReplicaExchange> exchange) {
    localFirst_ = first;
    localCount_ = count;
    hostExchange_ = std::move(exchange);
  }
  std::vector<std::vector<StreamConnection>> &streams() { return streams_; }
  std::vector<std::byte> &remote(unsigned buffer, unsigned replica) {
    return remote_[buffer][replica];
  }
  void setPrintStream(std::ostream &os) { print_ = &os; }
  ExecutionCounts &counts() { return counts_; }
  const ExecutionCounts &counts() const { return counts_; }
  std::size_t hostMemoryBytes() const;

  /// Applies copy ops [first, first+n) from src base to dst base.
  /// \p prefetch asks for each op's source some ops ahead (for steps
  /// whose sources are too many to be in cache).
  static void applyOps(const CopyOp *ops, std::size_t n, const std::byte *src,
                       std::byte *dst, bool prefetch = false);
  /// The sources of the ops, packed one after another into \p packed.
  static void gatherOps(const CopyOp *ops, std::size_t n, const std::byte *src,
                        std::byte *packed);
  /// The inverse: packed bytes to the ops' destinations.
  static void scatterOps(const CopyOp *ops, std::size_t n,
                         const std::byte *packed, std::byte *dst);

private:
  void resolveClasses();
  /// Throws SerializationError unless the vertex state is a whole number
  /// of 8-byte words (each replica's copy follows the last).
  void checkStateSize() const;
  /// Throws SerializationError unless every field of vertex \p v (as its
  /// class lays them out) stays inside the field, span, state and replica
  /// memory tables it indexes: a deserialised file is not trusted.
  void checkVertexFields(std::size_t v) const;
  /// Places each vertex's object (\p objOffset: its offset in a replica's
  /// objects), allocates the vertex arenas and copies in the state.
  void layoutVertices(std::vector<std::size_t> &objOffset);
  /// Builds every vertex, on the pool.
  void buildVertices(const std::vector<std::size_t> &objOffset);
  /// Constructs vertex \p i of replica \p r at \p obj and fills its fields,
  /// checking them first for the first replica.
  void buildVertex(unsigned r, std::size_t i, std::byte *obj);
  void planChunks();
  /// Writes the initial values into each replica's memory and allocates
  /// the remote buffers.
  void initMemory();
  void checkStreamsConnected(unsigned prog) const;
  template <bool Timed> void runSteps(unsigned prog);
  /// The bytes of the next transfer from host connection \p c.
  const std::byte *takeTransfer(StreamConnection &c, std::size_t bytes);
  /// After a transfer of host-to-device stream \p stream: asks each local
  /// replica's StreamCallback (only the first's when \p broadcast) for the
  /// next transfer (exchange.enablePrefetch).
  void prefetchNext(std::uint32_t stream, std::size_t bytes, bool broadcast);
  /// At the end of a run: drops the prefetched transfers no copy used,
  /// telling each callback once through invalidatePrefetched().
  void invalidatePrefetched();
  void compute(const Step &st, std::size_t pc);
  /// The first vertex and count a compute step runs: its host kernel's
  /// when it has one, else its own.
  static std::pair<std::uint32_t, std::uint32_t>
  computeVertices(const Step &st) {
    if (st.count)
      return {static_cast<std::uint32_t>(st.addr),
              static_cast<std::uint32_t>(st.count)};
    return {st.a, st.b};
  }
  void exchange(const Step &st, std::size_t pc);
  /// Applies ops [0, n) from src to dst in step pc's chunks, on the pool
  /// when there are several.
  void applyChunked(std::size_t pc, const CopyOp *ops, std::size_t n,
                    const std::byte *src, std::byte *dst);
  void streamIn(const Step &st, std::size_t pc);
  void streamOut(const Step &st, std::size_t pc);
  void remoteCopy(const Step &st, bool in);
  void crossReplica(const Step &st);
  void crossInstance(const Step &st, std::size_t bytes);
  void print(const Step &st);
  std::int64_t scalar(const Step &st, const char *what) const;

  Executable &exe_;
  EngineOptions options_;
  bool loaded_ = false;
  std::shared_ptr<VertexRegistry> registry_;
  std::vector<const RegisteredVertex *> classes_;
  Bytes memory_, objects_, lists_, state_;
  std::size_t objectBytes_ = 0, listBytes_ = 0, stateBytes_ = 0;
  std::vector<RtVertex> vertices_;                 // replica-major
  std::vector<std::vector<std::uint32_t>> chunks_; // per step: boundaries
  std::vector<bool> staged_;                       // per exchange step
  std::vector<bool> prefetch_; // per exchange or stream step (applyOps)
  std::vector<std::byte> scratch_;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<std::vector<StreamConnection>> streams_;
  std::vector<std::vector<std::vector<std::byte>>> remote_;
  std::vector<std::vector<std::uint32_t>> programStreams_;
  std::vector<std::uint64_t> counters_;
  std::vector<std::uint32_t> callStack_;
  std::vector<std::byte> transfer_;
  ExecutionCounts counts_;
  std::optional<Target> target_; ///< set by Engine::load
  /// Executables of several IPUs: the rule that moves counts_.ipuClocks.
  std::unique_ptr<Timeline> timeline_;
  unsigned localFirst_ = 0, localCount_ = 0; ///< count 0: every replica
  std::shared_ptr<ReplicaExchange> hostExchange_;
  std::ostream *print_;
  std::unique_ptr<FloatChecker> floatChecker_; ///< when a flag is set
};

} // namespace tessera::engine
