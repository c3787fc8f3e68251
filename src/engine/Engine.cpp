#include "tessera/engine/Engine.hpp"

#include "Runtime.hpp"

#include "tessera/compiler/Compiler.hpp"
#include "tessera/device/Device.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/engine/Profile.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/Logging.hpp"

#include <cstdio>
#include <cstring>
#include <string>

namespace tessera {
namespace {
std::string str(std::uint64_t v) { return std::to_string(v); }
} // namespace

struct Engine::Impl {
  Impl(Executable e, const OptionFlags &flags)
      : exe(std::move(e)), options(EngineOptions::parse(flags)),
        runtime(exe, options) {}
  // Runs since the last report are written when the engine goes away, as
  // Poplar's autoReport does: writing after every run would cost more than
  // a training loop's runs themselves. A destructor cannot throw, and a
  // profile the user asked for must not vanish silently (logging is off by
  // default), so the failure goes to standard error whatever the log level;
  // writePendingReport() lets callers fail properly first.
  ~Impl() {
    if (!reportPending)
      return;
    try {
      autoReport();
    } catch (const std::exception &e) {
      logging::error("engine: the profile could not be written: {}", e.what());
      if (!logging::enabled(logging::Level::ERR))
        std::fprintf(stderr,
                     "tessera: error: the engine's profile was not written: "
                     "%s\n",
                     e.what());
    }
  }
  Executable exe;
  EngineOptions options;
  engine::Runtime runtime;
  bool reportPending = false;

  const HostAccessInfo &access(const std::string &handle, bool write) const {
    for (const HostAccessInfo &h : exe.hostAccesses)
      if (h.handle == handle) {
        if (h.write != write)
          throw StreamError("\"" + handle + "\" is a host " +
                            (h.write ? "write" : "read") + " handle; use " +
                            (h.write ? "writeTensor" : "readTensor") +
                            " with it");
        return h;
      }
    throw StreamError("no tensor has the host " +
                      std::string(write ? "write" : "read") + " handle \"" +
                      handle + "\"; create it with graph.createHost" +
                      (write ? "Write" : "Read") + "(\"" + handle +
                      "\", tensor) before compiling");
  }

  std::uint32_t stream(const std::string &handle) const {
    for (std::uint32_t i = 0; i < exe.streams.size(); ++i)
      if (exe.streams[i].handle == handle)
        return i;
    std::string known;
    for (const auto &s : exe.streams)
      known += (known.empty() ? "" : ", ") + s.handle;
    throw StreamError("no stream has the handle \"" + handle +
                      "\" (streams: " + (known.empty() ? "none" : known) + ")");
  }

  std::uint32_t remote(const std::string &handle) const {
    for (std::uint32_t i = 0; i < exe.remoteBuffers.size(); ++i)
      if (exe.remoteBuffers[i].handle == handle)
        return i;
    throw StreamError("no remote buffer has the handle \"" + handle + "\"");
  }

  void checkReplica(unsigned r) const {
    if (r >= exe.replicationFactor)
      throw StreamError("replica " + str(r) +
                        " does not exist: the graph has " +
                        str(exe.replicationFactor) + " replicas");
  }

  void checkLoaded(const char *what) const {
    if (!runtime.loaded())
      throw DeviceError(std::string(what) +
                        ": the engine is not loaded; call engine.load(device) "
                        "first");
  }

  /// One replica's connection of a BROADCAST stream would feed nothing:
  /// the first local replica's connection feeds them all.
  void checkNotBroadcast(const std::string &handle, unsigned replica) const {
    if (exe.streams[stream(handle)].broadcast)
      throw StreamError("stream \"" + handle + "\" is a BROADCAST stream: " +
                        "one connection feeds every replica, so it cannot " +
                        "be connected for replica " + str(replica) +
                        " alone; connect it without a replica index");
  }

  void connect(const std::string &handle, unsigned replica,
               engine::StreamConnection c) {
    const std::uint32_t id = stream(handle);
    checkReplica(replica);
    runtime.streams()[id][replica] = std::move(c);
  }

