#include "tessera/device/DeviceManager.hpp"
#include "tessera/support/Error.hpp"
#include "tessera/support/File.hpp"

#include "device/TempSystemDir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tessera;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

class DeviceManagerTest : public tessera::testing::TempSystemDirTest {
protected:
  void SetUp() override {
    TempSystemDirTest::SetUp();
    ::unsetenv("TESSERA_SYSTEM");
    ::unsetenv("TESSERA_SYSTEM_CONFIG");
  }
  void TearDown() override {
    ::unsetenv("TESSERA_SYSTEM");
    ::unsetenv("TESSERA_SYSTEM_CONFIG");
    TempSystemDirTest::TearDown();
  }
  DeviceManager manager(unsigned ipus, const char *arch = "ipu2") {
    return DeviceManager(SystemConfig{ipus, arch}, dir_);
  }
};

std::string deviceErrorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const DeviceError &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a DeviceError";
  return {};
}

} // namespace

TEST_F(DeviceManagerTest, SixteenIpusAreNumberedAsGraphcoreNumbersThem) {
  DeviceManager m = manager(16);
  EXPECT_EQ(m.getNumIPUs(), 16u);
  EXPECT_EQ(m.getNumDevices(), 31u);
  EXPECT_THAT(m.deviceIpus(0), ElementsAre(0u));
  EXPECT_THAT(m.deviceIpus(15), ElementsAre(15u));
  EXPECT_THAT(m.deviceIpus(16), ElementsAre(0u, 1u));
  EXPECT_THAT(m.deviceIpus(23), ElementsAre(14u, 15u));
  EXPECT_THAT(m.deviceIpus(24), ElementsAre(0u, 1u, 2u, 3u));
  EXPECT_THAT(m.deviceIpus(27), ElementsAre(12u, 13u, 14u, 15u));
  EXPECT_EQ(m.deviceIpus(28).size(), 8u);
  EXPECT_EQ(m.deviceIpus(29).front(), 8u);
  EXPECT_EQ(m.deviceIpus(30).size(), 16u);
  auto msg = deviceErrorOf([&] { m.getDevice(31); });
  EXPECT_THAT(msg, HasSubstr("no device has id 31"));
  EXPECT_THAT(msg, HasSubstr("ids 0 to 30"));
}

TEST_F(DeviceManagerTest, FourIpusGiveSevenDevices) {
  DeviceManager m = manager(4, "ipu21");
  auto list = m.listDevices();
  ASSERT_EQ(list.size(), 7u);
  EXPECT_THAT(list[4].ipus, ElementsAre(0u, 1u));
  EXPECT_THAT(list[5].ipus, ElementsAre(2u, 3u));
  EXPECT_THAT(list[6].ipus, ElementsAre(0u, 1u, 2u, 3u));
  for (unsigned id = 0; id < 7; ++id)
    EXPECT_EQ(list[id].id, id);
  EXPECT_EQ(list[6].arch, "ipu21");
  EXPECT_EQ(list[6].tilesPerIPU, 1472u);
  EXPECT_EQ(list[6].bytesPerTile, 638976u);
}

TEST_F(DeviceManagerTest, NonPowerOfTwoSystemsGroupOnlyWholePowersOfTwo) {
  DeviceManager m = manager(6);
  // 6 singles, 3 pairs, one four; no eight.
  EXPECT_EQ(m.getNumDevices(), 10u);
  EXPECT_THAT(m.deviceIpus(9), ElementsAre(0u, 1u, 2u, 3u));
  EXPECT_TRUE(m.getDevices(8).empty());
}

TEST_F(DeviceManagerTest, GetDevicesReturnsEveryDeviceOfTheRequestedSize) {
  DeviceManager m = manager(16);
  auto pairs = m.getDevices(TargetType::IPU, 2);
  ASSERT_EQ(pairs.size(), 8u);
  EXPECT_EQ(pairs[0].getId(), 16u);
  EXPECT_THAT(pairs[0].ipuIds(), ElementsAre(0u, 1u));
  EXPECT_EQ(pairs[7].getId(), 23u);
  EXPECT_EQ(pairs[7].getTarget().getNumIPUs(), 2u);
  EXPECT_EQ(pairs[7].getTarget().getNumTiles(), 2u * 1472u);
  EXPECT_FALSE(pairs[0].isAttached());
  EXPECT_EQ(pairs[0].getTargetType(), TargetType::IPU);
  EXPECT_EQ(m.getDevices(1).size(), 16u);
  EXPECT_EQ(m.getDevices(16).size(), 1u);
  EXPECT_TRUE(m.getDevices(3).empty());
  EXPECT_TRUE(m.getDevices(32).empty());
  EXPECT_TRUE(m.getDevices(0).empty());
  EXPECT_THROW(m.getDevices(TargetType::IPU_MODEL, 1), DeviceError);
}

