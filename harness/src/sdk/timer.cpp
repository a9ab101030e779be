#include "xfbench/timer.hpp"

#include <cuda_profiler_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <vector>

#include "xfbench/case.hpp"
#include "xfbench/counters.hpp"
#include "xfbench/device.hpp"
#include "xfbench/error.hpp"
#include "xfbench/flags.hpp"
#include "xfbench/memory.hpp"
#include "xfbench/telemetry.hpp"

namespace xfbench {
namespace {

// Launches shorter than this are batched inside a CUDA graph, so CPU launch cost stays hidden.
constexpr double kGraphBelowSeconds = 20e-6;

// A buffer twice the L2's size, written before each cold launch; kept for the process's life
// (not counted in mem_GB: it belongs to the harness, not the case).
void flush_l2(cudaStream_t stream) {
  static std::map<int, std::pair<void*, std::size_t>> buffers;
  int dev = selected_device();
  auto it = buffers.find(dev);
  if (it == buffers.end()) {
    std::size_t bytes = std::max<std::size_t>(2 * device_info().l2_bytes, 8u << 20);
    void* p = nullptr;
    XF_CUDA_CHECK(cudaMalloc(&p, bytes));
    it = buffers.emplace(dev, std::make_pair(p, bytes)).first;
  }
  static unsigned char value = 0;
  XF_CUDA_CHECK(cudaMemsetAsync(it->second.first, ++value, it->second.second, stream));
}

// Owns an instantiated graph of `batch` launches; empty when capture is not possible.
class BatchGraph {
 public:
  BatchGraph(cudaStream_t stream, const Launch& launch, int batch) {
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    bool launched = true;
    try {
      for (int i = 0; i < batch; ++i) launch(stream);
    } catch (const Error&) {
      launched = false;  // the launch cannot be captured (it synchronises, allocates, ...)
    }
    cudaGraph_t graph = nullptr;
    cudaError_t end = cudaStreamEndCapture(stream, &graph);
    if (launched && end == cudaSuccess && graph &&
        cudaGraphInstantiate(&exec_, graph, 0) == cudaSuccess) {
      cudaGraphDestroy(graph);
      return;
    }
    if (graph) cudaGraphDestroy(graph);
    exec_ = nullptr;
    cudaGetLastError();
  }
  ~BatchGraph() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  BatchGraph(const BatchGraph&) = delete;
  BatchGraph& operator=(const BatchGraph&) = delete;
  explicit operator bool() const { return exec_ != nullptr; }
  void launch(cudaStream_t stream) const { XF_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// Waits for `e` (through options.wait when the case gives one).
void wait_for(const Event& e, const TimerOptions& options) {
  if (options.wait) options.wait(e.get());
}

void sync(cudaStream_t stream, const TimerOptions& options) {
  if (!options.wait) return XF_CUDA_CHECK(cudaStreamSynchronize(stream));
  Event done;
  done.record(stream);
  options.wait(done.get());
}

// `v` on this process; its maximum over the processes timing the case when they must agree.
double agreed(double v, const TimerOptions& options) {
  if (options.agree) options.agree(&v, 1);
  return v;
}

// `batch` launches of the case, through its graph when it has one (of `captured` launches:
// the whole batch, or one replayed `size` times).
struct Batch {
  const Launch& launch;
  int size = 1;
  std::unique_ptr<BatchGraph> graph;
  int captured = 0;
  void run(cudaStream_t stream) const {
    if (graph) {
      for (int i = 0; i < size; i += captured) graph->launch(stream);
      return;
    }
    for (int i = 0; i < size; ++i) launch(stream);
  }
};

// Warms up, times one launch and sizes a batch of about `target` seconds (one launch when
// target is 0), captured in a graph when launches are short.
Batch prepare(cudaStream_t stream, const Launch& launch, const TimerOptions& options,
              double target) {
  Batch b{launch};
  for (int i = 0; i < options.warmup; ++i) launch(stream);
  sync(stream, options);
  Event start, stop;
  start.record(stream);
  launch(stream);
  stop.record(stream);
  wait_for(stop, options);
  const double single = agreed(stop.elapsed_ms_since(start) / 1e3, options);
  if (target > 0) {
    double fit = target / std::max(single, 1e-7);
    b.size = int(std::clamp(std::floor(fit), 1.0, double(options.max_batch)));
  }
  if (options.graph_each_launch ||
      (b.size > 1 && options.use_graph && single < kGraphBelowSeconds)) {
    const int captured = options.graph_each_launch ? 1 : b.size;
    auto graph = std::make_unique<BatchGraph>(stream, launch, captured);
    if (agreed(*graph ? 0 : 1, options) == 0) {
      graph->launch(stream);  // the first replay uploads the graph
      sync(stream, options);
      b.graph = std::move(graph);
      b.captured = captured;
    }
  }
  return b;
}

void set_telemetry(benchmark::State& state, Timing& t, const TelemetryReading& r) {
  if (r.samples == 0) return;
  state.counters["sm_MHz"] = r.sm_mhz;
  state.counters["mem_MHz"] = r.mem_mhz;
  state.counters["temp_C"] = r.temp_c;
  std::string throttle = throttle_text(r);
  if (!throttle.empty()) add_label(state, "throttle: " + throttle);
  if (r.power_w > 0) {
    // NVML's averaged reading lags about a second: say so when the energy counter did not step.
    if (!r.power_from_energy) add_label(state, "power: NVML average (no energy-counter steps)");
    t.power_w = r.power_w;
    t.joules_per_launch = r.power_w * t.seconds;  // the GPU is busy throughout the span
    state.counters["power_W"] = t.power_w;
    state.counters["J"] = t.joules_per_launch;
  }
}

// Steady mode: windows of `batch` launches until the stopping rule is met (steady_state.hpp).
// Window i+1 is queued before the host waits on window i; each completion is stamped with the
// host clock, so telemetry (power from the energy counter included) covers the measured windows.
void run_steady(benchmark::State& state, cudaStream_t stream, const Batch& batch,
                const TimerOptions& options, Timing& t) {
  TelemetrySampler telemetry(telemetry_enabled() ? selected_device() : -1);
  std::vector<double> done_at{host_seconds()};  // after 0, 1, 2, ... windows
  std::vector<Event> events(3);  // boundaries of the window done, the one running, the next
  SteadyState rule(steady_state_options(), options.agree);
  std::size_t n = 0;
  events[0].record(stream);
  batch.run(stream);
  events[1].record(stream);
  for (;;) {
    batch.run(stream);  // window n+1, queued before waiting on window n
    events[(n + 2) % 3].record(stream);
    wait_for(events[(n + 1) % 3], options);
    const double seconds = events[(n + 1) % 3].elapsed_ms_since(events[n % 3]) / 1e3;
    done_at.push_back(host_seconds());
    ++n;
    if (telemetry.power_capped()) rule.power_capped();
    if (rule.add(seconds / batch.size, seconds)) break;
  }
  sync(stream, options);  // the window still queued is not measured
  const SteadyStateResult& r = rule.result();
  t.steady = r;
  t.seconds = r.seconds;
  t.launches = std::size_t(r.windows) * std::size_t(batch.size);
  t.total_seconds = t.seconds * double(t.launches);
  set_telemetry(state, t, telemetry.stop(done_at[std::size_t(r.first_window)], done_at[n]));
  state.counters["cv_pct"] = 100 * r.cv;
  state.counters["ci_pct"] = 100 * r.ci;
  state.counters["drift_pct"] = 100 * r.drift;
  state.counters["windows"] = r.windows;
  state.counters["warmup_s"] = r.warmup_s;
  if (!r.converged) {
    char note[128];
    std::snprintf(note, sizeof note, "noisy: ci \u00b1%.2f%% drift %.2f%% after %.1fs", 100 * r.ci,
                  100 * r.drift, r.warmup_s + t.total_seconds);
    add_label(state, note);
  }
}

// Hot and cold modes: a fixed number of timed iterations (Google Benchmark's loop).
void run_fixed(benchmark::State& state, cudaStream_t stream, const Batch& batch,
               const TimerOptions& options, Timing& t) {
  const bool cold = t.mode == TimingMode::cold;
  TelemetrySampler telemetry(telemetry_enabled() ? selected_device() : -1);
  const double t0 = host_seconds();
  Event start, stop;
  for (auto _ : state) {
    if (cold) flush_l2(stream);
    start.record(stream);
    batch.run(stream);
    stop.record(stream);
    wait_for(stop, options);
    double seconds = agreed(stop.elapsed_ms_since(start) / 1e3, options);
    state.SetIterationTime(seconds / batch.size);
    t.total_seconds += seconds;
    t.launches += std::size_t(batch.size);
  }
  t.seconds = t.launches ? t.total_seconds / double(t.launches) : 0;
  // Cold launches alternate with L2 flushes, whose energy this power includes.
  set_telemetry(state, t, telemetry.stop(t0, host_seconds()));
}

// The timed launches only, for a profiler started with its capture off (`ncu
// --profile-from-start off`, `nsys profile --capture-range=cudaProfilerApi`): setup, searches and
// validation stay out of its report. Without a profiler both calls do nothing; a profiler that
// refuses them leaves the case's timing as it is (its error is not the case's).
struct ProfilerCapture {
  ProfilerCapture() { ignore(cudaProfilerStart()); }
  ~ProfilerCapture() { ignore(cudaProfilerStop()); }
  static void ignore(cudaError_t e) {
    if (e != cudaSuccess) (void)cudaGetLastError();
  }
};

}  // namespace

const char* to_string(TimingMode m) {
  switch (m) {
    case TimingMode::hot:
      return "hot";
    case TimingMode::cold:
      return "cold";
    default:
      return "steady";
  }
}

TimingMode timing_mode() {
  static const TimingMode mode = [] {
    const std::string m = flag_string(
        "mode", "steady",
        "steady (warm up, then time windows until the launch time is steady), hot (a fixed "
        "short burst) or cold (L2 flushed before each launch)");
    const bool flush = flag_bool("l2_flush", false, "same as --xfbench_mode=cold");
    if (m != "steady" && m != "hot" && m != "cold") {
      XF_THROW(InvalidArgument, "--xfbench_mode='" + m + "': expected steady, hot or cold");
    }
    if (flush && m != "cold" && m != "steady") {
      XF_THROW(InvalidArgument, "--xfbench_l2_flush contradicts --xfbench_mode=" + m);
    }
    if (flush || m == "cold") return TimingMode::cold;
    return m == "hot" ? TimingMode::hot : TimingMode::steady;
  }();
  return mode;
}

bool l2_flush_enabled() { return timing_mode() == TimingMode::cold; }

const SteadyStateOptions& steady_state_options() {
  static const SteadyStateOptions o = [] {
    SteadyStateOptions s;
    s.min_time = flag_double("min_time", s.min_time, "steady mode: seconds of measured windows");
    s.max_noise = flag_double("max_noise", 100 * s.max_noise,
                              "steady mode: how well the mean launch time must be known (95% "
                              "interval and drift between halves), in percent") /
                  100;
    s.timeout = flag_double("timeout", s.timeout,
                            "steady mode: seconds after which a case that is not steady stops "
                            "and is labelled noisy");
    s.min_warmup = flag_double("min_warmup", s.min_warmup,
                               "steady mode: seconds of the case's own work before measuring");
    s.capped_warmup = flag_double("capped_warmup", s.capped_warmup,
                                  "steady mode: the same once the GPU reports its power cap (the "
                                  "limiter lets a case exceed it for about a second)");
    if (!(s.min_time > 0 && s.min_time <= 600)) {
      XF_THROW(InvalidArgument, "--xfbench_min_time must be in (0, 600] seconds");
    }
    if (!(s.max_noise > 0 && s.max_noise <= 1)) {
      XF_THROW(InvalidArgument, "--xfbench_max_noise must be in (0, 100] percent");
    }
    if (!(s.timeout >= s.min_time && s.timeout <= 3600)) {
      XF_THROW(InvalidArgument,
               "--xfbench_timeout must be at least --xfbench_min_time and at "
               "most 3600 seconds");
    }
    if (!(s.min_warmup >= 0 && s.min_warmup <= 600)) {
      XF_THROW(InvalidArgument, "--xfbench_min_warmup must be in [0, 600] seconds");
    }
    if (!(s.capped_warmup >= 0 && s.capped_warmup <= 600)) {
      XF_THROW(InvalidArgument, "--xfbench_capped_warmup must be in [0, 600] seconds");
    }
    return s;
  }();
  return o;
}

double window_seconds() {
  static const double w = [] {
    double ms = flag_double("window_ms", 10, "steady mode: target length of a timed window (ms)");
    if (!(ms >= 0.1 && ms <= 1000)) {
      XF_THROW(InvalidArgument, "--xfbench_window_ms must be in [0.1, 1000]");
    }
    return ms / 1e3;
  }();
  return w;
}

Timing time_gpu(benchmark::State& state, cudaStream_t stream, const Launch& launch,
                const TimerOptions& options) {
  mark_phase("setup");
  Timing t;
  t.mode = timing_mode();
  const double target = t.mode == TimingMode::steady ? window_seconds()
                        : t.mode == TimingMode::hot  ? options.target_iteration_seconds
                                                     : 0;
  Batch batch = prepare(stream, launch, options, target);
  t.batch = batch.size;
  t.graph = batch.graph != nullptr;
  ProfilerCapture capture;
  if (t.mode == TimingMode::steady) {
    for (auto _ : state) {
      run_steady(state, stream, batch, options, t);
      state.SetIterationTime(t.seconds);
    }
  } else {
    run_fixed(state, stream, batch, options, t);
  }
  XF_CUDA_CHECK(cudaGetLastError());
  mark_phase("timed");
  return t;
}

Timing time_cpu(benchmark::State& state, const std::function<void()>& work) {
  mark_phase("setup");
  Timing t;
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    work();
    ++t.launches;
  }
  t.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.seconds = t.launches ? t.total_seconds / double(t.launches) : 0;
  mark_phase("timed");
  return t;
}

}  // namespace xfbench
