/// \file
/// The machine a graph is built for: how many IPUs, tiles and bytes, how fast
/// the clock and the links are, and every figure of the cost model.
///
/// All numbers live in two tables: TargetFigures (the chip, from Graphcore's
/// public datasheets) and CostFigures (cycle estimates of the cost model).
/// Each field is documented with its source. Every figure can be overridden
/// by name: `Target::createIPUTarget(1, "ipu2", {{"syncCyclesOnChip", "0"}})`,
/// and an override reaches every estimate that depends on the figure: the
/// vertex estimators and the planners read the target they are given, and
/// the formulas for exchange, sync and links live in CostFormulas.hpp.
#pragma once

#include "tessera/support/OptionFlags.hpp"
#include "tessera/support/Type.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

/// Facts about the chip and the system around it. Sources: Graphcore's
/// IPU-M2000, Bow-2000 and C2 datasheets and the IPU Programmer's Guide.
struct TargetFigures {
  /// Tiles on one IPU: 1216 (Mk1 GC2), 1472 (Mk2 GC200, Bow).
  unsigned tilesPerIPU = 1472;
  /// In-processor memory per tile: 256 KiB (Mk1), 624 KiB (Mk2, Bow;
  /// 1472 x 624 KiB = 897 MiB per IPU, the "900 MB" of the datasheet).
  std::size_t bytesPerTile = 638976;
  /// Tile clock in Hz: 1.6 GHz (Mk1), 1.33 GHz (Mk2), 1.85 GHz (Bow).
  double tileClockFrequency = 1.33e9;
  /// Hardware worker threads per tile (six on every IPU, IPU Programmer's
  /// Guide); a worker issues one instruction every numWorkerContexts tile
  /// cycles, so a compute step costs this many times its busiest worker.
  unsigned numWorkerContexts = 6;
  /// Width of the tile's load/store and vector data path in bits: 64, so a
  /// vector holds 2 floats or 4 halves (IPU Programmer's Guide). Every
  /// estimator counts its per-vector cycles in vectors of this width.
  unsigned dataPathWidth = 64;
  /// Bytes a tile sends or receives per tile cycle over the on-chip exchange
  /// (4 on every IPU; about 8 TB/s per Mk2 chip).
  unsigned exchangeBytesPerCycle = 4;
  /// Tiles that share one exchange bus: 2 on Mk2 and Bow, where tiles 2t
  /// and 2t+1 form a pair whose bus carries bytes both of them receive to
  /// both at once, at twice exchangeBytesPerCycle (the "64-bit exchange"
  /// Graphcore's poplibs plans for: Target::getTilesPerSharedExchangeBus
  /// and supportsExchangeBusSharing, used by poplin's ExchangeEstimator).
  /// 1 models no sharing; Mk1 is not assumed to share.
  unsigned tilesPerSharedExchangeBus = 2;
  /// IPU-Link bandwidth of one chip in bytes/s: 320 GB/s per Mk2 or Bow chip
  /// (10 links), 64 GB/s per Mk1 card link.
  double ipuLinkBandwidth = 320e9;
  /// Gateway-Link (GW-Link) bandwidth of one IPU-Machine in bytes/s: what
  /// replicas on different machines (the instances of `tessera poprun`)
  /// exchange over. An IPU-M2000's IPU-Gateway has two 100 Gb/s GW-Links
  /// for scale-out beyond a POD (Graphcore's IPU-M2000 datasheet and
  /// product page, 2020): 25 GB/s per machine of 4 IPUs.
  double gwLinkBandwidth = 25e9;
  /// Host link bandwidth in bytes/s: PCIe Gen4 x16, 64 GB/s as Graphcore
  /// quotes it (both directions together; one direction carries half).
  double hostLinkBandwidth = 64e9;
  /// Streaming (remote) memory per IPU in bytes: an IPU-M2000 has up to
  /// 256 GiB of DDR for its 4 IPUs, so 64 GiB each (IPU-M2000 datasheet).
  /// Mk1 C2 cards have none. A graph whose remote buffers need more than
  /// its IPUs have does not compile (MemoryError).
  std::uint64_t remoteMemoryBytesPerIPU = 64ull << 30;
  /// Streaming memory bandwidth per IPU in bytes/s, at which remote buffer
  /// copies move their bytes. Estimate: the IPU-M2000 gateway's DDR4 shared
  /// by four IPUs; Graphcore publishes no per-IPU figure.
  double remoteMemoryBandwidth = 16e9;
  /// Multiply-accumulates per tile cycle of the accumulating matrix product
  /// (AMP) unit, fp32 inputs and partials: 8 (Mk1: 31.1 TFLOPS), 16 (Mk2:
  /// 62.5 TFLOPS; Bow: 87 TFLOPS).
  unsigned fp32MacsPerCycle = 16;
  /// fp16 inputs, fp16 partials: 32 (Mk1), 64 (Mk2: 250 TFLOPS; Bow: 350).
  unsigned fp16MacsPerCycleHalfPartials = 64;
  /// fp16 inputs, fp32 partials: 32 (Mk1, Mk2, Bow).
  unsigned fp16MacsPerCycleFloatPartials = 32;
};

