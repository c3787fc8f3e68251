/// \file
/// Engine: loads an Executable onto a device and runs its programs on the
/// IPU Model. Streams are connected to host buffers (circular), pointers or
/// callbacks; named tensors are written and read; remote buffers live in
/// host memory. Results are computed exactly on the host; cycles are the
/// compiler's estimates of the steps that ran: per IPU, the busy cycles
/// (getCycleCounts); in all, the elapsed time (getElapsedCycles), where
/// each IPU runs its own stream of steps and waits for the others only at
/// external syncs (inter-IPU exchanges, Sync steps, cross-replica copies,
/// the end of a run), as Timeline (Timeline.hpp) states. Host-side time
/// (each run's round trip, stream set-ups, callbacks) is kept apart:
/// getHostCycles, and getHostInclusiveCycles for device plus host.
#pragma once

#include "tessera/compiler/Executable.hpp"
#include "tessera/compiler/Options.hpp"
#include "tessera/engine/ExecutionCounts.hpp"
#include "tessera/engine/ReplicaExchange.hpp"
#include "tessera/engine/StreamCallback.hpp"
#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

class Device;

class Engine {
public:
  /// Compiles \p graph with one program (run(0)) or several.
  Engine(const Graph &graph, const program::Program &prog,
         const OptionFlags &options = {});
  Engine(const Graph &graph, const std::vector<program::Program> &progs,
         const OptionFlags &options = {});
  /// Uses an already compiled (or deserialised) executable.
  explicit Engine(Executable exe, const OptionFlags &options = {});
  ~Engine();
  Engine(Engine &&) noexcept;
  Engine &operator=(Engine &&) noexcept;

  /// Allocates the device memory, builds the vertices and writes initial
  /// values. The device must have the executable's IPU count and tiles.
  void load(Device &device);
  /// Runs program \p prog once.
  void run(unsigned prog = 0, const std::string &debugName = "");

  /// Connects every replica of a stream to a circular host buffer; each
  /// transfer takes the next numElements elements, wrapping at \p end.
  void connectStream(const std::string &handle, void *begin, void *end);
  /// Connects a stream to one transfer's worth of host memory.
  void connectStream(const std::string &handle, void *p);
  /// Connects one replica's stream.
  void connectStream(const std::string &handle, unsigned replica, void *begin,
                     void *end);
  void connectStreamToCallback(const std::string &handle,
                               const std::function<void(void *)> &callback);
  void connectStreamToCallback(const std::string &handle, unsigned replica,
                               std::function<void(void *)> callback);
  void connectStream(const std::string &handle,
                     std::unique_ptr<StreamCallback> callback);
  /// Connects every local replica of a stream to \p callback (shared by
  /// them; see StreamCallback for when each of its functions is called).
  void connectStreamToCallback(const std::string &handle,
                               std::unique_ptr<StreamCallback> callback);
  /// Connects one replica's stream to \p callback.
  void connectStreamToCallback(const std::string &handle, unsigned replica,
                               std::unique_ptr<StreamCallback> callback);

  /// Runs only replicas [first, first + count) here: another process (an
  /// instance, see src/dist) runs each other block of \p count replicas,
  /// and cross-replica copies between blocks go through \p exchange. The
  /// connect, write and run calls then touch the local replicas only, and
  /// readTensor reads replica \p first unless told. \p count must divide
  /// the replication factor and \p first be a multiple of it (StreamError).
  void setLocalReplicas(unsigned first, unsigned count,
                        std::shared_ptr<ReplicaExchange> exchange);
  /// The first local replica and how many there are (all by default).
  std::pair<unsigned, unsigned> getLocalReplicas() const;

  /// Writes a createHostWrite tensor (every replica); \p bufEnd bounds it.
  void writeTensor(const std::string &handle, const void *buf,
                   const void *bufEnd);
  void writeTensor(const std::string &handle, unsigned replica, const void *buf,
                   const void *bufEnd);
  /// Reads a createHostRead tensor (the first local replica unless given).
  void readTensor(const std::string &handle, void *buf, void *bufEnd);
  void readTensor(const std::string &handle, unsigned replica, void *buf,
                  void *bufEnd);

  void copyToRemoteBuffer(const void *data, const std::string &handle,
                          std::uint64_t repeatIndex, unsigned replica = 0);
  void copyFromRemoteBuffer(const std::string &handle, void *data,
                            std::uint64_t repeatIndex, unsigned replica = 0);

  /// Where PrintTensor output goes (std::cout by default).
  void setPrintStream(std::ostream &os);

  /// Prints the memory and cycle summary ("Memory Usage:", per-step
  /// cycles) of what has run so far.
  void printProfileSummary(std::ostream &os,
                           const OptionFlags &options = {}) const;
  /// Writes profile.json into \p directory.
  void writeProfile(const std::string &directory) const;
  /// With autoReport options set, writes the profile of the runs since it
  /// was last written now, into autoReport.directory; throws Error when it
  /// cannot be written. The destructor writes a pending profile too, but
  /// can only print a failure (on standard error, whatever the log level):
  /// call this first where a lost profile must fail the program.
  void writePendingReport();

  const Executable &getExecutable() const;
  const ExecutionCounts &getExecutionCounts() const;
  /// Estimated busy cycles of everything run so far, per IPU: the sum of
  /// count x cycles of the steps on that IPU (plus gateway cycles). For
  /// per-IPU tables; the time a program takes is getElapsedCycles.
  std::vector<std::uint64_t> getCycleCounts() const;
  /// Estimated cycles from the start of the first run to the end of the
  /// last, the IPUs running in parallel between syncs (Timeline), plus
  /// gateway cycles. With one IPU it equals getCycleCounts()[0]; with
  /// several, work an IPU waits for counts, and work IPUs do side by side
  /// counts once.
  std::uint64_t getElapsedCycles() const;
  /// Estimated host-side cycles of everything run so far (HostCost.hpp):
  /// per run its round trip, per stream used its set-up, per callback
  /// transfer its hand-off, at the figures of the target loaded on.
  HostCycles getHostCycles() const;
  /// getElapsedCycles (device time) plus getHostCycles().total(): the time
  /// the runs take as the host sees them.
  std::uint64_t getHostInclusiveCycles() const;
  /// Host memory the loaded engine holds for the simulation, in bytes.
  std::size_t getHostMemoryBytes() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tessera
