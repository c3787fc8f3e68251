#include "tessera/session/Feeds.hpp"

#include "tessera/support/Error.hpp"

#include <algorithm>
#include <cstring>
#include <exception>

namespace tessera::session {
namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

const StreamInfo &findStream(const Engine &engine, const std::string &handle,
                             bool hostToDevice, const char *who) {
  for (const StreamInfo &s : engine.getExecutable().streams)
    if (s.handle == handle) {
      if (s.hostToDevice != hostToDevice)
        throw StreamError(
            std::string(who) + ": stream \"" + handle + "\" is a " +
            (s.hostToDevice ? "host-to-device" : "device-to-host") +
            " FIFO; connect a " +
            (hostToDevice ? "host-to-device" : "device-to-host") + " one");
      return s;
    }
  throw StreamError(std::string(who) + ": the program has no stream \"" +
                    handle +
                    "\"; create it with graph.addHostToDevice"
                    "FIFO / addDeviceToHostFIFO");
}

} // namespace

// The producer thread fills `ready`; component c of the device's k-th
// request reads element k; an element leaves the queue once every
// component has read it.
struct Infeed::Shared {
  Shared(data::Dataset d, std::size_t depth)
      : dataset(std::move(d)), depth(depth), taken(dataset.spec().size(), 0) {}
  data::Dataset dataset;
  std::size_t depth;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<data::Element> ready;
  std::uint64_t base = 0;           ///< element index of ready.front()
  std::vector<std::uint64_t> taken; ///< per component: elements read
  bool exhausted = false, stopping = false;
  std::exception_ptr failure;
  std::thread producer;

  void produce() {
    try {
      data::Iterator it = dataset.iterator();
      for (;;) {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return stopping || ready.size() < depth; });
        if (stopping)
          return;
        lock.unlock();
        std::optional<data::Element> e = it.next();
        lock.lock();
        if (!e) {
          exhausted = true;
          changed.notify_all();
          return;
        }
        ready.push_back(std::move(*e));
        changed.notify_all();
      }
    } catch (...) {
      std::lock_guard lock(mutex);
      failure = std::current_exception();
      changed.notify_all();
    }
  }

  void fetch(std::size_t c, void *dst) {
    std::unique_lock lock(mutex);
    const std::uint64_t k = taken[c];
    changed.wait(
        lock, [&] { return failure || exhausted || k - base < ready.size(); });
    if (k - base >= ready.size()) {
      if (failure)
        std::rethrow_exception(failure);
      throw StreamError("infeed: the dataset ran out after " + str(k) +
                        " elements but the device asked for another; "
                        "repeat() the dataset or run fewer steps");
    }
    const data::HostTensor &t = ready[k - base][c];
    std::memcpy(dst, t.data(), t.numBytes());
    ++taken[c];
    const std::uint64_t done = *std::min_element(taken.begin(), taken.end());
    bool popped = false;
    while (base < done) {
      ready.pop_front();
      ++base;
      popped = true;
    }
    if (popped)
      changed.notify_all();
  }
};

Infeed::Infeed(data::Dataset dataset, std::size_t prefetchDepth)
    : shared_(std::make_shared<Shared>(
          std::move(dataset), std::max<std::size_t>(prefetchDepth, 1))) {}

Infeed::~Infeed() {
  {
    std::lock_guard lock(shared_->mutex);
    shared_->stopping = true;
  }
  shared_->changed.notify_all();
  if (shared_->producer.joinable())
    shared_->producer.join();
}

