#include "tessera/device/IPUModel.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tessera;
using ::testing::HasSubstr;

TEST(IPUModel, DefaultsToOneIpu2WithThePresetFigures) {
  IPUModel model;
  EXPECT_EQ(model.version, "ipu2");
  EXPECT_EQ(model.numIPUs, 1u);
  EXPECT_EQ(model.tilesPerIPU, 1472u);
  EXPECT_EQ(model.memoryBytesPerTile, 638976u);
  EXPECT_DOUBLE_EQ(model.tileClockFrequency, 1.33e9);
  EXPECT_EQ(model.exchangeBytesPerCycle, 4u);
  EXPECT_EQ(model.numWorkerContexts, 6u);
  EXPECT_EQ(model.minIPUSyncDelay, 0u);
  EXPECT_EQ(model.relativeSyncDelay, IPUModel::RelativeSyncDelayType::AUTO);
  EXPECT_EQ(model.getTarget(), Target::createIPUTarget(1));
}

TEST(IPUModel, VersionSelectsThePreset) {
  IPUModel mk1("ipu1");
  EXPECT_EQ(mk1.tilesPerIPU, 1216u);
  EXPECT_EQ(mk1.getTarget().getTargetArchString(), "ipu1");
  EXPECT_DOUBLE_EQ(IPUModel("ipu21").tileClockFrequency, 1.85e9);
  EXPECT_THROW(IPUModel("ipu9"), OptionError);
}

TEST(IPUModel, FieldsShapeTheDeviceTarget) {
  IPUModel model;
  model.numIPUs = 2;
  model.tilesPerIPU = 4;
  model.memoryBytesPerTile = 4096;
  model.tileClockFrequency = 1e9;
  model.exchangeBytesPerCycle = 8;
  model.numWorkerContexts = 4;
  model.ipuLinkBandwidth = 1e9;
  model.hostLinkBandwidth = 2e9;
  model.compileIPUCode = true;
  Device device = model.createDevice();
  const Target &t = device.getTarget();
  EXPECT_EQ(t.getNumIPUs(), 2u);
  EXPECT_EQ(t.getNumTiles(), 8u);
  EXPECT_EQ(t.getBytesPerTile(), 4096u);
  EXPECT_DOUBLE_EQ(t.getTileClockFrequency(), 1e9);
  EXPECT_EQ(t.getExchangeBytesPerCycle(), 8u);
  EXPECT_EQ(t.getNumWorkerContexts(), 4u);
  EXPECT_DOUBLE_EQ(t.getIpuLinkBandwidth(), 1e9);
  EXPECT_DOUBLE_EQ(t.getHostLinkBandwidth(), 2e9);
  EXPECT_EQ(device.getNumIPUs(), 2u);
}

TEST(IPUModel, SyncDelaysFollowTheRelativeSyncDelaySetting) {
  IPUModel model;
  model.minIPUSyncDelay = 5;
  const CostFigures presets;
  EXPECT_EQ(model.getTarget().costs().syncCyclesOnChip,
            presets.syncCyclesOnChip + 5);
  EXPECT_EQ(model.getTarget().costs().syncCyclesAcrossIpus,
            presets.syncCyclesAcrossIpus + 5);
  model.minIPUSyncDelay = 0;
  model.relativeSyncDelay = IPUModel::RelativeSyncDelayType::NO_DELAY;
  EXPECT_EQ(model.getTarget().costs().syncCyclesOnChip, 0u);
  EXPECT_EQ(model.getTarget().costs().syncCyclesAcrossIpus, 0u);
}

TEST(IPUModel, CreateDeviceOptionsOverrideFurtherFigures) {
  IPUModel model;
  model.tilesPerIPU = 16;
  Device d = model.createDevice(
      {{"defaultVertexWorkerCycles", "55"}, {"tilesPerIPU", "8"}});
  EXPECT_EQ(d.getTarget().costs().defaultVertexWorkerCycles, 55u);
  EXPECT_EQ(d.getTarget().getTilesPerIPU(), 8u);
  EXPECT_THROW(model.createDevice({{"noSuchFigure", "1"}}), OptionError);
}

TEST(IPUModel, ModelDevicesAreNeverExclusive) {
  IPUModel model;
  Device a = model.createDevice();
  Device b = model.createDevice();
  EXPECT_TRUE(a.isModel());
  EXPECT_EQ(a.getTargetType(), TargetType::IPU_MODEL);
  EXPECT_TRUE(a.ipuIds().empty());
  EXPECT_FALSE(a.isAttached());
  EXPECT_TRUE(a.attach());
  EXPECT_TRUE(b.attach());
  EXPECT_TRUE(a.tryAttach());
  EXPECT_TRUE(a.isAttached() && b.isAttached());
  a.detach();
  EXPECT_FALSE(a.isAttached());
}

TEST(IPUModel, TooManyIpusFailBeforeAnythingIsBuilt) {
  IPUModel model;
  model.numIPUs = 65536;
  try {
    model.createDevice();
    ADD_FAILURE() << "65536 IPUs were accepted";
  } catch (const OptionError &e) {
    EXPECT_THAT(e.what(), HasSubstr("a target has 1 to 1024 IPUs, not 65536"));
  }
  model.numIPUs = 1;
  model.tilesPerIPU = 4294967295u;
  EXPECT_THROW(model.createDevice(), OptionError);
}
