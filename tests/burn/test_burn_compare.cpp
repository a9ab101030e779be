// Alone against together (--xfbench_burn_compare): the comparison's counters and label from
// made-up counters of the three kinds of case, the flag for GPUs that lose more than the stated
// share, and the host's order of the cases (alone first, so the together ones can compare).
#include <gtest/gtest.h>

#include <string>

#include "burn_compare.hpp"
#include "test_host.hpp"

namespace {

using namespace xfbench::burn;

TEST(BurnCompare, EachDeviceAloneAndItsShareTogether) {
  const Counters gpu_alone = {{"gpu0_TFLOPS", 675.0},
                              {"gpu1_TFLOPS", 680.0},
                              {"gpu0_TFLOPS_min", 600.0},
                              {"TFLOPS", 1355.0}};
  const Counters cpu_alone = {{"socket0_GFLOPS", 2000.0}, {"GFLOPS", 2000.0}};
  const Counters together = {{"gpu0_TFLOPS", 674.0},
                             {"gpu1_TFLOPS", 646.0},  // 95%: more than 3% lost
                             {"cpu_socket0_GFLOPS", 2100.0},
                             {"socket0_GFLOPS", 1.0}};  // not the CPU burn's: ignored
  const auto c = compare_counters(gpu_alone, cpu_alone, together);
  const Counters m(c.begin(), c.end());
  ASSERT_EQ(m.size(), 6u);  // gpu0, gpu1, socket0: alone and together_pct each
  EXPECT_DOUBLE_EQ(m.at("gpu0_alone"), 675.0);
  EXPECT_NEAR(m.at("gpu0_together_pct"), 99.85, 0.01);
  EXPECT_NEAR(m.at("gpu1_together_pct"), 95.0, 1e-9);
  EXPECT_NEAR(m.at("socket0_together_pct"), 105.0, 1e-9);
  EXPECT_EQ(m.count("gpu0_TFLOPS_min_alone"), 0u);
  EXPECT_TRUE(gpus_lose(c, 3));
  EXPECT_FALSE(gpus_lose(c, 6));
  EXPECT_EQ(compare_label(c, 3),
            "together/alone: gpu0 99.9%, gpu1 95.0%, socket0 105.0%; GPUs LOSE beside the CPUs: "
            "gpu1 95.0% of alone (more than 3% lost)");
  EXPECT_EQ(compare_label(c, 6), "together/alone: gpu0 99.9%, gpu1 95.0%, socket0 105.0%");
}

TEST(BurnCompare, NothingAloneNothingSaid) {
  const Counters together = {{"gpu0_TFLOPS", 674.0}, {"cpu_socket0_GFLOPS", 2100.0}};
  const auto c = compare_counters({}, {}, together);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(compare_label(c, 3), "");
  EXPECT_FALSE(gpus_lose(c, 3));
  // A GPU that did not burn alone (0 TFLOPS) is not compared: no division by zero.
  EXPECT_TRUE(compare_counters({{"gpu0_TFLOPS", 0.0}}, {}, together).empty());
}

TEST(BurnCompareHost, AloneCasesComeFirst) {
  const xftest::HostResult r = xftest::run_host(
      "--benchmark_list_tests --benchmark_filter='Burn/(bf16|fp16|cpu)' "
      "--xfbench_burn_compare=true "
      "--xfbench_burn_seconds=30 --xfbench_burn_dtypes=bf16,fp16",
      xftest::kNoGpu);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "Burn/bf16/seconds:30/iterations:1/manual_time\n"
            "Burn/fp16/seconds:30/iterations:1/manual_time\nBurn/cpu/seconds:30\n"
            "Burn/bf16/seconds:30/cpu:on/iterations:1/manual_time\n"
            "Burn/fp16/seconds:30/cpu:on/iterations:1/manual_time\n");
  const xftest::HostResult bad = xftest::run_host(
      "--benchmark_filter=Burn/cpu --xfbench_burn_max_loss_pct=101", xftest::kNoGpu);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--xfbench_burn_max_loss_pct"), std::string::npos) << bad.err;
}

}  // namespace
