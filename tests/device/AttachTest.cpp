#include "tessera/device/DeviceManager.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"

#include "device/TempSystemDir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>

#include <sys/wait.h>
#include <unistd.h>

using namespace tessera;
using ::testing::HasSubstr;

namespace {

class AttachTest : public tessera::testing::TempSystemDirTest {
protected:
  DeviceManager manager() const {
    return DeviceManager(SystemConfig{16, "ipu2"}, dir_);
  }
};

std::string attachError(Device &d) {
  try {
    d.attach();
  } catch (const DeviceError &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected attach to throw DeviceError";
  return {};
}

} // namespace

TEST_F(AttachTest, AttachDetachAndAttachAgain) {
  DeviceManager m = manager();
  Device d = m.getDevice(3);
  EXPECT_FALSE(d.isAttached());
  EXPECT_TRUE(d.attach());
  EXPECT_TRUE(d.isAttached());
  EXPECT_TRUE(d.attach()); // attaching an attached device does nothing
  d.detach();
  EXPECT_FALSE(d.isAttached());
  d.detach();
  EXPECT_TRUE(d.attach());
}

TEST_F(AttachTest, SameIpuTwiceInOneProcessFailsClearly) {
  DeviceManager m = manager();
  Device pair = m.getDevice(16); // IPUs 0 and 1
  ASSERT_TRUE(pair.attach());
  Device single = m.getDevice(1);
  auto msg = attachError(single);
  EXPECT_THAT(msg, HasSubstr("cannot attach device 1 (IPU 1): IPU 1 is "
                             "already attached by this process (device 16)"));
  EXPECT_FALSE(single.isAttached());
  EXPECT_FALSE(single.tryAttach());
  Device again = m.getDevice(16);
  EXPECT_FALSE(again.tryAttach());
  // A failed attach of a larger device releases the IPUs it had taken.
  Device four = m.getDevice(24); // IPUs 0-3: 0 is held
  EXPECT_FALSE(four.tryAttach());
  Device three = m.getDevice(3);
  EXPECT_TRUE(three.attach());
  Device two = m.getDevice(2);
  EXPECT_TRUE(two.attach());
}

TEST_F(AttachTest, DetachAndDestructionFreeTheIpus) {
  DeviceManager m = manager();
  {
    Device d = m.getDevice(0);
    ASSERT_TRUE(d.attach());
    Device other = m.getDevice(0);
    EXPECT_FALSE(other.tryAttach());
    d.detach();
    EXPECT_TRUE(other.attach());
  } // both destroyed: 'other' detaches
  Device d = m.getDevice(16);
  EXPECT_TRUE(d.attach());
}

TEST_F(AttachTest, MovingAnAttachedDeviceKeepsItAttached) {
  DeviceManager m = manager();
  Device a = m.getDevice(5);
  ASSERT_TRUE(a.attach());
  Device b = std::move(a);
  EXPECT_FALSE(static_cast<bool>(a));
  EXPECT_TRUE(b.isAttached());
  EXPECT_FALSE(m.getDevice(5).tryAttach());
  Device c;
  EXPECT_THROW(c.getTarget(), DeviceError);
  c = std::move(b);
  EXPECT_TRUE(c.isAttached());
  c = m.getDevice(6); // move-assigning detaches the old device
  EXPECT_TRUE(m.getDevice(5).attach());
}

TEST_F(AttachTest, AttachmentsListTheHoldersOfHeldIpusOnly) {
  DeviceManager m = manager();
  EXPECT_TRUE(m.attachments().empty());
  Device d = m.getDevice(17); // IPUs 2 and 3
  ASSERT_TRUE(d.attach());
  auto records = m.attachments();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].ipu, 2u);
  EXPECT_EQ(records[1].ipu, 3u);
  for (const auto &r : records) {
    EXPECT_EQ(r.deviceId, 17u);
    EXPECT_EQ(r.pid, static_cast<long>(::getpid()));
    EXPECT_THAT(r.command, HasSubstr("tessera_device_tests"));
    EXPECT_FALSE(r.user.empty());
    EXPECT_EQ(r.attachTime.size(), 20u); // 2024-05-01T12:34:56Z
    EXPECT_EQ(r.attachTime.back(), 'Z');
  }
  d.detach();
  EXPECT_TRUE(m.attachments().empty());
}

TEST_F(AttachTest, IpusAreExclusiveAcrossProcessesAndFreedWhenTheHolderDies) {
  DeviceManager m = manager();
  int toChild[2], fromChild[2];
  ASSERT_EQ(::pipe(toChild), 0);
  ASSERT_EQ(::pipe(fromChild), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char status = 'A';
    try {
      Device d = DeviceManager(SystemConfig{16, "ipu2"}, dir_).getDevice(16);
      d.attach();
      if (::write(fromChild[1], &status, 1) != 1)
        ::_exit(1);
      char c;
      // Holds the device until the parent kills it.
      while (::read(toChild[0], &c, 1) < 0) {
      }
    } catch (...) {
      status = 'E';
      if (::write(fromChild[1], &status, 1) != 1)
        ::_exit(1);
    }
    ::_exit(0);
  }
  char status = 0;
  ASSERT_EQ(::read(fromChild[0], &status, 1), 1);
  ASSERT_EQ(status, 'A');

  auto records = m.attachments();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].ipu, 0u);
  EXPECT_EQ(records[1].ipu, 1u);
  EXPECT_EQ(records[1].pid, static_cast<long>(child));
  EXPECT_EQ(records[1].deviceId, 16u);

  Device mine = m.getDevice(1);
  auto msg = attachError(mine);
  EXPECT_THAT(
      msg, HasSubstr("IPU 1 is attached by process " + std::to_string(child)));
  EXPECT_THAT(msg, HasSubstr("device 16"));
  EXPECT_THAT(msg, HasSubstr("tessera monitor"));
  EXPECT_FALSE(mine.isAttached());

  ::kill(child, SIGKILL);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ::close(toChild[0]);
  ::close(toChild[1]);
  ::close(fromChild[0]);
  ::close(fromChild[1]);

  // The killed holder left its records behind, but its locks died with it.
  EXPECT_TRUE(m.attachments().empty());
  EXPECT_TRUE(mine.attach());
  records = m.attachments();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].ipu, 1u);
  EXPECT_EQ(records[0].pid, static_cast<long>(::getpid()));
}

