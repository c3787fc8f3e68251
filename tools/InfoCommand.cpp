// `tessera info`: what the simulated system holds, as gc-info lists a real
// one. Nothing is attached; the listing comes from the system description
// alone, so it works while other processes hold IPUs.
#include "Commands.hpp"
#include "TextTable.hpp"

#include "tessera/compiler/Options.hpp"
#include "tessera/device/DeviceManager.hpp"
#include "tessera/support/Error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <memory>
#include <optional>
#include <ostream>

namespace tessera::tools {
namespace {

struct InfoOptions {
  bool json = false;
  bool engineOptions = false;
  std::optional<unsigned> deviceId;
  std::optional<unsigned> numIPUs;
};

// Where the system description came from, for the header line.
std::string systemSource() {
  const char *spec = std::getenv("TESSERA_SYSTEM");
  if (spec != nullptr && *spec != '\0')
    return fmt::format("TESSERA_SYSTEM={}", spec);
  const char *file = std::getenv("TESSERA_SYSTEM_CONFIG");
  if (file != nullptr && *file != '\0')
    return fmt::format("TESSERA_SYSTEM_CONFIG={}", file);
  return "the default; set TESSERA_SYSTEM such as 4xipu2 to change it";
}

std::vector<DeviceInfo> selectDevices(const DeviceManager &m,
                                      const InfoOptions &o) {
  std::vector<DeviceInfo> all = m.listDevices();
  if (o.deviceId) {
    m.deviceIpus(*o.deviceId); // throws, with the valid range, when unknown
    return {all[*o.deviceId]};
  }
  if (!o.numIPUs)
    return all;
  std::vector<DeviceInfo> out;
  for (DeviceInfo &d : all)
    if (d.ipus.size() == *o.numIPUs)
      out.push_back(std::move(d));
  if (out.empty()) {
    std::string sizes;
    for (unsigned size = 1; size <= m.getNumIPUs(); size *= 2)
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(size);
    throw DeviceError(fmt::format(
        "--ipus {}: no device of this system has {} IPUs; its devices have "
        "{} IPUs",
        *o.numIPUs, *o.numIPUs, sizes));
  }
  return out;
}

nlohmann::ordered_json infoJson(const DeviceManager &m, const Target &ipu,
                                const std::vector<DeviceInfo> &devices) {
  nlohmann::ordered_json system = {{"ipus", m.getNumIPUs()},
                                   {"arch", m.getArch()},
                                   {"tilesPerIPU", ipu.getTilesPerIPU()},
                                   {"bytesPerTile", ipu.getBytesPerTile()},
                                   {"clockHz", ipu.getTileClockFrequency()},
                                   {"numDevices", m.getNumDevices()},
                                   {"systemDirectory", m.getSystemDirectory()}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const DeviceInfo &d : devices)
    list.push_back({{"id", d.id},
                    {"numIPUs", d.ipus.size()},
                    {"ipus", d.ipus},
                    {"type", d.arch},
                    {"tilesPerIPU", d.tilesPerIPU},
                    {"tiles", d.tilesPerIPU * d.ipus.size()},
                    {"memoryBytes", std::uint64_t(d.bytesPerTile) *
                                        d.tilesPerIPU * d.ipus.size()}});
  return {{"system", std::move(system)}, {"devices", std::move(list)}};
}

void printInfo(std::ostream &os, const DeviceManager &m, const Target &ipu,
               const std::vector<DeviceInfo> &devices) {
  os << fmt::format("System: {} {} IPUs ({})\n", m.getNumIPUs(), m.getArch(),
                    systemSource())
     << fmt::format("  {:<18}{}\n",
                    "Tiles per IPU:", groupedNumber(ipu.getTilesPerIPU()))
     << fmt::format("  {:<18}{}\n",
                    "Memory per tile:", bytesText(ipu.getBytesPerTile()))
     << fmt::format("  {:<18}{}\n",
                    "Memory per IPU:", bytesText(ipu.getMemoryBytes()))
     << fmt::format("  {:<18}{:.3g} GHz\n",
                    "Clock:", ipu.getTileClockFrequency() / 1e9)
     << fmt::format("  {:<18}{}\n\n", "Lock folder:", m.getSystemDirectory());
  os << fmt::format("Devices ({} of {}; ids count single IPUs first, then "
                    "groups of 2, 4, ...):\n",
                    devices.size(), m.getNumDevices());
  TextTable table({"ID", "IPUs", "Count", "Type", "Tiles", "Memory"},
                  {true, false, true, false, true, false});
  for (const DeviceInfo &d : devices)
    table.addRow({std::to_string(d.id), ipuRange(d.ipus),
                  std::to_string(d.ipus.size()), d.arch,
                  groupedNumber(std::uint64_t(d.tilesPerIPU) * d.ipus.size()),
                  bytesText(std::uint64_t(d.bytesPerTile) * d.tilesPerIPU *
                            d.ipus.size())});
  table.print(os, 2);
}

// The engine options and what each does on the IPU Model.
void printEngineOptions(std::ostream &os) {
  os << "Engine options (OptionFlags given to an Engine or compileGraph, "
        "POPLAR_ENGINE_OPTIONS, TESSERA_ENGINE_OPTIONS):\n";
  TextTable table({"Option", "Effect on the IPU Model"});
  for (const std::string &key : EngineOptions::keys()) {
    std::string effect = "used";
    for (const InertEngineOption &o : inertEngineOptions())
      if (key == o.key)
        effect = std::string("no effect on the IPU Model: ") + o.reason;
    table.addRow({key, effect});
  }
  table.print(os, 2);
}

void runInfo(const InfoOptions &o, const CommandStreams &streams) {
  if (o.engineOptions) {
    printEngineOptions(streams.out);
    return;
  }
  const DeviceManager m = DeviceManager::createDeviceManager();
  const Target ipu = Target::createIPUTarget(1, m.getArch());
  const std::vector<DeviceInfo> devices = selectDevices(m, o);
  if (o.json)
    streams.out << infoJson(m, ipu, devices).dump(2) << '\n';
  else
    printInfo(streams.out, m, ipu, devices);
}

} // namespace

void addInfoCommand(CLI::App &app, const CommandStreams &streams) {
  auto options = std::make_shared<InfoOptions>();
  CLI::App *sub = app.add_subcommand(
      "info", "List the system's IPUs and the device ids they form");
  sub->footer(
      "The system is TESSERA_SYSTEM (\"<count>x<arch>\", such as 16xipu2), "
      "else the JSON file named by TESSERA_SYSTEM_CONFIG, else 16 ipu2 "
      "IPUs.\nWith N IPUs, ids 0..N-1 are the single IPUs, then come the "
      "pairs, the groups of four, and so on up to all of them.");
  sub->add_flag("--options", options->engineOptions,
                "List the engine options and their effect on the IPU Model");
  sub->add_flag("--json", options->json,
                "Print JSON: the system, then one object per device");
  sub->add_option("-d,--device-id", options->deviceId,
                  "Show only the device with this id");
  sub->add_option("-n,--ipus", options->numIPUs,
                  "Show only the devices of this many IPUs")
      ->excludes("--device-id");
  sub->callback([options, streams] { runInfo(*options, streams); });
}

} // namespace tessera::tools
