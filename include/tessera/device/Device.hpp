/// \file
/// A device: a set of IPUs a program runs on, either a simulated IPU Model
/// (IPUModel::createDevice) or IPUs of the simulated system
/// (DeviceManager::getDevice). System IPUs are exclusive across processes
/// while attached, as real ones are.
#pragma once

#include "tessera/device/Target.hpp"

#include <memory>
#include <vector>

namespace tessera {

/// What a device is, as Poplar's TargetType.
enum class TargetType {
  IPU,       ///< IPUs of the (simulated) system, attached exclusively.
  IPU_MODEL, ///< An IPU Model of any size, private to the process.
};

/// A set of IPUs. Movable, not copyable; destroying it detaches it. A
/// default-constructed Device is empty: a placeholder to move a real one
/// into (`device = std::move(devices[i]);`).
class Device {
public:
  Device();
  Device(Device &&other) noexcept;
  /// Detaches this device first if it is attached.
  Device &operator=(Device &&other) noexcept;
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;
  ~Device();

  /// The machine the device is; throws DeviceError on an empty Device.
  const Target &getTarget() const;
  /// The system's device id (Graphcore's numbering: single IPUs first, then
  /// groups of 2, 4, ...). 0 for an IPU Model device.
  unsigned getId() const;
  unsigned getNumIPUs() const;
  /// The system IPUs the device is made of; empty for an IPU Model.
  const std::vector<unsigned> &ipuIds() const;
  TargetType getTargetType() const;
  bool isModel() const { return getTargetType() == TargetType::IPU_MODEL; }
  /// Whether this holds a device (false after default construction or a
  /// move).
  explicit operator bool() const { return impl_ != nullptr; }

  /// Attaches the device; returns true. A model always attaches. A system
  /// device locks each of its IPUs; if any is held (by another process, or
  /// by another Device of this process) it releases what it took and throws
  /// DeviceError naming the IPU and its holder. Attaching an attached
  /// device does nothing.
  bool attach();
  /// As attach, but returns false instead of throwing when an IPU is held
  /// (Poplar's `find_if(devices, [](Device &d) { return d.attach(); })`
  /// idiom). Other failures still throw.
  bool tryAttach();
  /// Releases the device's IPUs; does nothing when not attached.
  void detach();
  bool isAttached() const;

private:
  struct Impl;
  explicit Device(std::unique_ptr<Impl> impl);
  const Impl &impl() const;
  bool attachImpl(bool throwIfHeld);

  std::unique_ptr<Impl> impl_;

  friend class IPUModel;
  friend class DeviceManager;
};

} // namespace tessera
