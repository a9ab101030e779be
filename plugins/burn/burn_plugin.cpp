// The Burn plugin: a gpu-burn-style acceptance test. One case per dtype, run only on request
// (a --benchmark_filter naming Burn: a burn lasts minutes), each burning every selected GPU at
// once for --xfbench_burn_seconds and reporting per GPU its TFLOPS, errors, telemetry and
// verdict (OK or FAULTY). A faulty GPU makes the host exit with its own code.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "burn_engine.hpp"
#include "burn_options.hpp"
#include "burn_report.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::burn {
namespace {

BurnConfig config_for(const BurnFlags& flags, Dtype dtype) {
  BurnConfig c;
  c.dtype = dtype;
  c.shape = burn_shape(dtype);
  c.seconds = flags.seconds;
  c.mem_pct = flags.mem_pct;
  c.devices = flags.gpus;
  if (c.devices.empty()) {
    for (int d = 0; d < device_count(); ++d) c.devices.push_back(d);
  }
  c.search = flags.search;
  c.inputs = input_range(flags.inputs, dtype);
  c.name = burn_case_name(dtype, flags.seconds);
  c.faults = flags.faults;
  return c;
}

// The burn, once per repetition; its result as counters and label. A GPU that could not burn
// (memory) is counted in gpus_not_run, and a dtype no selected GPU has skips the case.
void burn_case(benchmark::State& state, const BurnFlags& flags, Dtype dtype) {
  const BurnConfig c = config_for(flags, dtype);
  std::optional<BurnReport> report;
  double seconds = 0;
  for (auto _ : state) {
    if (!report) {
      report = run_burn(c);
      for (const SlotResult& s : report->slots) {
        std::fprintf(stderr, "%s\n", summary_line(c.name, s).c_str());
        double gpu_seconds = 0;
        for (const BurnWindow& w : s.windows) gpu_seconds += w.seconds;
        seconds = std::max(seconds, gpu_seconds);
      }
      const bool none_has_it = std::all_of(report->slots.begin(), report->slots.end(),
                                           [](const SlotResult& s) { return s.unsupported; });
      if (none_has_it) XF_THROW(Unsupported, report->slots.front().not_run);
    }
    state.SetIterationTime(seconds);
  }
  for (const auto& [name, value] : burn_counters(*report)) state.counters[name] = value;
  for (const SlotResult& s : report->slots) {  // what the host's exit code says
    if (faulty(s)) report_faulty_gpu();
    if (!burned(s) && !s.unsupported) report_gpu_not_run();
  }
  add_label(state, burn_label(*report));
}

void register_cases() {
  const BurnFlags flags = read_burn_flags();
  for (Dtype t : flags.dtypes) {
    add_case(
        burn_case_name(t, flags.seconds),
        [flags, t](benchmark::State& state) { burn_case(state, flags, t); }, Needs::gpu,
        Suite::on_request);
  }
}

}  // namespace
}  // namespace xfbench::burn

XFBENCH_PLUGIN("burn", "1.0.0",
               "gpu-burn-style acceptance: sustained GEMMs on every GPU, each product checked, "
               "NVML telemetry, verdict per GPU (only a filter naming Burn runs it)",
               xfbench::burn::register_cases)
