/// \file
/// Exclusive ownership of the simulated system's IPUs across processes: one
/// lock file per IPU, locked with flock while a device holding the IPU is
/// attached, so the kernel frees the IPUs of a process that dies; plus a
/// holder record per IPU saying who holds it.
///
/// flock locks belong to an open file description: a second open of the
/// same lock file conflicts even within one process, and a child forked
/// while a device is attached shares the lock until it exits or closes the
/// descriptor (descriptors are close-on-exec).
#pragma once

#include "tessera/device/DeviceManager.hpp"

#include <optional>
#include <string>

namespace tessera::detail {

/// TESSERA_SYSTEM_DIR, or /tmp/tessera-system-<uid>.
std::string systemDirectoryFromEnvironment();
/// Creates \p dir and its parents if missing; throws DeviceError.
void ensureSystemDirectory(const std::string &dir);

/// Locks \p ipu; returns the locked descriptor, or -1 when another open
/// file holds the lock. Throws DeviceError when the lock file cannot be
/// opened.
int tryLockIpu(const std::string &dir, unsigned ipu);
/// Releases a lock taken by tryLockIpu.
void unlockIpu(int fd);
/// Whether some open file (in any process, this one included) holds the
/// lock of \p ipu.
bool isIpuHeld(const std::string &dir, unsigned ipu);

/// Writes the record of this process holding \p ipu for device \p deviceId.
void writeHolderRecord(const std::string &dir, unsigned ipu, unsigned deviceId);
void removeHolderRecord(const std::string &dir, unsigned ipu);
/// The record of \p ipu, or nothing when there is none, it is unreadable or
/// the process it names is gone (a record left behind by a killed holder,
/// whose lock a process it forked may still hold).
std::optional<AttachRecord> readHolderRecord(const std::string &dir,
                                             unsigned ipu);
/// Whether process \p pid exists (possibly owned by another user).
bool processExists(long pid);

} // namespace tessera::detail
