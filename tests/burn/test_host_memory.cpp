// The host-memory test (--xfbench_burn_host_mem_pct): MemAvailable read from a fake /proc, every
// pattern written and verified without an error, an injected fault counted exactly once per pass
// it is in, the hook's parsing; through the host, its counters and verdict beside Burn/cpu, exit
// 5 for a fault, exit 2 for a share out of range.
#include <gtest/gtest.h>

#include <string>

#include "fake_sys.hpp"
#include "host_memory.hpp"
#include "test_host.hpp"
#include "xfbench/error.hpp"

namespace {

using namespace xfbench::burn;
using xftest::kNoGpu;

TEST(HostMemory, ReadsMemAvailable) {
  xftest::FakeSys fs;
  fs.write("/proc/meminfo",
           "MemTotal:       32768000 kB\nMemFree:         1000000 kB\n"
           "MemAvailable:   24000000 kB\nBuffers:          12345 kB\n");
  EXPECT_EQ(available_memory_bytes(fs.root() + "/"), 24000000ull * 1024);
  fs.write("/proc/meminfo", "MemTotal:       32768000 kB\n");  // an old kernel: no such line
  EXPECT_EQ(available_memory_bytes(fs.root() + "/"), 0u);
  HostMemConfig c;
  c.pct = 10, c.proc_root = fs.root() + "/";
  EXPECT_NE(run_host_memory_test(c).not_run.find("no MemAvailable"), std::string::npos);
  fs.remove("/proc/meminfo");
  EXPECT_EQ(available_memory_bytes(fs.root() + "/"), 0u);
}

TEST(HostMemory, EveryPatternReadsBackAsWritten) {
  HostMemConfig c;
  c.bytes = 8 << 20, c.seconds = 0, c.min_passes = 12;  // each of the six kinds twice
  const HostMemReport r = run_host_memory_test(c);
  EXPECT_TRUE(r.not_run.empty()) << r.not_run;
  EXPECT_EQ(r.bytes, std::size_t(8) << 20);
  EXPECT_EQ(r.passes, 12u);
  EXPECT_EQ(r.errors, 0u);
  EXPECT_GT(r.gb_per_s, 0.0);
  EXPECT_NE(host_memory_label(r).find("host memory OK (0.0 GB, 12 passes)"), std::string::npos)
      << host_memory_label(r);
  EXPECT_EQ(host_memory_counters(r).size(), 4u);
}

TEST(HostMemory, AWordThatForgetsIsCountedOncePerPass) {
  HostMemConfig c;
  c.bytes = 1 << 20, c.seconds = 0, c.min_passes = 3;
  c.faults = {{0, 17}, {2, 131071}, {2, 5}, {9, 3}};  // pass 9 never runs
  const HostMemReport r = run_host_memory_test(c);
  EXPECT_EQ(r.errors, 3u);
  EXPECT_NE(host_memory_label(r).find("host memory FAULTY (3 errors in"), std::string::npos)
      << host_memory_label(r);
}

TEST(HostMemory, FaultHookParses) {
  const std::vector<HostMemFault> f = parse_mem_faults("0:17,4:5");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1].pass, 4u);
  EXPECT_EQ(f[1].word, 5u);
  for (const char* bad : {"17", "a:b", "1:2:3", "1:"})
    EXPECT_THROW(parse_mem_faults(bad), xfbench::InvalidArgument) << bad;
}

TEST(HostMemoryHost, BesideBurnCpuAndItsVerdicts) {
  const std::string args =
      "--benchmark_filter=Burn/cpu --xfbench_burn_seconds=1 "
      "--xfbench_burn_host_mem_pct=1 --benchmark_format=json";
  xftest::HostResult r = xftest::run_host(args, kNoGpu);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"name\": \"Burn/cpu/seconds:1/mem:1\""), std::string::npos) << r.out;
  for (const char* counter :
       {"\"host_mem_GB\":", "\"host_mem_passes\":", "\"host_mem_errors\": 0", "host memory OK ("})
    EXPECT_NE(r.out.find(counter), std::string::npos) << counter << " in " << r.out;
  r = xftest::run_host(args, kNoGpu + " XFBENCH_BURN_TEST_MEM_FAULTS=0:1000");
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_NE(r.out.find("host memory FAULTY (1 error in"), std::string::npos) << r.out;
  for (const char* pct : {"91", "-1", "ten"}) {
    r = xftest::run_host(
        std::string("--benchmark_filter=Burn/cpu --xfbench_burn_host_mem_pct=") + pct, kNoGpu);
    EXPECT_EQ(r.code, 2) << pct;
    EXPECT_NE(r.err.find("--xfbench_burn_host_mem_pct"), std::string::npos) << r.err;
  }
}

}  // namespace
