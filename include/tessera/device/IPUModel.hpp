/// \file
/// The IPU Model, with the public fields of Poplar's poplar::IPUModel: set
/// the fields, then create a simulated device from them.
///
/// \code
///   IPUModel ipuModel;          // one ipu2, as Poplar's default
///   ipuModel.tilesPerIPU = 4;   // a small IPU for a quick test
///   Device device = ipuModel.createDevice();
/// \endcode
#pragma once

#include "tessera/device/Device.hpp"
#include "tessera/device/Target.hpp"
#include "tessera/support/OptionFlags.hpp"

#include <cstddef>
#include <string>

namespace tessera {

class IPUModel {
public:
  /// How long syncs take in the model.
  enum class RelativeSyncDelayType {
    /// Syncs cost the target's figures (CostFigures::syncCyclesOnChip and
    /// syncCyclesAcrossIpus) plus minIPUSyncDelay.
    AUTO,
    /// Syncs cost exactly minIPUSyncDelay cycles, on chip and across IPUs:
    /// the simplistic exchange Graphcore's tutorials ask for with
    /// `minIPUSyncDelay = 0; relativeSyncDelay = NO_DELAY;`.
    NO_DELAY,
  };

  /// A model of \p version ("ipu1", "ipu2", "ipu21") with that preset's
  /// figures in the fields below; throws OptionError for another version.
  explicit IPUModel(const char *version = "ipu2");

  /// The architecture preset the model started from.
  std::string version;
  unsigned numIPUs = 1;
  unsigned tilesPerIPU;
  std::size_t memoryBytesPerTile;
  /// Tile clock in Hz.
  double tileClockFrequency;
  unsigned exchangeBytesPerCycle;
  /// Extra cycles added to every sync (see RelativeSyncDelayType).
  unsigned minIPUSyncDelay = 0;
  RelativeSyncDelayType relativeSyncDelay = RelativeSyncDelayType::AUTO;
  /// Accepted for Poplar compatibility. The model always runs vertices as
  /// host code (built-in vertices are host C++; user codelets are compiled
  /// with the host compiler), so this changes nothing.
  bool compileIPUCode = false;
  unsigned numWorkerContexts;
  /// IPU-Link bandwidth per IPU in bytes/s.
  double ipuLinkBandwidth;
  /// Host link bandwidth in bytes/s.
  double hostLinkBandwidth;

  /// A new model device of the fields' size and figures. Not part of the
  /// system's device list and never exclusive: any number may exist.
  /// \p opts overrides further figures by name, as
  /// Target::createIPUTarget's overrides (for example
  /// {{"defaultVertexWorkerCycles", "50"}}); they win over the fields.
  Device createDevice(const OptionFlags &opts = {}) const;

  /// The target createDevice would give the device.
  Target getTarget(const OptionFlags &opts = {}) const;
};

} // namespace tessera
