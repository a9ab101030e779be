// The host with the Burn plugin, as a user meets it without a GPU: Burn stays out of the default
// suite and listing, a filter naming it brings it back, bad flags exit 2 before any GPU work, and
// --xfbench_devices without a GPU says so in one line (exit 4).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "test_host.hpp"

namespace {

using xftest::kNoGpu;

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(BurnHost, NotInTheDefaultSuite) {
  const xftest::HostResult plain = xftest::run_host("--benchmark_list_tests", kNoGpu);
  EXPECT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("Burn/"), std::string::npos) << plain.out;
  const xftest::HostResult all =
      xftest::run_host("--benchmark_list_tests --xfbench_suite=all", kNoGpu);
  EXPECT_EQ(all.out.find("Burn/"), std::string::npos);
  // Without a filter nothing of Burn runs either (the suite's GPU cases need a GPU: exit 4 here).
  const xftest::HostResult run = xftest::run_host("", kNoGpu);
  EXPECT_EQ(run.out.find("Burn/"), std::string::npos);
}

TEST(BurnHost, AFilterNamingBurnListsEveryDtypeAndTheCpu) {
  const xftest::HostResult r =
      xftest::run_host("--benchmark_list_tests --benchmark_filter='Burn.*'", kNoGpu);
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* t : {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8"}) {
    EXPECT_NE(r.out.find(std::string("Burn/") + t + "/seconds:60/iterations:1/manual_time\n"),
              std::string::npos)
        << t << " in " << r.out;
  }
  const xftest::HostResult some = xftest::run_host(
      "--benchmark_list_tests --benchmark_filter=Burn --xfbench_burn_dtypes=bf16,fp8 "
      "--xfbench_burn_seconds=3600",
      kNoGpu);
  EXPECT_EQ(count_of(some.out, "Burn/"), 3) << some.out;  // bf16, fp8 and the CPU burn
  EXPECT_NE(some.out.find("Burn/bf16/seconds:3600/"), std::string::npos);
  EXPECT_NE(some.out.find("Burn/cpu/seconds:3600\n"), std::string::npos);
}

TEST(BurnHost, BadFlagsExit2BeforeAnyGpuWork) {
  const struct {
    const char* flag;
    const char* says;
  } cases[] = {
      {"--xfbench_burn_seconds=0", "--xfbench_burn_seconds=0: a burn lasts a positive number"},
      {"--xfbench_burn_seconds=-5", "--xfbench_burn_seconds=-5: a burn lasts"},
      {"--xfbench_burn_mem_pct=96", "--xfbench_burn_mem_pct=96: expected 1 to 95"},
      {"--xfbench_burn_mem_pct=0.5", "--xfbench_burn_mem_pct=0.5: expected 1 to 95"},
      {"--xfbench_burn_dtypes=int8", "--xfbench_burn_dtypes: unknown dtype 'int8'"},
      {"--xfbench_burn_inputs=zeros", "--xfbench_burn_inputs=zeros: expected signed or gpu-burn"},
      {"--xfbench_gpus=zero", "--xfbench_gpus: 'zero' is not a GPU index"},
  };
  for (const auto& c : cases) {
    // No GPU visible: were the GPU looked at first, this would be exit 4.
    const xftest::HostResult r =
        xftest::run_host(std::string("--benchmark_filter=Burn ") + c.flag, kNoGpu);
    EXPECT_EQ(r.code, 2) << c.flag << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.flag << ": " << r.err;
    EXPECT_EQ(r.out.find("Burn/"), std::string::npos) << c.flag;
  }
}

TEST(BurnHost, DevicesWithoutGpu) {
  const xftest::HostResult r = xftest::run_host("--xfbench_devices", kNoGpu);
  EXPECT_EQ(r.code, 4) << r.out << r.err;
  // "... but no CUDA device visible (CUDA_VISIBLE_DEVICES='')." or, here, no driver at all.
  EXPECT_EQ(r.err.rfind("xfbench: --xfbench_devices needs a GPU, but ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
