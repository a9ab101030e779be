// The host with Burn/cpu, as a user meets it on a machine without a GPU: listed only when a
// filter names Burn, a short burn of every core with its counters and verdict (exit 0), an
// injected fault (exit 5), and bad flags (exit 2 with the reason, before any burning).
#include <gtest/gtest.h>

#include <string>

#include "cpu_topology.hpp"
#include "test_host.hpp"

namespace {

using xftest::kNoGpu;

TEST(BurnCpuHost, ListedOnlyOnRequest) {
  const xftest::HostResult all =
      xftest::run_host("--benchmark_list_tests --xfbench_suite=all", kNoGpu);
  EXPECT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(all.out.find("Burn/cpu"), std::string::npos);
  const xftest::HostResult named = xftest::run_host(
      "--benchmark_list_tests --benchmark_filter=Burn/cpu --xfbench_burn_seconds=30", kNoGpu);
  EXPECT_EQ(named.code, 0) << named.err;
  EXPECT_EQ(named.out, "Burn/cpu/seconds:30\n");
}

TEST(BurnCpuHost, BurnsEveryCoreWithoutAGpu) {
  const xftest::HostResult r = xftest::run_host(
      "--benchmark_filter=Burn/cpu --xfbench_burn_seconds=1 --benchmark_format=json", kNoGpu);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"name\": \"Burn/cpu/seconds:1\""), std::string::npos) << r.out;
  for (const char* counter : {"\"GFLOPS\":", "\"GFLOPS_core_min\":", "\"GFLOPS_core_median\":",
                              "\"errors\": 0", "\"faulty_sockets\": 0", "\"socket0_GFLOPS\":"})
    EXPECT_NE(r.out.find(counter), std::string::npos) << counter << " in " << r.out;
  EXPECT_NE(r.out.find("socket0 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("Burn/cpu/seconds:1 socket0 (cpu "), std::string::npos) << r.err;
}

TEST(BurnCpuHost, AFaultyCoreExits5) {
  const std::vector<int> cores = xfbench::burn::choose_burn_cores(
      {}, xfbench::burn::online_cpus(xfbench::burn::SysFs()), xfbench::burn::allowed_cpus());
  const std::string cpu = std::to_string(cores.back());
  const xftest::HostResult r =
      xftest::run_host("--benchmark_filter=Burn/cpu --xfbench_burn_seconds=1",
                       kNoGpu + " XFBENCH_BURN_TEST_CPU_FAULTS=" + cpu + ":0");
  EXPECT_EQ(r.code, 5) << r.out << r.err;
  EXPECT_NE(r.out.find("FAULTY (1 error: cpu" + cpu + " 1 in window 0)"), std::string::npos)
      << r.out;
}

TEST(BurnCpuHost, BadFlagsExit2) {
  const struct {
    const char* args;
    const char* says;
  } cases[] = {
      {"--xfbench_burn_cpu_cores=60000", "core 60000 does not exist on this host (online: "},
      {"--xfbench_burn_cpu_cores=99999", "'99999' is not a core or a range of cores"},
      {"--xfbench_burn_cpu_cores=0-", "--xfbench_burn_cpu_cores: '0-' is not a core or a range"},
      {"--xfbench_burn_cpu_cores=3-1", "'3-1' is not a core or a range of cores"},
      {"--xfbench_burn_cpu_cores=0,0-1", "--xfbench_burn_cpu_cores: core 0 named twice"},
      {"--xfbench_burn_cpu_cores=all", "'all' is not a core or a range of cores"},
      {"--xfbench_burn_seconds=0", "--xfbench_burn_seconds=0: a burn lasts a positive number"},
      {"--xfbench_burn_seconds=-1", "a burn lasts a positive number"},
      {"--xfbench_burn_cpu=maybe", "--xfbench_burn_cpu"},
  };
  for (const auto& c : cases) {
    const xftest::HostResult r =
        xftest::run_host(std::string("--benchmark_filter=Burn/cpu ") + c.args, kNoGpu);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(r.out.find("Burn/cpu"), std::string::npos) << c.args;
  }
  const xftest::HostResult hook = xftest::run_host("--benchmark_filter=Burn/cpu",
                                                   kNoGpu + " XFBENCH_BURN_TEST_CPU_FAULTS=zero:1");
  EXPECT_EQ(hook.code, 2);
  EXPECT_NE(hook.err.find("XFBENCH_BURN_TEST_CPU_FAULTS: 'zero:1' is not cpu:window"),
            std::string::npos)
      << hook.err;
}

}  // namespace