void Infeed::connect(Engine &engine, const std::vector<std::string> &handles) {
  const data::ElementSpec &spec = shared_->dataset.spec();
  if (handles.size() != spec.size())
    throw StreamError("infeed: the dataset's elements have " +
                      str(spec.size()) + " components but " +
                      str(handles.size()) +
                      " streams were given; give one stream per component");
  for (std::size_t c = 0; c < handles.size(); ++c) {
    const StreamInfo &s = findStream(engine, handles[c], true, "infeed");
    const data::ComponentSpec &cs = spec[c];
    if (std::count(cs.shape.begin(), cs.shape.end(), data::anyDim))
      throw StreamError("infeed: component " + str(c) + " has shape " +
                        data::shapeString(cs.shape) +
                        ", which varies between elements; batch with "
                        "dropRemainder = true so every step has the same "
                        "shape");
    if (cs.type != s.type || data::numElements(cs.shape) != s.numElements)
      throw StreamError(
          "infeed: component " + str(c) + " is " +
          data::typeAndShapeString(cs.type, cs.shape) + " but stream \"" +
          handles[c] + "\" takes " + str(s.numElements) + " elements of " +
          std::string(typeName(s.type)) +
          "; map the dataset to the model's input type and shape");
  }
  const auto [first, local] = engine.getLocalReplicas();
  for (std::size_t c = 0; c < handles.size(); ++c)
    for (unsigned r = first; r < first + local; ++r)
      engine.connectStreamToCallback(
          handles[c], r, [s = shared_, c](void *p) { s->fetch(c, p); });
  if (!shared_->producer.joinable())
    shared_->producer = std::thread([s = shared_.get()] { s->produce(); });
}

std::uint64_t Infeed::elementsTaken() const {
  std::lock_guard lock(shared_->mutex);
  return *std::min_element(shared_->taken.begin(), shared_->taken.end());
}

// Component c's k-th transfer fills slot k of `partial`; a step's element
// is queued once all its components arrived.
struct Outfeed::Shared {
  OutfeedMode mode;
  mutable std::mutex mutex;
  std::condition_variable arrived;
  std::vector<StreamInfo> streams;
  std::deque<data::Element> partial;
  std::uint64_t partialBase = 0;
  std::vector<std::uint64_t> received;
  std::deque<data::Element> queue;

  void receive(std::size_t c, const void *src) {
    std::lock_guard lock(mutex);
    const std::uint64_t k = received[c]++;
    while (partial.size() <= k - partialBase)
      partial.emplace_back(std::vector<data::HostTensor>(streams.size()));
    const StreamInfo &s = streams[c];
    data::HostTensor t(s.type, {static_cast<std::size_t>(s.numElements)});
    std::memcpy(t.data(), src, t.numBytes());
    partial[k - partialBase][c] = std::move(t);
    const std::uint64_t done =
        *std::min_element(received.begin(), received.end());
    while (partialBase < done) {
      if (mode == OutfeedMode::LAST)
        queue.clear();
      queue.push_back(std::move(partial.front()));
      partial.pop_front();
      ++partialBase;
      arrived.notify_all();
    }
  }
};

Outfeed::Outfeed(OutfeedMode mode) : shared_(std::make_shared<Shared>()) {
  shared_->mode = mode;
}

void Outfeed::connect(Engine &engine, const std::vector<std::string> &handles) {
  std::lock_guard lock(shared_->mutex);
  shared_->streams.clear();
  for (const std::string &h : handles)
    shared_->streams.push_back(findStream(engine, h, false, "outfeed"));
  shared_->received.assign(handles.size(), 0);
  const auto [first, local] = engine.getLocalReplicas();
  for (std::size_t c = 0; c < handles.size(); ++c)
    for (unsigned r = first; r < first + local; ++r)
      engine.connectStreamToCallback(
          handles[c], r, [s = shared_, c](void *p) { s->receive(c, p); });
}

std::optional<data::Element> Outfeed::dequeue(bool wait) {
  std::unique_lock lock(shared_->mutex);
  if (wait)
    shared_->arrived.wait(lock, [&] { return !shared_->queue.empty(); });
  if (shared_->queue.empty())
    return std::nullopt;
  data::Element e = std::move(shared_->queue.front());
  shared_->queue.pop_front();
  return e;
}

std::vector<data::Element> Outfeed::dequeueAll() {
  std::lock_guard lock(shared_->mutex);
  std::vector<data::Element> all(
      std::make_move_iterator(shared_->queue.begin()),
      std::make_move_iterator(shared_->queue.end()));
  shared_->queue.clear();
  return all;
}

std::size_t Outfeed::size() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->queue.size();
}

} // namespace tessera::session
