// The PopDist environment `tessera poprun` sets, read back through
// popdist:: and dist::instanceFromEnvironment, and its errors.
#include "tessera/dist/Instances.hpp"

#include "popdist/popdist.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

using namespace tessera::dist;
using ::testing::HasSubstr;

namespace {

// Sets the variables for one test and removes them after it.
class PopdistVariables : public ::testing::Test {
protected:
  void set(const std::vector<std::pair<std::string, std::string>> &vars) {
    for (const auto &[name, value] : vars) {
      ::setenv(name.c_str(), value.c_str(), 1);
      names_.push_back(name);
    }
  }
  void TearDown() override {
    for (const std::string &n : names_)
      ::unsetenv(n.c_str());
  }

private:
  std::vector<std::string> names_;
};

} // namespace

TEST_F(PopdistVariables, OutsideALaunchThereIsOneInstanceOfOneReplica) {
  EXPECT_FALSE(popdist::isPopdistEnvSet());
  EXPECT_EQ(popdist::getNumInstances(), 1u);
  EXPECT_EQ(popdist::getInstanceIndex(), 0u);
  EXPECT_EQ(popdist::getNumLocalReplicas(), 1u);
  EXPECT_EQ(popdist::getReplicaIndexOffset(), 0u);
}

TEST_F(PopdistVariables, PoprunsVariablesGiveEachInstanceItsReplicas) {
  // Instance 2 of 4 running 8 replicas of 2 IPUs: replicas 4 and 5.
  set(popdistEnvironment(4, 2, 8, 2));
  EXPECT_TRUE(popdist::isPopdistEnvSet());
  EXPECT_EQ(popdist::getNumInstances(), 4u);
  EXPECT_EQ(popdist::getInstanceIndex(), 2u);
  EXPECT_EQ(popdist::getNumLocalReplicas(), 2u);
  EXPECT_EQ(popdist::getReplicaIndexOffset(), 4u);
  EXPECT_EQ(popdist::getNumTotalReplicas(), 8u);
  EXPECT_EQ(popdist::getNumIpusPerReplica(), 2u);
  EXPECT_EQ(instanceFromEnvironment().ipuOffset, 8u);
}

TEST_F(PopdistVariables, VariablesThatDoNotFitTogetherAreDistErrors) {
  set(popdistEnvironment(2, 1, 4, 1));
  set({{"POPDIST_NUM_LOCAL_REPLICAS", "3"}});
  try {
    instanceFromEnvironment();
    FAIL() << "no DistError";
  } catch (const DistError &e) {
    EXPECT_THAT(e.what(), HasSubstr("instance 1 of 2 with 3 of 4 replicas"));
  }
  set({{"POPDIST_NUM_LOCAL_REPLICAS", "two"}});
  EXPECT_THROW(instanceFromEnvironment(), DistError);
}

TEST_F(PopdistVariables, OneInstanceNeedsNoMpi) {
  Instances alone(instanceFromEnvironment());
  EXPECT_TRUE(alone.writesFiles());
  EXPECT_EQ(alone.sessionInstances().count, 1u);
  EXPECT_NO_THROW(alone.checkSameOptions({{"--model", "mlp"}}));
  EXPECT_EQ(alone.mpiStats().calls, 0u);
}
