#include "tessera/device/DeviceManager.hpp"

#include "DeviceImpl.hpp"
#include "SystemLocks.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"
#include "tessera/support/OptionParser.hpp"
#include "tessera/support/Text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cstdlib>

namespace tessera {

namespace {

// More IPUs than the largest IPU-POD; a bound so typos ("160000") fail.
constexpr unsigned maxSystemIPUs = Target::kMaxIPUs;

void checkConfig(const SystemConfig &config, std::string_view where) {
  if (config.numIPUs == 0 || config.numIPUs > maxSystemIPUs)
    throw DeviceError(fmt::format("{}: a system has 1 to {} IPUs, not {}",
                                  where, maxSystemIPUs, config.numIPUs));
  auto archs = Target::architectures();
  if (std::find(archs.begin(), archs.end(), config.arch) == archs.end())
    throw DeviceError(fmt::format(
        "{}: unknown IPU architecture \"{}\"; use one of ipu1, ipu2, ipu21",
        where, config.arch));
}

// "1, 2, 4 or 8": the device sizes of a system of \p numIPUs IPUs.
std::string deviceSizes(unsigned numIPUs) {
  std::string out;
  for (unsigned size = 1; size <= numIPUs; size *= 2) {
    if (!out.empty())
      out += size * 2 > numIPUs ? " or " : ", ";
    out += std::to_string(size);
  }
  return out;
}

std::string holderText(const AttachRecord &r) {
  if (r.pid == 0)
    return "a process whose holder record is not readable";
  // Written by another process: escaped, so it cannot drive the terminal.
  return fmt::format("process {} (user {}, command \"{}\", device {}, since "
                     "{})",
                     r.pid, printableText(r.user), printableText(r.command),
                     r.deviceId, printableText(r.attachTime));
}

} // namespace

SystemConfig SystemConfig::fromSpec(std::string_view spec,
                                    std::string_view where) {
  const auto bad = [&] {
    return DeviceError(fmt::format(
        "{}=\"{}\" is not a system description; use <count>x<arch> such as "
        "\"16xipu2\" or \"4xipu21\" (arch one of ipu1, ipu2, ipu21), or just "
        "a count such as \"16\" for ipu2 IPUs",
        where, spec));
  };
  std::size_t digits = 0;
  while (digits < spec.size() && spec[digits] >= '0' && spec[digits] <= '9')
    ++digits;
  if (digits == 0 || digits > 6)
    throw bad();
  SystemConfig config;
  config.numIPUs = static_cast<unsigned>(
      std::strtoul(std::string(spec.substr(0, digits)).c_str(), nullptr, 10));
  std::string_view rest = spec.substr(digits);
  if (!rest.empty()) {
    if (rest.front() != 'x' && rest.front() != 'X')
      throw bad();
    config.arch = std::string(rest.substr(1));
  }
  checkConfig(config, where);
  return config;
}

SystemConfig SystemConfig::fromJson(std::string_view text,
                                    std::string_view where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception &e) {
    throw DeviceError(fmt::format(
        "{}: the system description is not valid JSON ({}); expected an "
        "object such as {{\"ipus\": 16, \"arch\": \"ipu2\"}}",
        where, e.what()));
  }
  if (!j.is_object() || !j.contains("ipus"))
    throw DeviceError(fmt::format(
        "{}: the system description must be a JSON object with at least "
        "\"ipus\", such as {{\"ipus\": 16, \"arch\": \"ipu2\"}}",
        where));
  SystemConfig config;
  for (const auto &[key, value] : j.items()) {
    if (key == "ipus") {
      if (!value.is_number_unsigned())
        throw DeviceError(
            fmt::format("{}: \"ipus\" must be a positive integer, not {}",
                        where, value.dump()));
      config.numIPUs = static_cast<unsigned>(
          std::min<std::uint64_t>(value.get<std::uint64_t>(), ~0u));
    } else if (key == "arch") {
      if (!value.is_string())
        throw DeviceError(fmt::format(
            "{}: \"arch\" must be a string such as \"ipu2\", not {}", where,
            value.dump()));
      config.arch = value.get<std::string>();
    } else {
      std::string hint = didYouMean(key, {"ipus", "arch"});
      throw DeviceError(fmt::format(
          "{}: unknown key \"{}\" in the system description{}; known keys: "
          "ipus, arch",
          where, key, hint.empty() ? "" : "; did you mean \"" + hint + "\"?"));
    }
  }
  checkConfig(config, where);
  return config;
}

DeviceManager DeviceManager::createDeviceManager() {
  SystemConfig config;
  const char *spec = std::getenv("TESSERA_SYSTEM");
  const char *configFile = std::getenv("TESSERA_SYSTEM_CONFIG");
  if (spec != nullptr && *spec != '\0') {
    config = SystemConfig::fromSpec(spec, "TESSERA_SYSTEM");
  } else if (configFile != nullptr && *configFile != '\0') {
    std::string text;
    try {
      text = readFile(configFile);
    } catch (const Error &e) {
      throw DeviceError(std::string("TESSERA_SYSTEM_CONFIG names a file "
                                    "that cannot be read: ") +
                        e.what());
    }
    config = SystemConfig::fromJson(
        text, std::string("TESSERA_SYSTEM_CONFIG file \"") + configFile + "\"");
  }
  return DeviceManager(std::move(config),
                       detail::systemDirectoryFromEnvironment());
}

DeviceManager::DeviceManager(SystemConfig config, std::string systemDir)
    : config_(std::move(config)), systemDir_(std::move(systemDir)) {
  checkConfig(config_, "system");
  detail::ensureSystemDirectory(systemDir_);
}

