// A CPU burn: one thread pinned to each selected core runs chunks of the FMA load (cpu_kernels)
// for a set time, all cores at once; the calling thread burns the first core itself and reads the
// host's sensors (host_sensors) between its windows. Each core checks its own results: its first
// chunk against the scalar reference, then every chunk bit for bit against its first. A value that
// differs is an error of that core, counted per window (~1 s of chunks, also the unit of the GFLOPS
// figures), as the GPU burn counts a GPU's. Each window also times a short dependent-add chain: the
// clock the core really ran at, where cpufreq is absent or stale.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cpu_kernels.hpp"
#include "host_sensors.hpp"

namespace xfbench::burn {

// Test hook, a core that computes wrong: flips a bit of one value of the first chunk of window
// `window` on core `cpu`, before the check reads it.
struct CpuFault {
  int cpu = 0;
  std::uint64_t window = 0;
};

struct CpuBurnConfig {
  std::vector<int> cores;  // one thread each
  double seconds = 60;
  double window_seconds = 1;
  double progress_seconds = 5;  // a progress line on stderr this often; <= 0: none
  std::string name;             // for progress lines ("Burn/cpu/seconds:60")
  std::optional<CpuIsa> isa;    // default: detect_cpu_isa()
  std::uint64_t chunk_steps = kChunkSteps;
  std::vector<CpuFault> faults;  // test hook
  std::string sys_root = "/";    // where /sys is read (tests: a fake tree)
};

struct CpuWindow {
  double seconds = 0;
  std::uint64_t chunks = 0;
  std::uint64_t mismatches = 0;  // values that differed from the first chunk's
  double cpu_seconds = 0;  // the thread's CPU time: below `seconds` when others shared the core
  double clock_mhz = 0;    // the probe's, as the window began (NaN: no probe here)
};

struct CoreResult {
  int cpu = 0;
  int socket = 0;           // physical_package_id (0 where the kernel does not say)
  std::string not_run;      // why this core did not burn ("" when it did)
  std::vector<int> ran_on;  // the core each window ended on (sched_getcpu): the pinned one
  std::vector<CpuWindow> windows;
  std::uint64_t ref_errors = 0;  // values of its first chunk off the scalar reference
  double flops_per_chunk = 0;
};

struct CpuBurnReport {
  CpuIsa isa = CpuIsa::generic;
  double peak_flop_per_cycle = 0;  // assumed, per core (cpu_kernels.hpp)
  double seconds = 0;
  bool sockets_known = true;  // physical_package_id readable for every core
  std::vector<CoreResult> cores;
  SensorSummary sensors;
};

// Runs the burn; a core that cannot be pinned says why in its result while the others burn on.
// Throws InvalidArgument for an empty core list, an ISA this CPU lacks or a fault on a core not
// burned.
CpuBurnReport run_cpu_burn(const CpuBurnConfig& config);

}  // namespace xfbench::burn
