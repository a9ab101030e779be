// The Burn plugin: a gpu-burn-style acceptance test. One case per dtype, run only on request
// (a --benchmark_filter naming Burn: a burn lasts minutes), each burning every selected GPU at
// once for --xfbench_burn_seconds and reporting per GPU its TFLOPS, errors, telemetry and
// verdict (OK or FAULTY); Burn/cpu burns the host's cores the same way, verdict per socket, and
// --xfbench_burn_cpu burns them beside every GPU burn. A faulty GPU or socket makes the host exit
// with its own code.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "burn_engine.hpp"
#include "burn_options.hpp"
#include "burn_report.hpp"
#include "cpu_burn.hpp"
#include "cpu_report.hpp"
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
  c.name = burn_case_name(dtype, flags.seconds, flags.with_cpu);
  c.faults = flags.faults;
  return c;
}

CpuBurnConfig cpu_config_for(const BurnFlags& flags, const std::string& name) {
  CpuBurnConfig c;
  c.cores = flags.cpu_cores;
  c.seconds = flags.seconds;
  c.name = name;
  c.faults = flags.cpu_faults;
  return c;
}

// A CPU burn's verdicts, for the host's exit code: a faulty socket as a faulty GPU (exit 5), a
// core that could not burn as a GPU that could not (exit 1).
void report_cpu_verdicts(const CpuBurnReport& r) {
  for (int s : sockets(r))
    if (socket_faulty(r, s)) report_faulty_device();
  if (any_core_not_run(r)) report_device_not_run();
}

// The CPU burn beside a GPU burn (--xfbench_burn_cpu): started when the GPUs' clock starts, on a
// thread of its own, joined when the GPU burn ends (also when it throws).
class CpuBeside {
 public:
  explicit CpuBeside(CpuBurnConfig c) : c_(std::move(c)) {}
  ~CpuBeside() { join(); }
  void start() {
    thread_ = std::thread([this] {
      try {
        report_ = run_cpu_burn(c_);
      } catch (const std::exception& e) {
        error_ = e.what();
      }
    });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  const std::optional<CpuBurnReport>& report() const { return report_; }
  const std::string& error() const { return error_; }

 private:
  CpuBurnConfig c_;
  std::thread thread_;
  std::optional<CpuBurnReport> report_;
  std::string error_;
};

// The burn, once per repetition; its result as counters and label. A GPU that could not burn
// (memory) is counted in gpus_not_run, and a dtype no selected GPU has skips the case.
void burn_case(benchmark::State& state, const BurnFlags& flags, Dtype dtype) {
  BurnConfig c = config_for(flags, dtype);
  std::optional<CpuBeside> cpu;
  if (flags.with_cpu) {
    cpu.emplace(cpu_config_for(flags, c.name + " cpu"));
    c.on_start = [&cpu] { cpu->start(); };
  }
  std::optional<BurnReport> report;
  double seconds = 0;
  for (auto _ : state) {
    if (!report) {
      report = run_burn(c);
      if (cpu) cpu->join();
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
    if (faulty(s)) report_faulty_device();
    if (!burned(s) && !s.unsupported) report_device_not_run();
  }
  std::string label = burn_label(*report);
  if (cpu && cpu->report()) {
    for (const std::string& line : cpu_summary_lines(c.name, *cpu->report()))
      std::fprintf(stderr, "%s\n", line.c_str());
    for (const auto& [name, value] : cpu_counters(*cpu->report(), "cpu_"))
      state.counters[name] = value;
    report_cpu_verdicts(*cpu->report());
    label += "; CPU " + cpu_label(*cpu->report());
  } else if (cpu) {
    report_device_not_run();
    label +=
        "; CPU NOT RUN (" + (cpu->error().empty() ? "the GPUs never started" : cpu->error()) + ")";
  }
  add_label(state, label);
}

// Burn/cpu: every selected core, once per repetition (Google Benchmark's time is the burn's).
// Google Benchmark runs a case again with more iterations when the calling thread's CPU time
// stayed under --benchmark_min_time (0.5 s: a burn of a second or less on a busy machine); such a
// rerun starts above one iteration and reports the burn before it instead of burning again.
void cpu_burn_case(benchmark::State& state, const BurnFlags& flags,
                   std::optional<CpuBurnReport>& last) {
  const CpuBurnConfig c = cpu_config_for(flags, cpu_burn_case_name(flags.seconds));
  const bool rerun = state.max_iterations > 1 && last;
  for (auto _ : state) {
    if (rerun || state.iterations() > 0) continue;
    last = run_cpu_burn(c);
    for (const std::string& line : cpu_summary_lines(c.name, *last))
      std::fprintf(stderr, "%s\n", line.c_str());
  }
  for (const auto& [name, value] : cpu_counters(*last)) state.counters[name] = value;
  report_cpu_verdicts(*last);
  add_label(state, cpu_label(*last));
}

void register_cases() {
  const BurnFlags flags = read_burn_flags();
  for (Dtype t : flags.dtypes) {
    add_case(
        burn_case_name(t, flags.seconds, flags.with_cpu),
        [flags, t](benchmark::State& state) { burn_case(state, flags, t); }, Needs::gpu,
        Suite::on_request);
  }
  auto last = std::make_shared<std::optional<CpuBurnReport>>();
  add_case(
      cpu_burn_case_name(flags.seconds),
      [flags, last](benchmark::State& state) { cpu_burn_case(state, flags, *last); }, Needs::cpu,
      Suite::on_request);
}

}  // namespace
}  // namespace xfbench::burn

XFBENCH_PLUGIN("burn", "1.0.0",
               "gpu-burn-style acceptance: sustained GEMMs on every GPU and FMAs on every CPU "
               "core, each result checked, NVML and host sensors, verdict per GPU and socket "
               "(only a filter naming Burn runs it)",
               xfbench::burn::register_cases)
