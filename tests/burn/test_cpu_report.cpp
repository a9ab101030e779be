// What a CPU burn's results say, on made-up results: rates and clocks per core, verdicts per
// socket, the progress and summary lines, counters (absent sensors absent) and the label.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "cpu_report.hpp"

namespace {

using namespace xfbench::burn;

// Core `cpu` of `socket`: 4 windows of 0.5 s, 100 chunks of 1e8 FLOP each (20 GFLOPS), its clock
// measured at 2000 MHz (10 FLOP/cycle).
CoreResult core(int cpu, int socket) {
  CoreResult c;
  c.cpu = cpu;
  c.socket = socket;
  c.flops_per_chunk = 1e8;
  for (int w = 0; w < 4; ++w) {
    CpuWindow win;
    win.seconds = 0.5;
    win.chunks = 100;
    win.clock_mhz = 2000;
    win.cpu_seconds = 0.5;
    c.windows.push_back(win);
    c.ran_on.push_back(cpu);
  }
  return c;
}

// Two sockets of two cores; core 3 of socket 1 wrong twice in window 2 and once against the
// reference; sensors: package temperatures and power, no frequency or throttle counts.
CpuBurnReport two_sockets() {
  CpuBurnReport r;
  r.isa = CpuIsa::avx2_fma;
  r.peak_flop_per_cycle = 32;
  r.seconds = 2;
  r.cores = {core(0, 0), core(1, 0), core(2, 1), core(3, 1)};
  r.cores[1].windows[0].chunks = 50;  // core 1: 17.5 GFLOPS, another thread beside it a while
  r.cores[1].windows[0].cpu_seconds = 0.3;
  r.cores[3].windows[2].mismatches = 2;
  r.cores[3].ref_errors = 1;
  r.sensors.package_temp_start = 41;
  r.sensors.package_temp_max = 78;
  r.sensors.power_w = 160;
  r.sensors.absent = {"no core frequency: x absent", "no throttle counts: y absent"};
  return r;
}

std::map<std::string, double> counters(const CpuBurnReport& r, const std::string& prefix = "") {
  std::map<std::string, double> m;
  for (const auto& [name, value] : cpu_counters(r, prefix)) {
    EXPECT_EQ(m.count(name), 0u) << name << " twice";
    m[name] = value;
  }
  return m;
}

TEST(CpuReport, CoreRate) {
  const CoreRate rate = core_rate(core(0, 0));
  EXPECT_NEAR(rate.gflops, 20, 1e-9);
  EXPECT_EQ(rate.clock_mhz, 2000);
  EXPECT_NEAR(rate.flop_per_cycle, 10, 1e-9);
  EXPECT_EQ(rate.busy, 1);
  CoreResult none = core(0, 0);
  for (CpuWindow& w : none.windows) w.clock_mhz = 0;  // no probe on this architecture
  EXPECT_EQ(core_rate(none).clock_mhz, 0);
  EXPECT_EQ(core_rate(none).flop_per_cycle, 0);
  EXPECT_EQ(core_rate(CoreResult{}).gflops, 0);
}

TEST(CpuReport, VerdictsPerSocket) {
  CpuBurnReport r = two_sockets();
  EXPECT_EQ(sockets(r), std::vector<int>({0, 1}));
  EXPECT_FALSE(socket_faulty(r, 0));
  EXPECT_TRUE(socket_faulty(r, 1));
  EXPECT_EQ(socket_verdict(r, 0), "OK");
  EXPECT_EQ(socket_verdict(r, 1), "FAULTY (3 errors: cpu3 2 in window 2, 1 against the reference)");
  r.cores[2].windows[0].mismatches = 1;
  EXPECT_EQ(socket_verdict(r, 1),
            "FAULTY (4 errors: cpu2 1 in window 0; cpu3 2 in window 2, 1 against the "
            "reference)");
  r.cores[1].not_run = "cannot pin a thread to it: Invalid argument";
  EXPECT_TRUE(any_core_not_run(r));
  EXPECT_EQ(socket_verdict(r, 0), "OK (cpu1 NOT RUN: cannot pin a thread to it: Invalid argument)");
  r.cores[0].not_run = "x";
  EXPECT_EQ(socket_verdict(r, 0).rfind("NOT RUN (cpu0 NOT RUN: x; cpu1", 0), 0u);
  EXPECT_FALSE(socket_faulty(r, 0));
}

TEST(CpuReport, Counters) {
  const auto m = counters(two_sockets());
  EXPECT_NEAR(m.at("GFLOPS"), 77.5, 1e-9);
  EXPECT_NEAR(m.at("GFLOPS_core_min"), 17.5, 1e-9);
  EXPECT_NEAR(m.at("GFLOPS_core_median"), 20, 1e-9);
  EXPECT_NEAR(m.at("pct_peak"), 100 * 77.5 / (4 * 32 * 2.0), 1e-9);
  EXPECT_EQ(m.at("clock_MHz_min"), 2000);
  EXPECT_NEAR(m.at("busy_pct_min"), 100 * 1.8 / 2, 1e-9);
  EXPECT_EQ(m.at("errors"), 3);
  EXPECT_EQ(m.at("ref_errors"), 1);
  EXPECT_EQ(m.at("cores"), 4);
  EXPECT_EQ(m.at("cores_not_run"), 0);
  EXPECT_EQ(m.at("sockets"), 2);
  EXPECT_EQ(m.at("faulty_sockets"), 1);
  EXPECT_EQ(m.at("package_temp_C"), 78);
  EXPECT_EQ(m.at("package_temp_C_start"), 41);
  EXPECT_EQ(m.at("power_W"), 160);
  EXPECT_NEAR(m.at("GFLOPS/W"), 77.5 / 160, 1e-9);
  EXPECT_NEAR(m.at("socket0_GFLOPS"), 37.5, 1e-9);
  EXPECT_EQ(m.at("socket1_errors"), 3);
  EXPECT_EQ(m.at("socket1_faulty"), 1);
  EXPECT_EQ(m.at("socket0_faulty"), 0);
  // What the host does not expose is absent, never a zero.
  for (const char* absent :
       {"core_temp_C", "cpufreq_MHz_min", "cpufreq_MHz_median", "throttle_events"})
    EXPECT_EQ(m.count(absent), 0u) << absent;
  // Beside a GPU burn every name has the prefix.
  for (const auto& [name, value] : counters(two_sockets(), "cpu_"))
    EXPECT_EQ(name.rfind("cpu_", 0), 0u) << name;
}

TEST(CpuReport, NoClockNoPeak) {
  CpuBurnReport r = two_sockets();
  r.cores[0].windows[1].clock_mhz = 0;  // one window without: its median still known
  for (CpuWindow& w : r.cores[2].windows) w.clock_mhz = 0;
  const auto m = counters(r);
  EXPECT_EQ(m.count("pct_peak"), 0u);  // not every core's clock: no share of a peak
  EXPECT_EQ(m.count("clock_MHz_min"), 0u);
}

TEST(CpuReport, Lines) {
  const CpuBurnReport r = two_sockets();
  const std::vector<std::string> lines = cpu_summary_lines("Burn/cpu/seconds:2", r);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "Burn/cpu/seconds:2 socket0 (cpu 0-1, avx2+fma): OK | 37.5 GFLOPS (per core min "
            "17.5, median 18.8), cores busy >= 90.0%, clock 2000 MHz measured, 9.4 FLOP/cycle/core "
            "= 29.3% of 32 "
            "assumed, package 78 C (41 C at the start), 160 W; no core frequency: x absent; no "
            "throttle counts: y absent");
  EXPECT_EQ(lines[1].rfind("Burn/cpu/seconds:2 socket1 (cpu 2-3, avx2+fma): FAULTY (3 errors: ", 0),
            0u);
  CpuLive live;
  live.cores_burning = 4;
  live.gflops = 80.04;
  live.gflops_min = 19.5;
  live.errors = 1;
  live.package_temp_c = 70;
  EXPECT_EQ(cpu_progress_line("Burn/cpu/seconds:60", "avx2+fma", 24, 60, live),
            "Burn/cpu/seconds:60   40% 0:24/1:00 | 4 cores avx2+fma 80.0 GFLOPS (core min 19.5), "
            "1 error, package 70 C");
  EXPECT_EQ(cpu_label(r),
            "avx2+fma, cpu 0-3, peak 32 FLOP/cycle/core assumed; socket0 OK; socket1 FAULTY (3 "
            "errors: cpu3 2 in window 2, 1 against the reference); no core frequency: x absent; "
            "no throttle counts: y absent");
  CpuBurnReport unknown = two_sockets();
  unknown.sockets_known = false;
  unknown.cores[0].ran_on[2] = 5;
  const std::string label = cpu_label(unknown);
  EXPECT_NE(label.find("; no sockets: physical_package_id absent, every core in socket0"),
            std::string::npos);
  EXPECT_NE(label.find("; cpu0 left its core"), std::string::npos);
}

}  // namespace
