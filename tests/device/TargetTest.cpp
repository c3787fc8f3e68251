#include "tessera/device/Target.hpp"
#include "tessera/support/Error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace tessera;
using ::testing::HasSubstr;

namespace {

template <typename E> std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const E &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

} // namespace

TEST(Target, Ipu2PresetHasTheMk2Figures) {
  Target t = Target::createIPUTarget(1);
  EXPECT_EQ(t.getTargetArchString(), "ipu2");
  EXPECT_EQ(t.getNumIPUs(), 1u);
  EXPECT_EQ(t.getTilesPerIPU(), 1472u);
  EXPECT_EQ(t.getNumTiles(), 1472u);
  EXPECT_EQ(t.getBytesPerTile(), 638976u);
  EXPECT_EQ(t.getMemoryBytes(), 1472ull * 638976ull);
  EXPECT_DOUBLE_EQ(t.getTileClockFrequency(), 1.33e9);
  EXPECT_EQ(t.getNumWorkerContexts(), 6u);
  EXPECT_EQ(t.getExchangeBytesPerCycle(), 4u);
  EXPECT_DOUBLE_EQ(t.getIpuLinkBandwidth(), 320e9);
  EXPECT_DOUBLE_EQ(t.getHostLinkBandwidth(), 64e9);
  EXPECT_EQ(t.getRemoteMemoryBytesPerIPU(), 64ull << 30);
  EXPECT_EQ(t.getMacsPerCyclePerTile(FLOAT, FLOAT), 16u);
  EXPECT_EQ(t.getMacsPerCyclePerTile(HALF, HALF), 64u);
  EXPECT_EQ(t.getMacsPerCyclePerTile(HALF, FLOAT), 32u);
  EXPECT_EQ(t, Target());
}

TEST(Target, Ipu1AndIpu21PresetsDifferWhereTheChipsDo) {
  Target mk1 = Target::createIPUTarget(1, "ipu1");
  EXPECT_EQ(mk1.getTilesPerIPU(), 1216u);
  EXPECT_EQ(mk1.getBytesPerTile(), 262144u);
  EXPECT_DOUBLE_EQ(mk1.getTileClockFrequency(), 1.6e9);
  EXPECT_EQ(mk1.getMacsPerCyclePerTile(FLOAT, FLOAT), 8u);
  EXPECT_EQ(mk1.getMacsPerCyclePerTile(HALF, FLOAT), 32u);
  EXPECT_DOUBLE_EQ(mk1.getIpuLinkBandwidth(), 64e9);
  EXPECT_EQ(mk1.getRemoteMemoryBytesPerIPU(), 0u);

  Target bow = Target::createIPUTarget(1, "ipu21");
  EXPECT_EQ(bow.getTargetArchString(), "ipu21");
  EXPECT_EQ(bow.getTilesPerIPU(), 1472u);
  EXPECT_EQ(bow.getBytesPerTile(), 638976u);
  EXPECT_DOUBLE_EQ(bow.getTileClockFrequency(), 1.85e9);
  EXPECT_EQ(bow.getMacsPerCyclePerTile(HALF, HALF), 64u);
  // Bow's fp16 peak: 1472 tiles x 64 MACs x 2 flops x 1.85 GHz ~ 350 TFLOPS.
  EXPECT_NEAR(1472 * 64 * 2 * bow.getTileClockFrequency() / 1e12, 348.6, 0.1);
}

TEST(Target, CostFiguresStartFromPoplarsElementwiseEstimates) {
  const CostFigures c = Target::createIPUTarget(1).costs();
  EXPECT_EQ(c.supervisorCyclesPerVertex, 11u);
  EXPECT_EQ(c.binaryOpWorkerCycles, 29u);
  EXPECT_EQ(c.binaryOpWorkerCyclesPerVector, 3u);
  EXPECT_EQ(c.syncCyclesOnChip, 150u);
  EXPECT_GT(c.syncCyclesAcrossIpus, c.syncCyclesOnChip);
}