  engine::StreamConnection buffer(const std::string &handle, void *begin,
                                  void *end) const {
    const StreamInfo &s = exe.streams[stream(handle)];
    const std::size_t transfer = s.numElements * typeSize(s.type);
    const auto size = static_cast<std::size_t>(static_cast<std::byte *>(end) -
                                               static_cast<std::byte *>(begin));
    if (!begin || end < begin || size == 0 || size % transfer != 0)
      throw StreamError("connectStream \"" + handle + "\": the buffer holds " +
                        str(size) + " bytes but one transfer is " +
                        str(transfer) + " bytes (" + str(s.numElements) +
                        " x " + std::string(typeName(s.type)) +
                        "); give a buffer of a whole number of transfers");
    engine::StreamConnection c;
    c.kind = engine::StreamConnection::Kind::Buffer;
    c.begin = static_cast<std::byte *>(begin);
    c.end = static_cast<std::byte *>(end);
    return c;
  }

  void autoReport() {
    reportPending = false;
    if (!options.profileGraph() && !options.profileExecution())
      return;
    tessera::writeProfile(options.autoReportDirectory, exe,
                          options.profileExecution() ? &runtime.counts()
                                                     : nullptr);
  }
};

Engine::Engine(const Graph &graph, const program::Program &prog,
               const OptionFlags &options)
    : Engine(graph, std::vector<program::Program>{prog}, options) {}

Engine::Engine(const Graph &graph, const std::vector<program::Program> &progs,
               const OptionFlags &options)
    : Engine(compileGraph(graph, progs, options), options) {}

Engine::Engine(Executable exe, const OptionFlags &options)
    : impl_(std::make_unique<Impl>(std::move(exe), options)) {}

Engine::~Engine() = default;
Engine::Engine(Engine &&) noexcept = default;
Engine &Engine::operator=(Engine &&) noexcept = default;

void Engine::load(Device &device) {
  const Target &t = device.getTarget();
  const Executable &e = impl_->exe;
  if (t.getNumIPUs() != e.numIPUs * e.replicationFactor ||
      t.getTilesPerIPU() != e.tilesPerIPU)
    throw DeviceError("engine.load: the executable needs " +
                      str(e.numIPUs * e.replicationFactor) + " IPUs (" +
                      str(e.replicationFactor) + " replicas of " +
                      str(e.numIPUs) + ") of " + str(e.tilesPerIPU) +
                      " tiles, but the device has " + str(t.getNumIPUs()) +
                      " IPUs of " + str(t.getTilesPerIPU()) +
                      " tiles; load it on a matching device");
  if (!device.isModel() && !device.isAttached())
    throw DeviceError("engine.load: device " + str(device.getId()) +
                      " is not attached; call device.attach() first");
  impl_->runtime.load();
  impl_->runtime.setTarget(t);
  if (impl_->options.profileGraph())
    impl_->autoReport();
}

void Engine::run(unsigned prog, const std::string &debugName) {
  impl_->checkLoaded("engine.run");
  if (prog >= impl_->exe.programEntry.size())
    throw GraphError("engine.run: program " + str(prog) +
                     " does not exist; the engine has " +
                     str(impl_->exe.programEntry.size()) + " programs");
  logging::debug("running program {} {}", prog, debugName);
  impl_->runtime.run(prog);
  impl_->reportPending = impl_->options.profileExecution();
}

void Engine::setLocalReplicas(unsigned first, unsigned count,
                              std::shared_ptr<ReplicaExchange> exchange) {
  const unsigned R = impl_->exe.replicationFactor;
  if (count == 0 || R % count != 0 || first % count != 0 || first >= R)
    throw StreamError("setLocalReplicas: " + str(count) +
                      " local replicas from replica " + str(first) +
                      " do not split the " + str(R) +
                      " replicas into equal blocks; give a count dividing " +
                      str(R) + " and a first replica that is a multiple of it");
  if (count < R && !exchange)
    throw StreamError("setLocalReplicas: " + str(count) + " of " + str(R) +
                      " replicas run here, so cross-replica copies need a "
                      "ReplicaExchange to reach the others; give one");
  impl_->runtime.setLocalReplicas(first, count, std::move(exchange));
}

std::pair<unsigned, unsigned> Engine::getLocalReplicas() const {
  return {impl_->runtime.localBegin(),
          impl_->runtime.localEnd() - impl_->runtime.localBegin()};
}

void Engine::connectStream(const std::string &handle, void *begin, void *end) {
  const engine::StreamConnection c = impl_->buffer(handle, begin, end);
  for (unsigned r = impl_->runtime.localBegin(); r < impl_->runtime.localEnd();
       ++r)
    impl_->connect(handle, r, c);
}

void Engine::connectStream(const std::string &handle, void *p) {
  const StreamInfo &s = impl_->exe.streams[impl_->stream(handle)];
  std::byte *b = static_cast<std::byte *>(p);
  connectStream(handle, b, b + s.numElements * typeSize(s.type));
}

void Engine::connectStream(const std::string &handle, unsigned replica,
                           void *begin, void *end) {
  impl_->checkNotBroadcast(handle, replica);
  impl_->connect(handle, replica, impl_->buffer(handle, begin, end));
}

void Engine::connectStreamToCallback(
    const std::string &handle, const std::function<void(void *)> &callback) {
  engine::StreamConnection c;
  c.kind = engine::StreamConnection::Kind::Function;
  c.function = callback;
  for (unsigned r = impl_->runtime.localBegin(); r < impl_->runtime.localEnd();
       ++r)
    impl_->connect(handle, r, c);
}

void Engine::connectStreamToCallback(const std::string &handle,
                                     unsigned replica,
                                     std::function<void(void *)> callback) {
  impl_->checkNotBroadcast(handle, replica);
  engine::StreamConnection c;
  c.kind = engine::StreamConnection::Kind::Function;
  c.function = std::move(callback);
  impl_->connect(handle, replica, std::move(c));
}

void Engine::connectStream(const std::string &handle,
                           std::unique_ptr<StreamCallback> callback) {
  engine::StreamConnection c;
  c.kind = engine::StreamConnection::Kind::Callback;
  c.callback = std::shared_ptr<StreamCallback>(std::move(callback));
  for (unsigned r = impl_->runtime.localBegin(); r < impl_->runtime.localEnd();
       ++r)
    impl_->connect(handle, r, c);
}

void Engine::connectStreamToCallback(const std::string &handle,
                                     std::unique_ptr<StreamCallback> callback) {
  connectStream(handle, std::move(callback));
}

void Engine::connectStreamToCallback(const std::string &handle,
                                     unsigned replica,
                                     std::unique_ptr<StreamCallback> callback) {
  impl_->checkNotBroadcast(handle, replica);
  engine::StreamConnection c;
  c.kind = engine::StreamConnection::Kind::Callback;
  c.callback = std::shared_ptr<StreamCallback>(std::move(callback));
  impl_->connect(handle, replica, std::move(c));
}

namespace {
void checkSize(const char *what, const std::string &handle,
               const HostAccessInfo &h, const void *buf, const void *end) {
  const std::size_t need = h.numElements * typeSize(h.type);
  const auto have =
      static_cast<std::size_t>(static_cast<const std::byte *>(end) -
                               static_cast<const std::byte *>(buf));
  if ((need > 0 && !buf) || end < buf || have != need)
    throw StreamError(
        std::string(what) + " \"" + handle + "\": the host " + "buffer holds " +
        str(have) + " bytes but the tensor is " + str(need) + " bytes (" +
        str(h.numElements) + " x " + std::string(typeName(h.type)) + ")");
}
} // namespace

void Engine::writeTensor(const std::string &handle, const void *buf,
                         const void *bufEnd) {
  for (unsigned r = impl_->runtime.localBegin(); r < impl_->runtime.localEnd();
       ++r)
    writeTensor(handle, r, buf, bufEnd);
}

void Engine::writeTensor(const std::string &handle, unsigned replica,
                         const void *buf, const void *bufEnd) {
  impl_->checkLoaded("engine.writeTensor");
  impl_->checkReplica(replica);
  const HostAccessInfo &h = impl_->access(handle, true);
  checkSize("writeTensor", handle, h, buf, bufEnd);
  engine::Runtime::applyOps(impl_->exe.copyOps.data() + h.firstOp, h.numOps,
                            static_cast<const std::byte *>(buf),
                            impl_->runtime.replicaMemory(replica));
}

void Engine::readTensor(const std::string &handle, void *buf, void *bufEnd) {
  readTensor(handle, impl_->runtime.localBegin(), buf, bufEnd);
}

void Engine::readTensor(const std::string &handle, unsigned replica, void *buf,
                        void *bufEnd) {
  impl_->checkLoaded("engine.readTensor");
  impl_->checkReplica(replica);
  const HostAccessInfo &h = impl_->access(handle, false);
  checkSize("readTensor", handle, h, buf, bufEnd);
  engine::Runtime::applyOps(impl_->exe.copyOps.data() + h.firstOp, h.numOps,
                            impl_->runtime.replicaMemory(replica),
                            static_cast<std::byte *>(buf));
}

void Engine::copyToRemoteBuffer(const void *data, const std::string &handle,
                                std::uint64_t repeatIndex, unsigned replica) {
  impl_->checkLoaded("engine.copyToRemoteBuffer");
  impl_->checkReplica(replica);
  const std::uint32_t id = impl_->remote(handle);
  const RemoteBufferInfo &rb = impl_->exe.remoteBuffers[id];
  if (repeatIndex >= rb.repeats)
    throw StreamError("copyToRemoteBuffer \"" + handle + "\": repeat " +
                      str(repeatIndex) + " is beyond its " + str(rb.repeats) +
                      " repeats");
  const std::size_t slot = rb.numElements * typeSize(rb.type);
  std::memcpy(impl_->runtime.remote(id, replica).data() + repeatIndex * slot,
              data, slot);
}

void Engine::copyFromRemoteBuffer(const std::string &handle, void *data,
                                  std::uint64_t repeatIndex, unsigned replica) {
  impl_->checkLoaded("engine.copyFromRemoteBuffer");
  impl_->checkReplica(replica);
  const std::uint32_t id = impl_->remote(handle);
  const RemoteBufferInfo &rb = impl_->exe.remoteBuffers[id];
  if (repeatIndex >= rb.repeats)
    throw StreamError("copyFromRemoteBuffer \"" + handle + "\": repeat " +
                      str(repeatIndex) + " is beyond its " + str(rb.repeats) +
                      " repeats");
  const std::size_t slot = rb.numElements * typeSize(rb.type);
  std::memcpy(data,
              impl_->runtime.remote(id, replica).data() + repeatIndex * slot,
              slot);
}

void Engine::setPrintStream(std::ostream &os) {
  impl_->runtime.setPrintStream(os);
}

void Engine::printProfileSummary(std::ostream &os,
                                 const OptionFlags &options) const {
  tessera::printProfileSummary(os, impl_->exe, impl_->runtime.counts(),
                               options);
}

void Engine::writeProfile(const std::string &directory) const {
  tessera::writeProfile(directory, impl_->exe, &impl_->runtime.counts());
}

void Engine::writePendingReport() {
  if (impl_->reportPending)
    impl_->autoReport();
}

const Executable &Engine::getExecutable() const { return impl_->exe; }

const ExecutionCounts &Engine::getExecutionCounts() const {
  return impl_->runtime.counts();
}

std::vector<std::uint64_t> Engine::getCycleCounts() const {
  std::vector<std::uint64_t> total(impl_->exe.numIPUs, 0);
  const auto &counts = impl_->runtime.counts().stepCounts;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (!counts[i])
      continue;
    const auto &c = impl_->exe.estimates[i].ipuCycles;
    for (std::size_t ipu = 0; ipu < c.size() && ipu < total.size(); ++ipu)
      total[ipu] += counts[i] * c[ipu];
  }
  for (std::uint64_t &ipu : total)
    ipu += impl_->runtime.counts().gatewayCycles;
  return total;
}

std::uint64_t Engine::getElapsedCycles() const {
  return elapsedCycles(impl_->exe, impl_->runtime.counts());
}

HostCycles Engine::getHostCycles() const {
  return impl_->runtime.counts().hostCycles;
}

std::uint64_t Engine::getHostInclusiveCycles() const {
  return hostInclusiveCycles(impl_->exe, impl_->runtime.counts());
}

std::size_t Engine::getHostMemoryBytes() const {
  return impl_->runtime.hostMemoryBytes();
}

} // namespace tessera
