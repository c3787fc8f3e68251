/// \file
/// ReplicaExchange: how an engine that runs only some of an executable's
/// replicas (one instance of several, PopDist-style) moves the data of its
/// cross-replica copies to and from the replicas other processes run.
/// The engine does not know the transport; src/dist implements it on MPI.
/// Plain pointers, not std::byte: Poplar's headers reach this one and
/// compile as C++11.
#pragma once

#include <cstddef>
#include <vector>

namespace tessera {

class ReplicaExchange {
public:
  virtual ~ReplicaExchange() = default;
  /// Every instance calls this at the same cross-replica step, in program
  /// order. Instance i contributes \p bytesPerInstance[i] bytes (this
  /// instance's are at \p send); \p recv receives every instance's bytes,
  /// one after another in instance order. Throws Error when another
  /// instance is lost.
  virtual void allGather(const void *send,
                         const std::vector<std::size_t> &bytesPerInstance,
                         void *recv) = 0;
};

} // namespace tessera