TEST(Target, VectorWidthIsSixtyFourBits) {
  Target t;
  EXPECT_EQ(t.getVectorWidth(FLOAT), 2u);
  EXPECT_EQ(t.getVectorWidth(HALF), 4u);
  EXPECT_EQ(t.getVectorWidth(INT), 2u);
  EXPECT_EQ(t.getVectorWidth(UNSIGNED_CHAR), 8u);
  EXPECT_EQ(t.getTypeSize(HALF), 2u);
  EXPECT_EQ(t.getDataPathWidth(), 64u);
}

TEST(Target, TilesAreNumberedAcrossIpus) {
  Target t = Target::createIPUTarget(4);
  EXPECT_EQ(t.getNumTiles(), 4u * 1472u);
  EXPECT_EQ(t.tileIpu(0), 0u);
  EXPECT_EQ(t.tileIpu(1471), 0u);
  EXPECT_EQ(t.tileIpu(1472), 1u);
  EXPECT_EQ(t.tileIpu(4 * 1472 - 1), 3u);
  auto msg = errorOf<DeviceError>([&] { t.tileIpu(4 * 1472); });
  EXPECT_THAT(msg, HasSubstr("tile 5888"));
  EXPECT_THAT(msg, HasSubstr("numbered 0 to 5887"));
}

TEST(Target, OverridesReplaceFiguresByFieldName) {
  Target t = Target::createIPUTarget(2, "ipu2",
                                     {{"tilesPerIPU", "4"},
                                      {"bytesPerTile", "1024"},
                                      {"tileClockFrequency", "1e9"},
                                      {"syncCyclesOnChip", "0"},
                                      {"binaryOpWorkerCycles", "7"}});
  EXPECT_EQ(t.getNumTiles(), 8u);
  EXPECT_EQ(t.getBytesPerTile(), 1024u);
  EXPECT_DOUBLE_EQ(t.getTileClockFrequency(), 1e9);
  EXPECT_EQ(t.costs().syncCyclesOnChip, 0u);
  EXPECT_EQ(t.costs().binaryOpWorkerCycles, 7u);
  EXPECT_DOUBLE_EQ(t.cyclesToSeconds(1000), 1e-6);
}

TEST(Target, UnknownOverrideKeySuggestsTheFieldName) {
  auto msg = errorOf<OptionError>([] {
    Target::createIPUTarget(1, "ipu2", {{"tilesPerIpu", "4"}});
  });
  EXPECT_THAT(msg, HasSubstr("unknown target option \"tilesPerIpu\"; did you "
                             "mean \"tilesPerIPU\"?"));
  EXPECT_THAT(msg, HasSubstr("syncCyclesOnChip"));
}

TEST(Target, BadOverrideValuesAreErrors) {
  EXPECT_THAT(errorOf<OptionError>([] {
                Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "many"}});
              }),
              HasSubstr("invalid value \"many\" for target option "
                        "\"tilesPerIPU\""));
  EXPECT_THAT(errorOf<OptionError>([] {
                Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "0"}});
              }),
              HasSubstr("\"tilesPerIPU\" is 0 but must be at least 1"));
  EXPECT_THAT(errorOf<OptionError>([] {
                Target::createIPUTarget(1, "ipu2", {{"dataPathWidth", "48"}});
              }),
              HasSubstr("power of two"));
}

