/// \file
/// The simulated IPU system: how many IPUs of which architecture, the
/// devices they form (numbered as Graphcore numbers them, as `gc-info` lists
/// them) and who has them attached (as `gc-monitor` shows).
///
/// The system comes from the environment:
///  - TESSERA_SYSTEM: "<count>x<arch>" such as "16xipu2" or "4xipu21", or
///    just "<count>" for ipu2 IPUs;
///  - otherwise TESSERA_SYSTEM_CONFIG: the name of a JSON file such as
///    {"ipus": 16, "arch": "ipu2"};
///  - otherwise 16 ipu2 IPUs (an IPU-POD16).
/// TESSERA_SYSTEM_DIR names the folder of the IPUs' lock files and holder
/// records, shared by every process using the system (default
/// /tmp/tessera-system-<uid>).
///
/// Device ids: with N IPUs, ids 0..N-1 are the single IPUs, then come the
/// N/2 pairs {0,1}, {2,3}, ..., then the N/4 groups of four, and so on up to
/// the largest power of two not above N. For 16 IPUs: 0-15 singles, 16-23
/// pairs, 24-27 fours, 28-29 eights, 30 all sixteen.
#pragma once

#include "tessera/device/Device.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

/// One device of the system, for listings.
struct DeviceInfo {
  unsigned id = 0;
  /// The IPUs it is made of, in order.
  std::vector<unsigned> ipus;
  std::string arch;
  unsigned tilesPerIPU = 0;
  std::size_t bytesPerTile = 0;
};

/// One IPU held by a process, from its holder record.
struct AttachRecord {
  unsigned ipu = 0;
  /// The device the holder attached (which may span more IPUs).
  unsigned deviceId = 0;
  /// 0 when the lock is held but its record is not readable (being written,
  /// or removed by hand) or names a process that no longer exists (the
  /// lock then belongs to a process the holder forked); command and user
  /// are then "unknown".
  long pid = 0;
  /// The holder's command line, arguments separated by spaces.
  std::string command;
  std::string user;
  /// When it attached, ISO 8601 in UTC ("2024-05-01T12:34:56Z").
  std::string attachTime;
};

/// The size and architecture of a system.
struct SystemConfig {
  unsigned numIPUs = 16;
  std::string arch = "ipu2";

  /// Parses "16xipu2" / "4xipu21" / "8"; \p where names the source in
  /// errors. Throws DeviceError.
#if TESSERA_CXX17
  static SystemConfig fromSpec(std::string_view spec, std::string_view where);
  /// Parses {"ipus": 16, "arch": "ipu2"}; \p where names the source in
  /// errors. Throws DeviceError.
  static SystemConfig fromJson(std::string_view text, std::string_view where);
#endif
};

class DeviceManager {
public:
  /// The system the environment describes (see the file comment). Throws
  /// DeviceError when the description is bad or the lock folder cannot be
  /// created.
  static DeviceManager createDeviceManager();

  /// A manager for an explicit system whose lock files live in \p systemDir
  /// (created if missing).
  DeviceManager(SystemConfig config, std::string systemDir);

  /// IPUs in the system.
  std::size_t getNumIPUs() const { return config_.numIPUs; }
  const std::string &getArch() const { return config_.arch; }
  const std::string &getSystemDirectory() const { return systemDir_; }
  /// The number of device ids: N + N/2 + N/4 + ... for N IPUs.
  unsigned getNumDevices() const;

  /// Every device of \p requiredNumIPUs IPUs, lowest id first, none
  /// attached. Empty when the system has no device of that size (sizes are
  /// powers of two up to the IPU count), so that programs can fall back to
  /// an IPU Model as Graphcore's examples do. \p type must be
  /// TargetType::IPU: model devices come from IPUModel.
  std::vector<Device> getDevices(TargetType type,
                                 unsigned requiredNumIPUs) const;
  std::vector<Device> getDevices(unsigned requiredNumIPUs) const {
    return getDevices(TargetType::IPU, requiredNumIPUs);
  }
  /// The device with id \p id, not attached; throws DeviceError with the
  /// valid range for an unknown id.
  Device getDevice(unsigned id) const;
  /// Attaches and returns the free device of \p numIPUs IPUs with the lowest
  /// id (as PopART's acquireAvailableDevice). Throws DeviceError when the
  /// system has no device of that size (saying which sizes it has) or when
  /// every device of that size has an attached IPU (naming each device's
  /// holder).
  Device acquireAvailableDevice(unsigned numIPUs) const;
  /// The IPUs of device \p id; throws DeviceError for an unknown id.
  std::vector<unsigned> deviceIpus(unsigned id) const;

  /// Every device of the system, by id.
  std::vector<DeviceInfo> listDevices() const;
  /// The IPUs currently attached by some process, by IPU. Only IPUs whose
  /// lock is really held are listed: a process that died frees its IPUs and
  /// drops out even if it left a record behind.
  std::vector<AttachRecord> attachments() const;

private:
  SystemConfig config_;
  std::string systemDir_;
};

} // namespace tessera