/// The cost model's cycle figures: how long steps take, in tile cycles
/// unless a name says "worker cycles" (one worker context's issue slots; a
/// compute step costs numWorkerContexts x its busiest worker's cycles).
/// Figures marked "estimate" are Tessera's own choices, documented so that
/// a user who knows better can override them.
struct CostFigures {
  /// Supervisor cycles to launch one vertex on a tile: ~11 in Poplar's own
  /// estimates for elementwise vertices.
  unsigned supervisorCyclesPerVertex = 11;
  /// Fixed worker cycles of a float binary-op vertex (add, mul, ...): ~29 in
  /// Poplar's estimates for popops elementwise vertices.
  unsigned binaryOpWorkerCycles = 29;
  /// Worker cycles per 64-bit vector of a binary op: ~3 (two loads, one
  /// op+store), so ~1.5 tile cycles per float add on a full tile.
  unsigned binaryOpWorkerCyclesPerVector = 3;
  /// Fixed worker cycles of a one-operand vertex (random draws, and the
  /// per-row setup of the softmax and loss row vertices). Estimate: a
  /// binary op's setup without the second operand's pointer setup.
  unsigned unaryOpWorkerCycles = 20;
  /// Worker cycles per 64-bit vector of a random draw (one generate, one
  /// store); normal and truncated-normal draws cost 2 and 4 times this.
  /// Estimate. (Elementwise maps count their operations at the binary-op
  /// figures.)
  unsigned unaryOpWorkerCyclesPerVector = 2;
  /// Fixed worker cycles of a dynamic-slice or multi-update vertex.
  /// Estimate.
  unsigned copyWorkerCycles = 10;
  /// Bytes an exchange step's on-tile copies move per cycle (a copy within
  /// one tile, or an element repeated on its receiving tile): one 64-bit
  /// load/store pair per cycle. Estimate.
  unsigned copyBytesPerWorkerCycle = 8;
  /// Fixed worker cycles of a reduction vertex. Estimate.
  unsigned reduceWorkerCycles = 20;
  /// Worker cycles per 64-bit vector reduced (a load and an accumulate,
  /// pipelined). Estimate.
  unsigned reduceWorkerCyclesPerVector = 1;
  /// Fixed worker cycles of a matrix-product (AMP) vertex: loading weights
  /// into the AMP unit and draining partials. Estimate.
  unsigned matMulWorkerCycles = 50;
  /// Worker cycles a convolution vertex spends starting one output row (or
  /// one row of a pooling window pass): setting up the row's input and
  /// output pointers and filling and draining the AMP pipeline. Estimate.
  unsigned convWorkerCyclesPerRow = 16;
  /// Fixed worker cycles of a vertex that has no cycle estimator (a user
  /// codelet without one): charged on top of one cycle per element of its
  /// inputs and outputs (VertexRegistry::defaultCycleEstimate). Estimate:
  /// a unary op's fixed cost.
  unsigned defaultVertexWorkerCycles = 20;
  /// Supervisor cycles per control-flow step (a loop iteration, a branch, a
  /// call). Estimate.
  unsigned controlFlowCycles = 10;
  /// Cycles of one sync across the tiles of one IPU: ~90-150 (Graphcore's
  /// IPU Programmer's Guide; Jia et al., "Dissecting the Graphcore IPU
  /// Architecture via Microbenchmarking", 2019).
  unsigned syncCyclesOnChip = 150;
  /// Cycles of one sync across several IPUs, over the IPU-Link sync fabric.
  /// Estimate: several times the on-chip figure (Jia et al. measured
  /// off-chip latencies many times the on-chip ones); ~0.75 us at 1.33 GHz.
  unsigned syncCyclesAcrossIpus = 1000;
  /// Fixed cycles per tile of one on-chip exchange step (setting up the
  /// exchange code's sends and receives). Estimate.
  unsigned exchangeFixedCycles = 30;
  /// Fixed cycles of an exchange step that crosses IPU-Links (link latency).
  /// Estimate from the off-chip latencies of Jia et al.
  unsigned ipuLinkFixedCycles = 600;
  /// Fixed cycles of a cross-replica copy that leaves the IPU-Machine over
  /// GW-Links (RDMA over 100 Gb Ethernet). Estimate: ~5 us, a network
  /// round trip through the gateways, at 1.33 GHz.
  unsigned gwLinkFixedCycles = 6650;
  /// Fixed cycles of a host transfer step (a stream copy or a remote buffer
  /// access): the host sync and the PCIe round trip, ~2 us. Estimate.
  unsigned hostTransferFixedCycles = 2660;
  /// Host time of one Engine::run outside the device program, in
  /// microseconds: the host starts the program, the device syncs with the
  /// host as it starts, and the host learns that it has ended. Estimate
  /// (Graphcore publishes no figure): three PCIe round trips of ~2 us each
  /// (a small transfer's round trip over PCIe, as Myrtle.ai's Vollo I/O
  /// benchmark measures it: 2.0 us), two host thread hand-offs of ~1 us
  /// (a pthread switch, ~1.1 us in a pipe ping-pong measurement) and ~2 us
  /// of the host runtime's bookkeeping: ~10 us.
  double hostRunMicroseconds = 10;
  /// Host time per stream a run uses, in microseconds: the host runtime
  /// prepares each stream's buffer for the run and tells the device where
  /// it is. Estimate: one descriptor write over PCIe, half of a ~2 us round
  /// trip: ~1 us.
  double hostStreamSetupMicroseconds = 1;
  /// Host time of one stream transfer served by a host function or
  /// StreamCallback, in microseconds: the device's copy waits while a host
  /// thread is woken to run the callback and hands its data back. Estimate:
  /// two thread hand-offs of ~1 us (as hostRunMicroseconds): ~2 us.
  double hostCallbackMicroseconds = 2;
  /// Bytes of tile memory the code of one vertex class takes on each tile
  /// that runs it. Estimate: a small elementwise codelet compiles to a few
  /// hundred bytes of IPU machine code.
  unsigned codeBytesPerVertexClass = 256;
};

