// Which GPU a process started by mpirun/srun/torchrun runs its one-GPU cases on.
#include <gtest/gtest.h>

#include <cstdlib>

#include "launcher.hpp"

namespace {

using xfbench::host::default_device;
using xfbench::host::launcher_local_rank;
using xfbench::host::launcher_rank;

const char* const kVars[] = {
    "OMPI_COMM_WORLD_RANK",       "PMIX_RANK",       "PMI_RANK",      "SLURM_PROCID",
    "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"};

struct Launcher : ::testing::Test {
  void SetUp() override {
    for (const char* v : kVars) unsetenv(v);
  }
  void TearDown() override { SetUp(); }
};

TEST_F(Launcher, NoneWithoutItsVariables) {
  EXPECT_EQ(launcher_rank(), nullptr);
  EXPECT_EQ(launcher_local_rank(), -1);
}

TEST_F(Launcher, ReadsEachLaunchersLocalRank) {
  setenv("SLURM_LOCALID", "3", 1);
  EXPECT_EQ(launcher_local_rank(), 3);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);  // Open MPI's comes first
  EXPECT_EQ(launcher_local_rank(), 1);
  setenv("OMPI_COMM_WORLD_RANK", "5", 1);
  EXPECT_STREQ(launcher_rank(), "5");
}

TEST_F(Launcher, IgnoresAMalformedLocalRank) {
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "x1", 1);
  setenv("LOCAL_RANK", "2", 1);
  EXPECT_EQ(launcher_local_rank(), 2);
  setenv("LOCAL_RANK", "-2", 1);
  EXPECT_EQ(launcher_local_rank(), -1);
}

TEST(DefaultDevice, EachRankItsOwnGpu) {
  // Without this every rank's one-GPU case ran on GPU 0 at once (2x H200 under mpirun: half the
  // samples/s each, and a dp "scaling" of 2.03 against that baseline).
  EXPECT_EQ(default_device(false, 0, 0, 2), 0);
  EXPECT_EQ(default_device(false, 0, 1, 2), 1);
  EXPECT_EQ(default_device(false, 0, 9, 8), 1);  // more ranks than GPUs on the node
}

TEST(DefaultDevice, TheFlagWinsAndNoLauncherMeansTheFlag) {
  EXPECT_EQ(default_device(true, 0, 1, 2), 0);
  EXPECT_EQ(default_device(true, 5, 1, 2), 5);  // select_device then rejects it with the count
  EXPECT_EQ(default_device(false, 0, -1, 2), 0);
  EXPECT_EQ(default_device(false, 0, 1, 0), 0);
}

}  // namespace