unsigned DeviceManager::getNumDevices() const {
  unsigned count = 0;
  for (unsigned size = 1; size <= config_.numIPUs; size *= 2)
    count += config_.numIPUs / size;
  return count;
}

std::vector<unsigned> DeviceManager::deviceIpus(unsigned id) const {
  const unsigned n = config_.numIPUs;
  unsigned first = 0; // the id of the first device of the current size
  for (unsigned size = 1; size <= n; size *= 2) {
    const unsigned count = n / size;
    if (id < first + count) {
      std::vector<unsigned> ipus(size);
      for (unsigned i = 0; i < size; ++i)
        ipus[i] = (id - first) * size + i;
      return ipus;
    }
    first += count;
  }
  throw DeviceError(fmt::format(
      "no device has id {}: this system of {} {} IPUs has device ids 0 to {} "
      "(single IPUs first, then groups of 2, 4, ...); `tessera info` lists "
      "them",
      id, n, config_.arch, getNumDevices() - 1));
}

Device DeviceManager::getDevice(unsigned id) const {
  std::vector<unsigned> ipus = deviceIpus(id);
  auto impl = std::make_unique<Device::Impl>(Target::createIPUTarget(
      static_cast<unsigned>(ipus.size()), config_.arch));
  impl->type = TargetType::IPU;
  impl->id = id;
  impl->ipus = std::move(ipus);
  impl->systemDir = systemDir_;
  return Device(std::move(impl));
}

std::vector<Device> DeviceManager::getDevices(TargetType type,
                                              unsigned requiredNumIPUs) const {
  if (type != TargetType::IPU)
    throw DeviceError("DeviceManager lists the system's IPUs only; create IPU "
                      "Model devices with IPUModel::createDevice");
  std::vector<Device> devices;
  if (requiredNumIPUs == 0 || requiredNumIPUs > config_.numIPUs ||
      !std::has_single_bit(requiredNumIPUs))
    return devices;
  unsigned first = 0;
  for (unsigned size = 1; size < requiredNumIPUs; size *= 2)
    first += config_.numIPUs / size;
  const unsigned count = config_.numIPUs / requiredNumIPUs;
  devices.reserve(count);
  for (unsigned id = first; id < first + count; ++id)
    devices.push_back(getDevice(id));
  return devices;
}

Device DeviceManager::acquireAvailableDevice(unsigned numIPUs) const {
  std::vector<Device> devices = getDevices(numIPUs);
  if (devices.empty())
    throw DeviceError(fmt::format(
        "no device has {} IPUs: this system of {} {} IPUs has devices of {} "
        "IPUs; ask for one of those sizes (`tessera info` lists the devices)",
        numIPUs, config_.numIPUs, config_.arch, deviceSizes(config_.numIPUs)));
  // d refers into the vector, so it must be moved out (cppcheck takes it for
  // a local).
  for (Device &d : devices)
    if (d.tryAttach())
      // cppcheck-suppress returnStdMoveLocal
      return std::move(d);
  // Every device of the size was busy: say who holds each, so the user can
  // tell whether to wait, ask for fewer IPUs or stop a forgotten process.
  const std::vector<AttachRecord> held = attachments();
  std::string holders;
  for (Device &d : devices) {
    auto it = std::find_if(held.begin(), held.end(), [&](const auto &r) {
      return std::find(d.ipuIds().begin(), d.ipuIds().end(), r.ipu) !=
             d.ipuIds().end();
    });
    // Its holder detached since the first try.
    if (it == held.end() && d.tryAttach())
      // cppcheck-suppress returnStdMoveLocal
      return std::move(d);
    const auto &ipus = d.ipuIds();
    holders += ipus.size() == 1
                   ? fmt::format("; device {} (IPU {}): ", d.getId(), ipus[0])
                   : fmt::format("; device {} (IPUs {}-{}): ", d.getId(),
                                 ipus.front(), ipus.back());
    holders += it == held.end() ? std::string("attached by another process")
                                : "IPU " + std::to_string(it->ipu) +
                                      " held by " + holderText(*it);
  }
  const std::string which =
      devices.size() == 1 ? fmt::format("the only device of {} IPUs", numIPUs)
                          : fmt::format("each of the {} devices of {} IPUs",
                                        devices.size(), numIPUs);
  throw DeviceError(fmt::format(
      "no free device of {} IPUs: {} in this system of {} IPUs has an "
      "attached IPU{}. Wait for a holder to detach, stop it, or ask for "
      "fewer IPUs; `tessera monitor` lists the holders",
      numIPUs, which, config_.numIPUs, holders));
}

std::vector<DeviceInfo> DeviceManager::listDevices() const {
  const TargetFigures figures =
      Target::createIPUTarget(1, config_.arch).figures();
  std::vector<DeviceInfo> result;
  const unsigned numDevices = getNumDevices();
  result.reserve(numDevices);
  for (unsigned id = 0; id < numDevices; ++id)
    result.push_back(DeviceInfo{id, deviceIpus(id), config_.arch,
                                figures.tilesPerIPU, figures.bytesPerTile});
  return result;
}

std::vector<AttachRecord> DeviceManager::attachments() const {
  std::vector<AttachRecord> result;
  for (unsigned ipu = 0; ipu < config_.numIPUs; ++ipu) {
    if (!detail::isIpuHeld(systemDir_, ipu))
      continue;
    auto record = detail::readHolderRecord(systemDir_, ipu);
    if (!record) {
      record = AttachRecord{};
      record->ipu = ipu;
      record->command = "unknown";
      record->user = "unknown";
    }
    result.push_back(std::move(*record));
  }
  return result;
}

} // namespace tessera
