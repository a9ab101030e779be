// What a CPU burn's results say: per core its GFLOPS and errors, per socket the verdict (OK,
// FAULTY (n errors)), the progress and summary lines, the counters and label of the JSON. Pure
// functions of the results, tested on made-up ones.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cpu_burn.hpp"

namespace xfbench::burn {

struct CoreRate {
  double gflops = 0;          // every chunk over the windows' time
  double busy = 0;            // its thread's CPU time over the windows' time (1: the core alone)
  double clock_mhz = 0;       // the median of its windows' probes (0: no probe)
  double flop_per_cycle = 0;  // gflops / clock (0: no probe)
};
CoreRate core_rate(const CoreResult& c);

std::uint64_t core_errors(const CoreResult& c);  // mismatches + reference errors
bool core_burned(const CoreResult& c);
bool core_pinned(const CoreResult& c);  // every window ended on its own core

std::vector<int> sockets(const CpuBurnReport& r);  // the sockets of the burned cores, sorted
bool socket_faulty(const CpuBurnReport& r, int socket);
// "OK", "FAULTY (3 errors: cpu5 2 in window 4, 1 of them against the reference; cpu9 1 in
// window 1)", "OK (cpu3 NOT RUN: cannot pin ...)" — a socket with no core that burned is
// "NOT RUN (...)".
std::string socket_verdict(const CpuBurnReport& r, int socket);
bool any_core_not_run(const CpuBurnReport& r);

// What a progress line shows while the cores burn.
struct CpuLive {
  int cores_burning = 0;
  double gflops = 0, gflops_min = 0;  // the cores' last windows: sum and slowest
  std::uint64_t errors = 0;
  std::optional<double> package_temp_c, mhz, power_w;
};
// "Burn/cpu/seconds:60  40% 0:24/1:00 | 64 cores avx512f 5012.3 GFLOPS (core min 77.9),
// 0 errors, package 81 C, 2900 MHz, 402 W"
std::string cpu_progress_line(const std::string& name, const std::string& isa, double elapsed,
                              double seconds, const CpuLive& live);

// One final line per socket: verdict, cores, GFLOPS (total, per core min and median), clock,
// FLOP/cycle against the assumed peak, errors, then the host's sensors.
std::vector<std::string> cpu_summary_lines(const std::string& name, const CpuBurnReport& r);

// Counters for the JSON and console, each name prefixed with `prefix` ("" for Burn/cpu, "cpu_"
// beside a GPU burn): GFLOPS, GFLOPS_core_min, GFLOPS_core_median, pct_peak, clock_MHz_min and
// _median, busy_pct_min, errors, ref_errors, cores, cores_not_run, sockets, faulty_sockets, the
// sensors that exist, and per socket socket<N>_GFLOPS, _errors, _faulty.
std::vector<std::pair<std::string, double>> cpu_counters(const CpuBurnReport& r,
                                                         const std::string& prefix = "");
// "avx2+fma, cores 0-1, peak 32 FLOP/cycle/core assumed; socket0 OK; no package temperature: ..."
std::string cpu_label(const CpuBurnReport& r);

}  // namespace xfbench::burn
