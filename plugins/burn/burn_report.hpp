// What a burn's results say: per GPU the TFLOPS of its windows, its errors and its verdict (OK,
// FAULTY (n errors), NOT RUN (why)); the progress line; the counters and label of the JSON. Pure
// functions of the results, tested on the CPU.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "burn_engine.hpp"

namespace xfbench::burn {

struct TflopsSummary {
  double overall = 0;                    // every timed product over the windows' GPU time
  double min = 0, median = 0, last = 0;  // of the windows
};
TflopsSummary tflops_summary(const SlotResult& s);

std::uint64_t mismatches(const SlotResult& s);  // over all windows
std::uint64_t errors(const SlotResult& s);      // mismatches + reference errors
std::uint64_t error_windows(const SlotResult& s);
bool burned(const SlotResult& s);  // it ran (a failure during the burn still counts)
// Wrong results, an error while burning, new uncorrectable ECC errors, or a critical Xid.
bool faulty(const SlotResult& s);
// "OK", "FAULTY (3 errors)", "FAULTY (0 errors; 2 new uncorrectable ECC errors)",
// "NOT RUN (out of memory: ...)", "SKIPPED (unsupported: ...)".
std::string verdict(const SlotResult& s);
// "2 in window 4, 1 in window 9" (the first `most` windows with errors, then "...").
std::string error_windows_text(const SlotResult& s, std::size_t most = 16);

// What a progress line shows of one GPU while it burns.
struct LiveSlot {
  int device = 0;
  bool burning = false;
  double tflops = 0;  // the last finished window's
  std::uint64_t errors = 0;
  double temp_c = 0, sm_mhz = 0, power_w = 0;
};
// "Burn/tf32/seconds:60  40% 0:24/1:00 | gpu0 352.1 TFLOPS, 0 errors, 64 C, 1515 MHz, 698 W"
std::string progress_line(const std::string& name, double elapsed, double seconds,
                          const std::vector<LiveSlot>& slots);

// The final line per GPU: verdict, TFLOPS (overall, min, median, last), products, errors,
// telemetry, ECC, Xid, throttle reasons.
std::string summary_line(const std::string& name, const SlotResult& s);

// Counters for the JSON and console: totals (TFLOPS summed over GPUs, errors, faulty_gpus,
// gpus_not_run, power_W, TFLOPS/W, ...) and the same per GPU as gpu<N>_<counter>.
std::vector<std::pair<std::string, double>> burn_counters(const BurnReport& r);
// "gpu0 OK; gpu1 FAULTY (3 errors: 2 in window 4, 1 in window 9); algo=..."
std::string burn_label(const BurnReport& r);

}  // namespace xfbench::burn