/// A machine to build and cost graphs for: numIPUs IPUs of one architecture.
/// Tiles are numbered across IPUs: tile t is on IPU t / tilesPerIPU.
class Target {
public:
  /// The most IPUs a target (and a system) may have: more than the largest
  /// IPU-POD, so that a typo ("--ipus 65536") fails at once instead of
  /// building a graph for hours.
  static constexpr unsigned kMaxIPUs = 1024;
  /// The most tiles per IPU: eleven times a Mk2 IPU's 1472, room for
  /// experiments with bigger chips.
  static constexpr unsigned kMaxTilesPerIPU = 16384;
  /// The most tiles of all IPUs together (2^21, more than 1024 Mk2 IPUs):
  /// the host keeps state per tile, so this bounds the memory and time a
  /// graph's tile mapping takes.
  static constexpr unsigned kMaxTiles = 1u << 21;

  /// A target of \p numIPUs IPUs of architecture \p arch ("ipu1", "ipu2",
  /// "ipu21") with any figure of TargetFigures or CostFigures replaced by
  /// \p overrides, keyed by field name ({"tilesPerIPU", "4"}). Throws
  /// OptionError for an unknown architecture, an unknown key (with a "did
  /// you mean" hint), a bad value, or more than kMaxIPUs IPUs,
  /// kMaxTilesPerIPU tiles per IPU or kMaxTiles tiles in all; DeviceError
  /// for zero IPUs.
  static Target createIPUTarget(unsigned numIPUs, const char *arch = "ipu2",
                                const OptionFlags &overrides = {});
#if TESSERA_CXX17
  static Target createIPUTarget(unsigned numIPUs, std::string_view arch,
                                const OptionFlags &overrides = {});
#endif

