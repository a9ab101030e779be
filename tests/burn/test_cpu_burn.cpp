// The CPU burn on this machine's cores, for a second or two: every core busy in every window on
// its own core, results checked (none wrong on a sound CPU), an injected fault counted exactly
// once in its core's and window's place, sockets and sensors read from a fake /sys tree.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cpu_burn.hpp"
#include "cpu_report.hpp"
#include "cpu_topology.hpp"
#include "fake_sys.hpp"
#include "xfbench/error.hpp"

namespace {

using namespace xfbench::burn;

std::vector<int> usable_cores() {
  return choose_burn_cores({}, online_cpus(SysFs()), allowed_cpus());
}

CpuBurnConfig short_burn(double seconds) {
  CpuBurnConfig c;
  c.cores = usable_cores();
  c.seconds = seconds;
  c.window_seconds = 0.25;
  c.progress_seconds = 0;
  c.name = "test";
  return c;
}

void expect_every_core_busy(const CpuBurnReport& r, std::size_t min_windows) {
  for (const CoreResult& c : r.cores) {
    ASSERT_TRUE(core_burned(c)) << c.cpu << ": " << c.not_run;
    EXPECT_GE(c.windows.size(), min_windows) << c.cpu;
    for (const CpuWindow& w : c.windows) {
      EXPECT_GT(w.chunks, 0u) << "cpu" << c.cpu;
      EXPECT_GT(w.seconds, 0) << "cpu" << c.cpu;
      EXPECT_GT(w.cpu_seconds, 0) << "cpu" << c.cpu;  // its thread ran (others may share it)
    }
    EXPECT_TRUE(core_pinned(c)) << "cpu" << c.cpu << " left its core";
    EXPECT_EQ(c.ran_on.size(), c.windows.size());
    EXPECT_GT(core_rate(c).gflops, 0) << c.cpu;
    EXPECT_EQ(c.ref_errors, 0u) << c.cpu;
  }
}

TEST(CpuBurn, EveryCoreBurnsAndChecks) {
  const CpuBurnConfig c = short_burn(2);
  const CpuBurnReport r = run_cpu_burn(c);
  ASSERT_EQ(r.cores.size(), c.cores.size());
  EXPECT_EQ(r.isa, detect_cpu_isa());
  expect_every_core_busy(r, 6);  // 2 s in windows of 0.25 s (the last may be short)
  for (const CoreResult& core : r.cores) {
    EXPECT_EQ(core_errors(core), 0u) << core.cpu;
    EXPECT_EQ(core.flops_per_chunk, chunk_flops(r.isa, kChunkSteps));
  }
  for (int s : sockets(r)) EXPECT_EQ(socket_verdict(r, s), "OK");
  EXPECT_FALSE(any_core_not_run(r));
}

// A fake host: two sockets (the first core in socket 0, the others in socket 1) and a package
// sensor; the faults on the last core, in windows 1 and 2.
TEST(CpuBurn, InjectedFaultsAreCountedPerCoreAndWindow) {
  CpuBurnConfig c = short_burn(1);
  xftest::FakeSys sys;
  for (std::size_t i = 0; i < c.cores.size(); ++i) {
    sys.write("/sys/devices/system/cpu/cpu" + std::to_string(c.cores[i]) +
                  "/topology/physical_package_id",
              i == 0 ? "0" : "1");
  }
  sys.write("/sys/class/hwmon/hwmon0/name", "coretemp");
  sys.write("/sys/class/hwmon/hwmon0/temp1_label", "Package id 0");
  sys.write("/sys/class/hwmon/hwmon0/temp1_input", "55000");
  c.sys_root = sys.root();
  const int victim = c.cores.back();
  c.faults = {{victim, 1}, {victim, 2}};
  const CpuBurnReport r = run_cpu_burn(c);
  expect_every_core_busy(r, 3);
  const CoreResult& hit = r.cores.back();
  ASSERT_GE(hit.windows.size(), 3u);
  EXPECT_EQ(core_errors(hit), 2u);
  EXPECT_EQ(hit.windows[0].mismatches, 0u);
  EXPECT_EQ(hit.windows[1].mismatches, 1u);
  EXPECT_EQ(hit.windows[2].mismatches, 1u);
  for (std::size_t i = 0; i + 1 < r.cores.size(); ++i) EXPECT_EQ(core_errors(r.cores[i]), 0u);
  const int bad_socket = r.cores.size() > 1 ? 1 : 0;
  EXPECT_TRUE(socket_faulty(r, bad_socket));
  EXPECT_EQ(socket_verdict(r, bad_socket),
            "FAULTY (2 errors: cpu" + std::to_string(victim) + " 1 in window 1, 1 in window 2)");
  if (r.cores.size() > 1) {
    EXPECT_EQ(sockets(r), std::vector<int>({0, 1}));
    EXPECT_EQ(socket_verdict(r, 0), "OK");
  }
  EXPECT_TRUE(r.sockets_known);
  EXPECT_EQ(r.sensors.package_temp_max, 55.0);
  EXPECT_EQ(r.sensors.package_temp_start, 55.0);
}

TEST(CpuBurn, EveryIsaThisCpuHas) {
  for (CpuIsa isa : {CpuIsa::avx512f, CpuIsa::avx2_fma, CpuIsa::neon, CpuIsa::sse2}) {
    if (!cpu_has(isa)) continue;
    CpuBurnConfig c = short_burn(0.3);
    c.isa = isa;
    c.cores.resize(1);
    const CpuBurnReport r = run_cpu_burn(c);
    expect_every_core_busy(r, 1);
    EXPECT_EQ(core_errors(r.cores[0]), 0u) << isa_name(isa);
  }
}

TEST(CpuBurn, RejectsWhatCannotRun) {
  CpuBurnConfig c = short_burn(1);
  c.faults = {{99999, 1}};
  EXPECT_THROW(run_cpu_burn(c), xfbench::InvalidArgument);
  c.faults.clear();
  c.cores.clear();
  EXPECT_THROW(run_cpu_burn(c), xfbench::InvalidArgument);
  c = short_burn(0);
  EXPECT_THROW(run_cpu_burn(c), xfbench::InvalidArgument);
}

}  // namespace
