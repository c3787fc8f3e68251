/// \file
/// Stream callbacks: a host function object that supplies (host-to-device)
/// or receives (device-to-host) one transfer of a FIFO at a time.
#pragma once

namespace tessera {

/// Poplar's StreamCallback. For a host-to-device stream: fetch() fills the
/// transfer a copy needs now; with the engine option exchange.enablePrefetch
/// (on by default), after each transfer the engine calls prefetch() for the
/// next one, which may fill it early (return Success) or decline
/// (NotAvailable: fetch() is called when the copy runs). complete() follows
/// each transfer the device consumed, fetched or prefetched, in order.
/// Prefetched data that no copy consumed before the run ended is dropped
/// and invalidatePrefetched() is called (once per callback): the callback
/// must then give that data again. For a device-to-host stream, fetch()
/// receives each transfer and complete() follows it.
class StreamCallback {
public:
  enum class Result { Success, NotAvailable };
  virtual ~StreamCallback() = default;
  virtual Result prefetch(void *p) {
    (void)p;
    return Result::NotAvailable;
  }
  virtual void fetch(void *p) = 0;
  virtual void complete() = 0;
  virtual void invalidatePrefetched() {}
};

/// The simple form: invoke() is called with each transfer's buffer.
class LegacyStreamCallback : public StreamCallback {
public:
  virtual void invoke(void *p) = 0;
  void fetch(void *p) final { invoke(p); }
  void complete() final {}
};

} // namespace tessera