  /// The architectures createIPUTarget knows: ipu1, ipu2, ipu21.
  static std::vector<std::string> architectures();
  /// The names of every figure that can be overridden (field names of
  /// TargetFigures, then of CostFigures).
  static std::vector<std::string> figureNames();

  unsigned getNumIPUs() const { return numIPUs_; }
  unsigned getTilesPerIPU() const { return figures_.tilesPerIPU; }
  unsigned getNumTiles() const { return numIPUs_ * figures_.tilesPerIPU; }
  std::size_t getBytesPerTile() const { return figures_.bytesPerTile; }
  /// Memory of all tiles of all IPUs.
  std::uint64_t getMemoryBytes() const {
    return std::uint64_t(getNumTiles()) * figures_.bytesPerTile;
  }
  /// Tile clock in Hz.
  double getTileClockFrequency() const { return figures_.tileClockFrequency; }
  unsigned getNumWorkerContexts() const { return figures_.numWorkerContexts; }
  /// Data path width in bits (64).
  unsigned getDataPathWidth() const { return figures_.dataPathWidth; }
  /// Elements of \p type in one vector: 2 floats, 4 halves, 8 chars.
  unsigned getVectorWidth(Type type) const;
  std::size_t getTypeSize(Type type) const { return typeSize(type); }
  unsigned getExchangeBytesPerCycle() const {
    return figures_.exchangeBytesPerCycle;
  }
  /// Tiles per shared exchange bus (1 or 2): a pair 2t, 2t+1 receives the
  /// bytes both of its tiles receive at twice getExchangeBytesPerCycle().
  unsigned getTilesPerSharedExchangeBus() const {
    return figures_.tilesPerSharedExchangeBus;
  }
  /// IPU-Link bandwidth of one IPU in bytes/s.
  double getIpuLinkBandwidth() const { return figures_.ipuLinkBandwidth; }
  /// GW-Link bandwidth of one IPU-Machine in bytes/s.
  double getGwLinkBandwidth() const { return figures_.gwLinkBandwidth; }
  /// Host link bandwidth in bytes/s.
  double getHostLinkBandwidth() const { return figures_.hostLinkBandwidth; }
  std::uint64_t getRemoteMemoryBytesPerIPU() const {
    return figures_.remoteMemoryBytesPerIPU;
  }
  double getRemoteMemoryBandwidth() const {
    return figures_.remoteMemoryBandwidth;
  }
  /// AMP multiply-accumulates per tile cycle for inputs of \p input type
  /// accumulating into \p partials; throws TypeError for combinations the
  /// AMP unit does not have (only FLOAT/FLOAT, HALF/HALF, HALF/FLOAT).
  unsigned getMacsPerCyclePerTile(Type input, Type partials) const;
  /// "ipu1", "ipu2" or "ipu21".
  const std::string &getTargetArchString() const { return arch_; }
  /// The IPU that global tile number \p tile is on; throws DeviceError when
  /// \p tile is not below getNumTiles().
  unsigned tileIpu(unsigned tile) const;
  /// Seconds that \p cycles tile cycles take.
  double cyclesToSeconds(std::uint64_t cycles) const {
    return double(cycles) / figures_.tileClockFrequency;
  }

  const TargetFigures &figures() const { return figures_; }
  const CostFigures &costs() const { return costs_; }

  /// Every figure by name, as strings that parse back to the same values
  /// (createIPUTarget(n, arch, t.figuresAsOptions()) == t).
  OptionFlags figuresAsOptions() const;
  /// {"arch": ..., "numIPUs": ..., "figures": {...}}, for executables.
  std::string toJson() const;
  /// The target toJson wrote; throws SerializationError when \p text is not
  /// one.
#if TESSERA_CXX17
  static Target fromJson(std::string_view text);
#endif
  /// A hash of the architecture, IPU count and every figure.
  std::uint64_t hash() const;

  friend bool operator==(const Target &a, const Target &b);

  /// One ipu2 IPU with its preset figures, as createIPUTarget(1).
  Target() = default;

private:
  std::string arch_ = "ipu2";
  unsigned numIPUs_ = 1;
  TargetFigures figures_;
  CostFigures costs_;
};

} // namespace tessera