TEST_F(AttachTest, AcquireAvailableDeviceTakesTheLowestFreeDevice) {
  DeviceManager m = manager();
  Device first = m.acquireAvailableDevice(4);
  EXPECT_TRUE(first.isAttached());
  EXPECT_EQ(first.getId(), 24u);  // IPUs 0-3
  Device single = m.getDevice(5); // IPU 5 blocks device 25 (IPUs 4-7)
  ASSERT_TRUE(single.attach());
  Device second = m.acquireAvailableDevice(4);
  EXPECT_EQ(second.getId(), 26u); // IPUs 8-11
  EXPECT_EQ(second.ipuIds().front(), 8u);
}

TEST_F(AttachTest, AcquireAvailableDeviceOfAMissingSizeSaysWhichSizesExist) {
  DeviceManager m(SystemConfig{4, "ipu2"}, dir_);
  try {
    m.acquireAvailableDevice(3);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError &e) {
    EXPECT_THAT(e.what(), HasSubstr("no device has 3 IPUs: this system of 4 "
                                    "ipu2 IPUs has devices of 1, 2 or 4 IPUs"));
  }
  EXPECT_THROW(m.acquireAvailableDevice(8), DeviceError);
  EXPECT_THROW(m.acquireAvailableDevice(0), DeviceError);
}

TEST_F(AttachTest, AcquireAvailableDeviceWhenAllAreHeldNamesTheHolders) {
  DeviceManager m(SystemConfig{4, "ipu2"}, dir_);
  Device a = m.acquireAvailableDevice(2);
  Device b = m.getDevice(3); // IPU 3 of device 5 (IPUs 2-3)
  ASSERT_TRUE(b.attach());
  try {
    m.acquireAvailableDevice(2);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError &e) {
    const std::string pid = std::to_string(::getpid());
    EXPECT_THAT(e.what(), HasSubstr("no free device of 2 IPUs: each of the 2 "
                                    "devices of 2 IPUs in this system of 4 "
                                    "IPUs has an attached IPU"));
    EXPECT_THAT(e.what(), HasSubstr("device 4 (IPUs 0-1): IPU 0 held by "
                                    "process " +
                                    pid));
    EXPECT_THAT(e.what(), HasSubstr("device 5 (IPUs 2-3): IPU 3 held by "
                                    "process " +
                                    pid));
    EXPECT_THAT(e.what(), HasSubstr("tessera monitor"));
  }
  try {
    m.acquireAvailableDevice(4);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError &e) {
    EXPECT_THAT(e.what(), HasSubstr("no free device of 4 IPUs: the only "
                                    "device of 4 IPUs in this system of 4 "
                                    "IPUs has an attached IPU; device 6 "
                                    "(IPUs 0-3): IPU 0 held by process"));
  }
  a.detach();
  std::vector<Device> singles;
  for (unsigned i = 0; i < 3; ++i) // IPUs 0-2; IPU 3 is b's
    singles.push_back(m.acquireAvailableDevice(1));
  EXPECT_EQ(singles[2].getId(), 2u);
  try {
    m.acquireAvailableDevice(1);
    FAIL() << "expected DeviceError: every IPU is held";
  } catch (const DeviceError &e) {
    EXPECT_THAT(e.what(), HasSubstr("device 3 (IPU 3): IPU 3 held by"));
  }
  singles.clear();
  b.detach();
  Device c = m.acquireAvailableDevice(2);
  EXPECT_EQ(c.getId(), 4u);
  Device d = m.acquireAvailableDevice(2);
  EXPECT_EQ(d.getId(), 5u);
}

TEST_F(AttachTest, ARecordNamingAGoneProcessIsNotShownAsTheHolder) {
  DeviceManager m = manager();
  Device d = m.getDevice(7);
  ASSERT_TRUE(d.attach());
  // A pid that surely exists no more: a child that has exited and been
  // reaped.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0)
    ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const std::string record = dir_ + "/ipu7.holder.json";
  std::string text = readFile(record);
  const std::string mine = "\"pid\":" + std::to_string(::getpid());
  ASSERT_NE(text.find(mine), std::string::npos) << text;
  text.replace(text.find(mine), mine.size(),
               "\"pid\":" + std::to_string(child));
  writeFileAtomically(record, text);

  auto records = m.attachments();
  ASSERT_EQ(records.size(), 1u); // the lock is still held
  EXPECT_EQ(records[0].ipu, 7u);
  EXPECT_EQ(records[0].pid, 0);
  EXPECT_EQ(records[0].command, "unknown");
  Device other = m.getDevice(7);
  EXPECT_THAT(attachError(other), HasSubstr("holder record is not readable"));
}