TEST(Target, IpusAndTilesHaveDocumentedCeilings) {
  // The largest target allowed is built; one more IPU or tile is an error
  // before anything per tile exists.
  EXPECT_EQ(Target::createIPUTarget(Target::kMaxIPUs).getNumIPUs(), 1024u);
  EXPECT_EQ(Target::createIPUTarget(128, "ipu2", {{"tilesPerIPU", "16384"}})
                .getNumTiles(),
            Target::kMaxTiles);
  EXPECT_THAT(errorOf<OptionError>([] { Target::createIPUTarget(65536); }),
              HasSubstr("a target has 1 to 1024 IPUs, not 65536"));
  EXPECT_THAT(
      errorOf<OptionError>([] {
        Target::createIPUTarget(1, "ipu2", {{"tilesPerIPU", "4294967295"}});
      }),
      HasSubstr("\"tilesPerIPU\" is 4294967295 but must be 1 to "
                "16384"));
  EXPECT_THAT(
      errorOf<OptionError>([] {
        Target::createIPUTarget(1024, "ipu2", {{"tilesPerIPU", "16384"}});
      }),
      HasSubstr("1024 IPUs of 16384 tiles is 16777216 tiles, more "
                "than the 2097152 a target may have"));
}

TEST(Target, UnknownArchitectureListsTheKnownOnes) {
  auto msg = errorOf<OptionError>([] { Target::createIPUTarget(1, "ipu3"); });
  EXPECT_THAT(msg, HasSubstr("\"ipu3\""));
  EXPECT_THAT(msg, HasSubstr("ipu1"));
  EXPECT_THAT(msg, HasSubstr("ipu2"));
  EXPECT_THAT(msg, HasSubstr("ipu21"));
  EXPECT_THROW(Target::createIPUTarget(0), DeviceError);
}

TEST(Target, AmpHasNoFloatIntoHalf) {
  EXPECT_THROW(Target().getMacsPerCyclePerTile(FLOAT, HALF), TypeError);
  EXPECT_THROW(Target().getMacsPerCyclePerTile(INT, INT), TypeError);
}

TEST(Target, FiguresRoundTripThroughOptionsAndJson) {
  Target t = Target::createIPUTarget(4, "ipu21",
                                     {{"tileClockFrequency", "1.23456789e9"},
                                      {"hostLinkBandwidth", "3.3e10"},
                                      {"exchangeFixedCycles", "77"}});
  EXPECT_EQ(Target::createIPUTarget(4, "ipu21", t.figuresAsOptions()), t);
  Target back = Target::fromJson(t.toJson());
  EXPECT_EQ(back, t);
  EXPECT_EQ(back.hash(), t.hash());
  EXPECT_EQ(back.figuresAsOptions().size(), Target::figureNames().size());
  EXPECT_THROW(Target::fromJson("{\"arch\": 1}"), SerializationError);
  EXPECT_THROW(Target::fromJson("not json"), SerializationError);
}

TEST(Target, Mk2TilePairsShareAnExchangeBus) {
  EXPECT_EQ(Target::createIPUTarget(1).getTilesPerSharedExchangeBus(), 2u);
  EXPECT_EQ(Target::createIPUTarget(1, "ipu21").getTilesPerSharedExchangeBus(),
            2u);
  EXPECT_EQ(Target::createIPUTarget(1, "ipu1").getTilesPerSharedExchangeBus(),
            1u);
  try {
    Target::createIPUTarget(1, "ipu2", {{"tilesPerSharedExchangeBus", "4"}});
    FAIL() << "expected OptionError";
  } catch (const OptionError &e) {
    EXPECT_THAT(e.what(), HasSubstr("must be 1"));
  }
}

TEST(Target, HashAndEqualitySeeEveryFigure) {
  Target a = Target::createIPUTarget(1);
  for (const auto &name : Target::figureNames()) {
    const std::string value = a.figuresAsOptions().at(name);
    // tilesPerSharedExchangeBus takes only 1 or 2.
    const std::string other = name == "tilesPerSharedExchangeBus" ? "1"
                              : value == "64"                     ? "128"
                                                                  : "64";
    Target b = Target::createIPUTarget(1, "ipu2", {{name, other}});
    EXPECT_NE(a, b) << name;
    EXPECT_NE(a.hash(), b.hash()) << name;
  }
  EXPECT_NE(a, Target::createIPUTarget(2));
  EXPECT_NE(a.hash(), Target::createIPUTarget(1, "ipu21").hash());
}
