#include "tessera/device/Target.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/Hash.hpp"
#include "tessera/support/OptionParser.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <bit>
#include <type_traits>

namespace tessera {

namespace {

// The one list of figures: parsing, printing, hashing and comparing all walk
// it, so a new field needs one line here and nothing else. TF and CF are
// TargetFigures and CostFigures, const or not.
template <typename TF, typename CF, typename F>
void forEachFigure(TF &t, CF &c, F &&f) {
  f("tilesPerIPU", t.tilesPerIPU);
  f("bytesPerTile", t.bytesPerTile);
  f("tileClockFrequency", t.tileClockFrequency);
  f("numWorkerContexts", t.numWorkerContexts);
  f("dataPathWidth", t.dataPathWidth);
  f("exchangeBytesPerCycle", t.exchangeBytesPerCycle);
  f("tilesPerSharedExchangeBus", t.tilesPerSharedExchangeBus);
  f("ipuLinkBandwidth", t.ipuLinkBandwidth);
  f("gwLinkBandwidth", t.gwLinkBandwidth);
  f("hostLinkBandwidth", t.hostLinkBandwidth);
  f("remoteMemoryBytesPerIPU", t.remoteMemoryBytesPerIPU);
  f("remoteMemoryBandwidth", t.remoteMemoryBandwidth);
  f("fp32MacsPerCycle", t.fp32MacsPerCycle);
  f("fp16MacsPerCycleHalfPartials", t.fp16MacsPerCycleHalfPartials);
  f("fp16MacsPerCycleFloatPartials", t.fp16MacsPerCycleFloatPartials);
  f("supervisorCyclesPerVertex", c.supervisorCyclesPerVertex);
  f("binaryOpWorkerCycles", c.binaryOpWorkerCycles);
  f("binaryOpWorkerCyclesPerVector", c.binaryOpWorkerCyclesPerVector);
  f("unaryOpWorkerCycles", c.unaryOpWorkerCycles);
  f("unaryOpWorkerCyclesPerVector", c.unaryOpWorkerCyclesPerVector);
  f("copyWorkerCycles", c.copyWorkerCycles);
  f("copyBytesPerWorkerCycle", c.copyBytesPerWorkerCycle);
  f("reduceWorkerCycles", c.reduceWorkerCycles);
  f("reduceWorkerCyclesPerVector", c.reduceWorkerCyclesPerVector);
  f("matMulWorkerCycles", c.matMulWorkerCycles);
  f("convWorkerCyclesPerRow", c.convWorkerCyclesPerRow);
  f("defaultVertexWorkerCycles", c.defaultVertexWorkerCycles);
  f("controlFlowCycles", c.controlFlowCycles);
  f("syncCyclesOnChip", c.syncCyclesOnChip);
  f("syncCyclesAcrossIpus", c.syncCyclesAcrossIpus);
  f("exchangeFixedCycles", c.exchangeFixedCycles);
  f("ipuLinkFixedCycles", c.ipuLinkFixedCycles);
  f("gwLinkFixedCycles", c.gwLinkFixedCycles);
  f("hostTransferFixedCycles", c.hostTransferFixedCycles);
  f("hostRunMicroseconds", c.hostRunMicroseconds);
  f("hostStreamSetupMicroseconds", c.hostStreamSetupMicroseconds);
  f("hostCallbackMicroseconds", c.hostCallbackMicroseconds);
  f("codeBytesPerVertexClass", c.codeBytesPerVertexClass);
}

TargetFigures presetFigures(std::string_view arch) {
  TargetFigures f; // the defaults are the ipu2 (Mk2 GC200) figures
  if (arch == "ipu2")
    return f;
  if (arch == "ipu21") { // Bow: the Mk2 die at a faster clock
    f.tileClockFrequency = 1.85e9;
    return f;
  }
  if (arch == "ipu1") { // Mk1 GC2 on a C2 card
    f.tilesPerIPU = 1216;
    f.bytesPerTile = 262144;
    f.tileClockFrequency = 1.6e9;
    f.ipuLinkBandwidth = 64e9;
    f.remoteMemoryBytesPerIPU = 0;
    f.fp32MacsPerCycle = 8;
    f.fp16MacsPerCycleHalfPartials = 32;
    f.fp16MacsPerCycleFloatPartials = 32;
    f.tilesPerSharedExchangeBus = 1;
    return f;
  }
  throw OptionError("unknown IPU architecture \"" + std::string(arch) +
                    "\"; use one of ipu1 (Mk1 GC2), ipu2 (Mk2 GC200) or "
                    "ipu21 (Bow)");
}

void requireAtLeast(std::string_view name, double value, double minimum) {
  if (value < minimum)
    throw OptionError(
        fmt::format("target figure \"{}\" is {} but must be at least {}", name,
                    value, minimum));
}

void validate(unsigned numIPUs, const TargetFigures &f) {
  requireAtLeast("tilesPerIPU", f.tilesPerIPU, 1);
  // Before anything is built: a typo's million tiles would otherwise take
  // minutes (or all memory) in the graph's per-tile tables.
  if (numIPUs > Target::kMaxIPUs)
    throw OptionError(fmt::format("a target has 1 to {} IPUs, not {}",
                                  Target::kMaxIPUs, numIPUs));
  if (f.tilesPerIPU > Target::kMaxTilesPerIPU)
    throw OptionError(
        fmt::format("target figure \"tilesPerIPU\" is {} but must be 1 to {}",
                    f.tilesPerIPU, Target::kMaxTilesPerIPU));
  requireAtLeast("bytesPerTile", double(f.bytesPerTile), 1);
  requireAtLeast("tileClockFrequency", f.tileClockFrequency, 1);
  requireAtLeast("numWorkerContexts", f.numWorkerContexts, 1);
  requireAtLeast("exchangeBytesPerCycle", f.exchangeBytesPerCycle, 1);
  if (f.tilesPerSharedExchangeBus != 1 && f.tilesPerSharedExchangeBus != 2)
    throw OptionError(fmt::format(
        "target figure \"tilesPerSharedExchangeBus\" is {} but must be 1 (no "
        "sharing) or 2 (tile pairs share an exchange bus)",
        f.tilesPerSharedExchangeBus));
  requireAtLeast("ipuLinkBandwidth", f.ipuLinkBandwidth, 1);
  requireAtLeast("gwLinkBandwidth", f.gwLinkBandwidth, 1);
  requireAtLeast("hostLinkBandwidth", f.hostLinkBandwidth, 1);
  requireAtLeast("remoteMemoryBandwidth", f.remoteMemoryBandwidth, 1);
  requireAtLeast("fp32MacsPerCycle", f.fp32MacsPerCycle, 1);
  requireAtLeast("fp16MacsPerCycleHalfPartials", f.fp16MacsPerCycleHalfPartials,
                 1);
  requireAtLeast("fp16MacsPerCycleFloatPartials",
                 f.fp16MacsPerCycleFloatPartials, 1);
  if (f.dataPathWidth < 32 || !std::has_single_bit(f.dataPathWidth))
    throw OptionError(fmt::format(
        "target figure \"dataPathWidth\" is {} but must be a power of two of "
        "at least 32 bits (a vector must hold a float)",
        f.dataPathWidth));
  if (std::uint64_t(numIPUs) * f.tilesPerIPU > Target::kMaxTiles)
    throw OptionError(fmt::format(
        "{} IPUs of {} tiles is {} tiles, more than the {} a target may "
        "have; use fewer IPUs or tiles",
        numIPUs, f.tilesPerIPU, std::uint64_t(numIPUs) * f.tilesPerIPU,
        Target::kMaxTiles));
}

std::string figureToString(unsigned v) { return std::to_string(v); }
std::string figureToString(unsigned long v) { return std::to_string(v); }
// fmt prints the shortest string that reads back as the same double.
std::string figureToString(double v) { return fmt::format("{}", v); }

} // namespace

Target Target::createIPUTarget(unsigned numIPUs, const char *arch,
                               const OptionFlags &overrides) {
  return createIPUTarget(numIPUs, std::string_view(arch ? arch : ""),
                         overrides);
}

Target Target::createIPUTarget(unsigned numIPUs, std::string_view arch,
                               const OptionFlags &overrides) {
  if (numIPUs == 0)
    throw DeviceError("a target needs at least one IPU; numIPUs is 0");
  Target t;
  t.arch_ = std::string(arch);
  t.numIPUs_ = numIPUs;
  t.figures_ = presetFigures(arch);
  OptionParser parser("target");
  forEachFigure(t.figures_, t.costs_, [&](const char *name, auto &field) {
    parser.add(name, field);
  });
  parser.parse(overrides);
  validate(numIPUs, t.figures_);
  if (t.costs_.copyBytesPerWorkerCycle == 0)
    throw OptionError("target figure \"copyBytesPerWorkerCycle\" is 0 but "
                      "must be at least 1");
  const CostFigures &c = t.costs_;
  for (const auto &[name, us] :
       {std::pair{"hostRunMicroseconds", c.hostRunMicroseconds},
        std::pair{"hostStreamSetupMicroseconds", c.hostStreamSetupMicroseconds},
        std::pair{"hostCallbackMicroseconds", c.hostCallbackMicroseconds}})
    if (!(us >= 0 && us < 1e9))
      throw OptionError(fmt::format("target figure \"{}\" is {} but must be "
                                    "0 to 1e9 microseconds",
                                    name, us));
  return t;
}

std::vector<std::string> Target::architectures() {
  return {"ipu1", "ipu2", "ipu21"};
}

std::vector<std::string> Target::figureNames() {
  std::vector<std::string> names;
  TargetFigures t;
  CostFigures c;
  forEachFigure(t, c, [&](const char *name, auto &) { names.push_back(name); });
  return names;
}

unsigned Target::getVectorWidth(Type type) const {
  return figures_.dataPathWidth / 8 / static_cast<unsigned>(typeSize(type));
}

unsigned Target::getMacsPerCyclePerTile(Type input, Type partials) const {
  if (input == Type::FLOAT && partials == Type::FLOAT)
    return figures_.fp32MacsPerCycle;
  if (input == Type::HALF && partials == Type::HALF)
    return figures_.fp16MacsPerCycleHalfPartials;
  if (input == Type::HALF && partials == Type::FLOAT)
    return figures_.fp16MacsPerCycleFloatPartials;
  throw TypeError(fmt::format(
      "the AMP unit has no {} inputs with {} partials; it multiplies float "
      "into float, half into half, or half into float",
      typeName(input), typeName(partials)));
}

unsigned Target::tileIpu(unsigned tile) const {
  if (tile >= getNumTiles())
    throw DeviceError(fmt::format(
        "tile {} is not on this target: it has {} tiles ({} IPU(s) x {} "
        "tiles), numbered 0 to {}",
        tile, getNumTiles(), numIPUs_, figures_.tilesPerIPU,
        getNumTiles() - 1));
  return tile / figures_.tilesPerIPU;
}

OptionFlags Target::figuresAsOptions() const {
  OptionFlags flags;
  forEachFigure(figures_, costs_, [&](const char *name, const auto &field) {
    flags.set(name, figureToString(field));
  });
  return flags;
}

std::string Target::toJson() const {
  nlohmann::ordered_json j;
  j["arch"] = arch_;
  j["numIPUs"] = numIPUs_;
  nlohmann::ordered_json figures = nlohmann::ordered_json::object();
  for (const auto &[name, value] : figuresAsOptions())
    figures[name] = value;
  j["figures"] = figures;
  return j.dump();
}

Target Target::fromJson(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text.begin(), text.end());
    OptionFlags figures;
    for (const auto &[name, value] : j.at("figures").items())
      figures.set(name, value.get<std::string>());
    return createIPUTarget(j.at("numIPUs").get<unsigned>(),
                           j.at("arch").get<std::string>(), figures);
  } catch (const nlohmann::json::exception &e) {
    throw SerializationError(
        std::string("stored target description is not valid: ") + e.what());
  } catch (const Error &e) {
    throw SerializationError(
        std::string("stored target description is not valid: ") + e.what());
  }
}

std::uint64_t Target::hash() const {
  Hasher h;
  h.updateDelimited(arch_);
  h.update(numIPUs_);
  forEachFigure(figures_, costs_, [&](const char *name, const auto &field) {
    h.updateDelimited(name);
    h.update(field);
  });
  return h.digest();
}

bool operator==(const Target &a, const Target &b) {
  return a.arch_ == b.arch_ && a.numIPUs_ == b.numIPUs_ &&
         a.figuresAsOptions() == b.figuresAsOptions();
}

} // namespace tessera
