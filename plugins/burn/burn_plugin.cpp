// The Burn plugin: a gpu-burn-style acceptance test. One case per dtype, run only on request
// (a --benchmark_filter naming Burn: a burn lasts minutes), each burning every selected GPU at
// once for --xfbench_burn_seconds and reporting per GPU its TFLOPS, errors, telemetry and
// verdict (OK or FAULTY); Burn/cpu burns the host's cores the same way, verdict per socket, and
// --xfbench_burn_cpu burns them beside every GPU burn. A faulty GPU or socket makes the host exit
// with its own code.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "burn_compare.hpp"
#include "burn_engine.hpp"
#include "burn_options.hpp"
#include "burn_report.hpp"
#include "cpu_burn.hpp"
#include "cpu_report.hpp"
#include "host_memory.hpp"
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
  c.name = burn_case_name(dtype, flags.seconds, flags.with_cpu, flags.host_mem_pct);
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

HostMemConfig mem_config_for(const BurnFlags& flags) {
  HostMemConfig c;
  c.pct = flags.host_mem_pct;
  c.seconds = flags.seconds;
  c.faults = flags.mem_faults;
  return c;
}

// What runs beside a burn (the CPU burn beside the GPUs', the host-memory test beside either):
// started when the burn's clock starts, on a thread of its own, joined when it ends (also when it
// throws).
template <class Report>
class Beside {
 public:
  explicit Beside(std::function<Report()> run) : run_(std::move(run)) {}
  ~Beside() { join(); }
  void start() {
    thread_ = std::thread([this] {
      try {
        report_ = run_();
      } catch (const std::exception& e) {
        error_ = e.what();
      }
    });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  const std::optional<Report>& report() const { return report_; }
  const std::string& error() const { return error_; }

 private:
  std::function<Report()> run_;
  std::thread thread_;
  std::optional<Report> report_;
  std::string error_;
};

// The host-memory test beside a burn (--xfbench_burn_host_mem_pct), or none.
std::optional<Beside<HostMemReport>> host_memory_beside(const BurnFlags& flags) {
  if (flags.host_mem_pct <= 0) return std::nullopt;
  const HostMemConfig c = mem_config_for(flags);
  return std::optional<Beside<HostMemReport>>(std::in_place,
                                              [c] { return run_host_memory_test(c); });
}

// Its counters, verdict (a word read back wrong: a faulty device, exit 5; not run: exit 1) and
// label part ("; host memory OK (...)").
std::string report_host_memory(benchmark::State& state, const std::string& name,
                               const std::optional<HostMemReport>& report,
                               const std::string& error) {
  if (!report) {
    report_device_not_run();
    return "; host memory NOT RUN (" + (error.empty() ? "never started" : error) + ")";
  }
  const HostMemReport& r = *report;
  for (const auto& [name, value] : host_memory_counters(r)) state.counters[name] = value;
  if (r.errors) report_faulty_device();
  if (!r.not_run.empty()) report_device_not_run();
  std::fprintf(stderr, "%s %s\n", name.c_str(), host_memory_label(r).c_str());
  return "; " + host_memory_label(r);
}

// --xfbench_burn_compare: the alone cases' counters, for the together cases after them.
struct AloneRates {
  std::map<Dtype, Counters> gpu;
  Counters cpu;
};
Counters counters_of(const std::vector<std::pair<std::string, double>>& list) {
  return Counters(list.begin(), list.end());
}

// The burn, once per repetition; its result as counters and label. A GPU that could not burn
// (memory) is counted in gpus_not_run, and a dtype no selected GPU has skips the case.
void burn_case(benchmark::State& state, const BurnFlags& flags, Dtype dtype, AloneRates& alone) {
  BurnConfig c = config_for(flags, dtype);
  std::optional<Beside<CpuBurnReport>> cpu;
  if (flags.with_cpu) {
    const CpuBurnConfig cc = cpu_config_for(flags, c.name + " cpu");
    cpu.emplace([cc] { return run_cpu_burn(cc); });
  }
  std::optional<Beside<HostMemReport>> mem = host_memory_beside(flags);
  c.on_start = [&cpu, &mem] {
    if (cpu) cpu->start();
    if (mem) mem->start();
  };
  std::optional<BurnReport> report;
  double seconds = 0;
  for (auto _ : state) {
    if (!report) {
      report = run_burn(c);
      if (cpu) cpu->join();
      if (mem) mem->join();
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
  const auto counters = burn_counters(*report);
  for (const auto& [name, value] : counters) state.counters[name] = value;
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
  if (mem) label += report_host_memory(state, c.name, mem->report(), mem->error());
  if (flags.compare && !flags.with_cpu) alone.gpu[dtype] = counters_of(counters);
  if (flags.compare && flags.with_cpu && cpu && cpu->report()) {
    Counters together = counters_of(counters);
    for (const auto& [name, value] : cpu_counters(*cpu->report(), "cpu_")) together[name] = value;
    const auto cmp = compare_counters(alone.gpu[dtype], alone.cpu, together);
    for (const auto& [name, value] : cmp) state.counters[name] = value;
    const std::string said = compare_label(cmp, flags.max_loss_pct);
    if (!said.empty()) {
      label += "; " + said;
      std::fprintf(stderr, "%s %s\n", c.name.c_str(), said.c_str());
    }
  }
  add_label(state, label);
}

// Burn/cpu: every selected core, once per repetition (Google Benchmark's time is the burn's).
// Google Benchmark runs a case again with more iterations when the calling thread's CPU time
// stayed under --benchmark_min_time (0.5 s: a burn of a second or less on a busy machine); such a
// rerun starts above one iteration and reports the burn before it instead of burning again.
struct CpuBurnRun {  // the last burn, for a rerun to report
  std::optional<CpuBurnReport> cpu;
  std::optional<HostMemReport> mem;
  std::string mem_error;
};
void cpu_burn_case(benchmark::State& state, const BurnFlags& flags, CpuBurnRun& last,
                   AloneRates& alone) {
  const CpuBurnConfig c =
      cpu_config_for(flags, cpu_burn_case_name(flags.seconds, flags.host_mem_pct));
  const bool rerun = state.max_iterations > 1 && last.cpu;
  for (auto _ : state) {
    if (rerun || state.iterations() > 0) continue;
    std::optional<Beside<HostMemReport>> mem = host_memory_beside(flags);
    if (mem) mem->start();
    last.cpu = run_cpu_burn(c);
    if (mem) {
      mem->join();
      last.mem = mem->report(), last.mem_error = mem->error();
    }
    for (const std::string& line : cpu_summary_lines(c.name, *last.cpu))
      std::fprintf(stderr, "%s\n", line.c_str());
  }
  const auto counters = cpu_counters(*last.cpu);
  for (const auto& [name, value] : counters) state.counters[name] = value;
  if (flags.compare) alone.cpu = counters_of(counters);
  report_cpu_verdicts(*last.cpu);
  std::string label = cpu_label(*last.cpu);
  if (flags.host_mem_pct > 0) label += report_host_memory(state, c.name, last.mem, last.mem_error);
  add_label(state, label);
}

void register_cases() {
  const BurnFlags flags = read_burn_flags();
  auto alone = std::make_shared<AloneRates>();
  auto add_gpu_cases = [&](const BurnFlags& f) {
    for (Dtype t : f.dtypes) {
      add_case(
          burn_case_name(t, f.seconds, f.with_cpu, f.host_mem_pct),
          [f, t, alone](benchmark::State& state) { burn_case(state, f, t, *alone); }, Needs::gpu,
          Suite::on_request);
    }
  };
  add_gpu_cases(flags);
  auto last = std::make_shared<CpuBurnRun>();
  add_case(
      cpu_burn_case_name(flags.seconds, flags.host_mem_pct),
      [flags, last, alone](benchmark::State& state) { cpu_burn_case(state, flags, *last, *alone); },
      Needs::cpu, Suite::on_request);
  if (flags.compare) {  // after the alone cases (the cases run in this order)
    BurnFlags together = flags;
    together.with_cpu = true;
    add_gpu_cases(together);
  }
}

}  // namespace
}  // namespace xfbench::burn

XFBENCH_PLUGIN("burn", "1.0.0",
               "gpu-burn-style acceptance: sustained GEMMs on every GPU and FMAs on every CPU "
               "core, each result checked, NVML and host sensors, verdict per GPU and socket "
               "(only a filter naming Burn runs it)",
               xfbench::burn::register_cases)
