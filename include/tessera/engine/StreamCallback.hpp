/// \file
/// Stream callbacks: a host function object that supplies (host-to-device)
/// or receives (device-to-host) one transfer of a FIFO at a time.
#pragma once

namespace tessera {

/// Poplar's StreamCallback: prefetch() may fill a transfer early (return
/// Success) or decline (NotAvailable); fetch() fills it when the device asks
/// (host-to-device) or receives it (device-to-host); complete() follows each
/// transfer.
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
