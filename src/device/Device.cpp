#include "tessera/device/Device.hpp"

#include "DeviceImpl.hpp"
#include "SystemLocks.hpp"

#include "tessera/support/Error.hpp"
#include "tessera/support/Logging.hpp"

#include <fmt/format.h>

#include <unistd.h>

namespace tessera {

namespace {

std::string ipuList(const std::vector<unsigned> &ipus) {
  std::string s;
  for (std::size_t i = 0; i < ipus.size(); ++i)
    s += (i == 0 ? "" : ", ") + std::to_string(ipus[i]);
  return s;
}

std::string heldMessage(unsigned id, const std::vector<unsigned> &ipus,
                        const std::string &dir, unsigned ipu);

} // namespace

Device::Device() = default;
Device::Device(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Device::Device(Device &&other) noexcept = default;

Device &Device::operator=(Device &&other) noexcept {
  if (this != &other) {
    detach();
    impl_ = std::move(other.impl_);
  }
  return *this;
}

Device::~Device() { detach(); }

const Device::Impl &Device::impl() const {
  if (!impl_)
    throw DeviceError("this Device is empty (default-constructed or moved "
                      "from); get one from IPUModel::createDevice or "
                      "DeviceManager::getDevice");
  return *impl_;
}

const Target &Device::getTarget() const { return impl().target; }
unsigned Device::getId() const { return impl().id; }
unsigned Device::getNumIPUs() const { return impl().target.getNumIPUs(); }
const std::vector<unsigned> &Device::ipuIds() const { return impl().ipus; }
TargetType Device::getTargetType() const { return impl().type; }
bool Device::isAttached() const { return impl_ && impl_->attached; }

bool Device::attach() { return attachImpl(true); }
bool Device::tryAttach() { return attachImpl(false); }

bool Device::attachImpl(bool throwIfHeld) {
  impl();
  Impl &d = *impl_;
  if (d.attached)
    return true;
  if (d.type == TargetType::IPU_MODEL) {
    d.attached = true;
    return true;
  }
  detail::ensureSystemDirectory(d.systemDir);
  std::vector<int> fds;
  auto release = [&fds] {
    for (int fd : fds)
      detail::unlockIpu(fd);
  };
  for (unsigned ipu : d.ipus) {
    int fd = -1;
    try {
      fd = detail::tryLockIpu(d.systemDir, ipu);
    } catch (...) {
      release();
      throw;
    }
    if (fd < 0) {
      release();
      if (!throwIfHeld) {
        logging::info("device {}: IPU {} is held, not attaching", d.id, ipu);
        return false;
      }
      throw DeviceError(heldMessage(d.id, d.ipus, d.systemDir, ipu));
    }
    fds.push_back(fd);
  }
  try {
    for (unsigned ipu : d.ipus)
      detail::writeHolderRecord(d.systemDir, ipu, d.id);
  } catch (const Error &e) {
    for (unsigned ipu : d.ipus)
      detail::removeHolderRecord(d.systemDir, ipu);
    release();
    throw DeviceError(fmt::format(
        "cannot attach device {}: writing its holder records failed: {}", d.id,
        e.what()));
  }
  d.lockFds = std::move(fds);
  d.attached = true;
  logging::info("attached device {} (IPUs {})", d.id, ipuList(d.ipus));
  return true;
}

void Device::detach() {
  if (!impl_ || !impl_->attached)
    return;
  Impl &d = *impl_;
  if (d.type == TargetType::IPU) {
    // The record goes before the lock, so a record never outlives its lock
    // in a live process.
    for (std::size_t i = 0; i < d.ipus.size(); ++i) {
      detail::removeHolderRecord(d.systemDir, d.ipus[i]);
      detail::unlockIpu(d.lockFds[i]);
    }
    d.lockFds.clear();
  }
  d.attached = false;
}

namespace {

std::string heldMessage(unsigned id, const std::vector<unsigned> &ipus,
                        const std::string &dir, unsigned ipu) {
  const std::string what =
      fmt::format("cannot attach device {} (IPU{} {}): IPU {}", id,
                  ipus.size() == 1 ? "" : "s", ipuList(ipus), ipu);
  auto record = detail::readHolderRecord(dir, ipu);
  if (record && record->pid == static_cast<long>(::getpid()))
    return fmt::format("{} is already attached by this process (device {}); "
                       "detach that Device first or pick another device",
                       what, record->deviceId);
  if (record)
    return fmt::format(
        "{} is attached by process {} (user {}, command \"{}\", device {}, "
        "since {}); detach it in that process or pick another device; "
        "`tessera monitor` lists holders",
        what, record->pid, record->user, record->command, record->deviceId,
        record->attachTime);
  return fmt::format("{} is attached by another process whose holder record "
                     "is not readable yet; pick another device or retry; "
                     "`tessera monitor` lists holders",
                     what);
}

} // namespace

} // namespace tessera