TEST_F(DeviceManagerTest, SystemSpecsParseCountAndArchitecture) {
  auto c = SystemConfig::fromSpec("4xipu21", "TESSERA_SYSTEM");
  EXPECT_EQ(c.numIPUs, 4u);
  EXPECT_EQ(c.arch, "ipu21");
  c = SystemConfig::fromSpec("8", "TESSERA_SYSTEM");
  EXPECT_EQ(c.numIPUs, 8u);
  EXPECT_EQ(c.arch, "ipu2");
  for (const char *bad :
       {"", "x", "ipu2", "16xipu3", "16-ipu2", "0xipu2", "99999xipu2"}) {
    auto msg =
        deviceErrorOf([&] { SystemConfig::fromSpec(bad, "TESSERA_SYSTEM"); });
    EXPECT_THAT(msg, HasSubstr("TESSERA_SYSTEM")) << bad;
  }
  EXPECT_THAT(deviceErrorOf([] { SystemConfig::fromSpec("abc", "S"); }),
              HasSubstr("\"16xipu2\""));
}

TEST_F(DeviceManagerTest, SystemJsonNeedsIpusAndKnowsItsKeys) {
  auto c = SystemConfig::fromJson(R"({"ipus": 8, "arch": "ipu1"})", "f");
  EXPECT_EQ(c.numIPUs, 8u);
  EXPECT_EQ(c.arch, "ipu1");
  EXPECT_EQ(SystemConfig::fromJson(R"({"ipus": 2})", "f").arch, "ipu2");
  EXPECT_THAT(
      deviceErrorOf([] { SystemConfig::fromJson(R"({"ipu": 2})", "f"); }),
      HasSubstr("\"ipus\""));
  EXPECT_THAT(deviceErrorOf([] {
                SystemConfig::fromJson(R"({"ipus": 2, "arc": "ipu2"})", "f");
              }),
              HasSubstr("did you mean \"arch\"?"));
  EXPECT_THAT(
      deviceErrorOf([] { SystemConfig::fromJson(R"({"ipus": -2})", "f"); }),
      HasSubstr("positive integer"));
  EXPECT_THAT(deviceErrorOf([] { SystemConfig::fromJson("{", "cfg.json"); }),
              HasSubstr("cfg.json"));
}

TEST_F(DeviceManagerTest, EnvironmentChoosesTheSystem) {
  DeviceManager byDefault = DeviceManager::createDeviceManager();
  EXPECT_EQ(byDefault.getNumIPUs(), 16u);
  EXPECT_EQ(byDefault.getArch(), "ipu2");
  EXPECT_EQ(byDefault.getSystemDirectory(), dir_);

  const std::string config = dir_ + "/system.json";
  writeFileAtomically(config, R"({"ipus": 8, "arch": "ipu21"})");
  ::setenv("TESSERA_SYSTEM_CONFIG", config.c_str(), 1);
  DeviceManager fromFile = DeviceManager::createDeviceManager();
  EXPECT_EQ(fromFile.getNumIPUs(), 8u);
  EXPECT_EQ(fromFile.getArch(), "ipu21");

  ::setenv("TESSERA_SYSTEM", "4xipu1", 1); // wins over the config file
  DeviceManager fromSpec = DeviceManager::createDeviceManager();
  EXPECT_EQ(fromSpec.getNumIPUs(), 4u);
  EXPECT_EQ(fromSpec.getArch(), "ipu1");
  EXPECT_EQ(fromSpec.getDevice(0).getTarget().getTilesPerIPU(), 1216u);

  ::unsetenv("TESSERA_SYSTEM");
  ::setenv("TESSERA_SYSTEM_CONFIG", (dir_ + "/missing.json").c_str(), 1);
  auto msg = deviceErrorOf([] { DeviceManager::createDeviceManager(); });
  EXPECT_THAT(msg, HasSubstr("TESSERA_SYSTEM_CONFIG"));
  EXPECT_THAT(msg, HasSubstr("missing.json"));
}

TEST_F(DeviceManagerTest, CreatesTheSystemFolderWhenMissing) {
  const std::string nested = dir_ + "/a/b";
  DeviceManager m(SystemConfig{2, "ipu2"}, nested);
  Device d = m.getDevice(2);
  EXPECT_TRUE(d.attach());
  EXPECT_TRUE(std::filesystem::exists(nested + "/ipu0.lock"));
}
