// The host-memory pattern test beside a burn (--xfbench_burn_host_mem_pct): a share of the RAM the
// kernel says is available, written and verified in moving inversions (memtest86's test 7) until
// the time is up. A pass writes the pattern p over the buffer ascending; then, ascending, checks
// every word is p and writes ~p; then, descending, checks ~p and writes p back. Patterns turn by
// pass: all zeros, all ones, 0x55.., 0xAA.., a walking one, a seeded random word. A word that
// reads back other than it was written is an error of the host's memory, counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xfbench::burn {

// Test hook, memory that forgets: flips bit 0 of word `word` right after pass `pass`'s first
// write, so its first check must count exactly one error.
struct HostMemFault {
  std::uint64_t pass = 0;
  std::size_t word = 0;
};

struct HostMemConfig {
  double pct = 0;       // of MemAvailable (0: off)
  double seconds = 60;  // passes until this time is up and min_passes are done
  std::uint64_t min_passes = 1;
  std::size_t bytes = 0;        // tests: this many bytes instead of pct of MemAvailable
  std::string proc_root = "/";  // where /proc/meminfo is read (tests: a fake tree)
  std::vector<HostMemFault> faults;
};

struct HostMemReport {
  std::size_t bytes = 0;
  std::uint64_t passes = 0;
  std::uint64_t errors = 0;  // words read back wrong
  double seconds = 0;
  double gb_per_s = 0;  // bytes read and written per second, 1e9
  std::string not_run;  // why it did not run ("" when it did)
};

// MemAvailable of <proc_root>/proc/meminfo in bytes; 0 when the file or the line is missing.
std::size_t available_memory_bytes(const std::string& proc_root = "/");

// Runs the test on the calling thread. The memory is allocated here and freed before it returns;
// an allocation that fails (or no MemAvailable) leaves the report's not_run saying why.
HostMemReport run_host_memory_test(const HostMemConfig& config);

// Counters host_mem_GB, host_mem_passes, host_mem_errors, host_mem_GB/s; and the label's part:
// "host memory OK (12.3 GB, 4 passes)", "host memory FAULTY (3 errors in 12.3 GB)", or
// "host memory NOT RUN (<why>)".
std::vector<std::pair<std::string, double>> host_memory_counters(const HostMemReport& r);
std::string host_memory_label(const HostMemReport& r);

// XFBENCH_BURN_TEST_MEM_FAULTS, "pass:word,..." (tests of the whole program set it).
constexpr const char* kMemFaultVariable = "XFBENCH_BURN_TEST_MEM_FAULTS";
std::vector<HostMemFault> parse_mem_faults(const std::string& text);

}  // namespace xfbench::burn
