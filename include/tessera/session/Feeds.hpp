/// \file
/// Infeeds and outfeeds: how a training loop running on the device talks to
/// the host, as TensorFlow-for-IPU's IPUInfeedQueue and IPUOutfeedQueue do.
///
/// An Infeed connects each component of a dataset's elements to a
/// host-to-device stream; a host thread keeps the next elements ready
/// (prefetch depth) so the device never waits for the pipeline when it can
/// keep up. An Outfeed connects device-to-host streams and keeps either
/// every step's values (ALL) or the last (LAST); it can be read from
/// another thread while the loop still runs.
#pragma once

#include "tessera/data/Dataset.hpp"
#include "tessera/engine/Engine.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tessera::session {

class Infeed {
public:
  /// Feeds \p dataset, keeping up to \p prefetchDepth elements ready.
  explicit Infeed(data::Dataset dataset, std::size_t prefetchDepth = 4);
  ~Infeed();
  Infeed(const Infeed &) = delete;
  Infeed &operator=(const Infeed &) = delete;

  /// Connects component i of each element to stream \p handles[i] of every
  /// replica of \p engine (replicas take consecutive elements). Throws
  /// StreamError when a stream is missing, not host-to-device, or its type
  /// or size differs from the component's, naming both.
  void connect(Engine &engine, const std::vector<std::string> &handles);

  /// Elements the device has taken so far.
  std::uint64_t elementsTaken() const;

private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

enum class OutfeedMode { ALL, LAST };

class Outfeed {
public:
  /// An outfeed keeping every step's values (ALL) or the last (LAST).
  explicit Outfeed(OutfeedMode mode = OutfeedMode::ALL);

  /// Connects stream \p handles[i] of every replica of \p engine as
  /// component i; each step queues one element per replica, in replica
  /// order. Throws StreamError for a missing or host-to-device stream.
  void connect(Engine &engine, const std::vector<std::string> &handles);

  /// Removes and returns the oldest step's values (ALL) or the last one
  /// (LAST); waits for one when \p wait, else returns nullopt when none.
  std::optional<data::Element> dequeue(bool wait = false);
  /// Every queued step's values, oldest first, removing them.
  std::vector<data::Element> dequeueAll();
  /// Steps queued now.
  std::size_t size() const;

private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

} // namespace tessera::session
