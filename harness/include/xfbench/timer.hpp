// GPU timing for Google Benchmark: CUDA events around the launches, handed over with
// SetIterationTime as seconds per launch. Three modes (--xfbench_mode):
//   steady (default)  windows of back-to-back launches (~10 ms each, the next one queued before
//                     the host waits on the last, so the GPU never idles) until the stopping rule
//                     of steady_state.hpp says the launch time is steady; the measured windows
//                     follow a warm-up on the case's own work. One Google Benchmark iteration per
//                     repetition carries the result.
//   hot               a fixed number of timed iterations (--xfbench_iterations), each a ~5 ms batch
//                     of launches, after three warm-up launches: the short burst of earlier
//                     releases.
//   cold              (--xfbench_l2_flush) as hot, one launch per iteration, the L2 flushed first.
// Short launches are batched inside a CUDA graph so CPU launch cost stays hidden. Telemetry over
// exactly the measured span: mean power from NVML's energy counter, J per launch, clocks,
// temperature and clock-event (throttle) reasons, which go into the case's label when active.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>

#include "xfbench/steady_state.hpp"

namespace xfbench {

using Launch = std::function<void(cudaStream_t)>;

enum class TimingMode { steady, hot, cold };
TimingMode timing_mode();  // --xfbench_mode; --xfbench_l2_flush means cold
const char* to_string(TimingMode m);
// The stopping rule's parameters from --xfbench_min_time, _max_noise, _timeout, _min_warmup.
const SteadyStateOptions& steady_state_options();
double window_seconds();  // --xfbench_window_ms: target length of a steady-mode window

struct TimerOptions {
  int warmup = 3;                          // untimed launches first (plans, caches)
  double target_iteration_seconds = 5e-3;  // hot mode: batch launches up to about this long
  int max_batch = 2000;
  bool use_graph = true;  // capture the batch in a CUDA graph when possible
  // Capture one launch in a CUDA graph and replay it for every launch, however long (a whole
  // training step launched at once, no launch waiting on the host); where the launch cannot be
  // captured it runs as it is (Timing::graph says which).
  bool graph_each_launch = false;
  // Launches holding collectives of several processes (MPI): every process must take the same
  // decisions (batch size, graph, another window, stop) or the collectives deadlock, so `agree`
  // makes the numbers they rest on every process's maximum (steady_state.hpp). `wait` blocks
  // until an event on the stream completes (NCCL cases: polled, with a time-out and NCCL's
  // asynchronous errors; empty: cudaEventSynchronize). Both empty: this process alone.
  AgreeMax agree;
  std::function<void(cudaEvent_t)> wait;
};

struct Timing {
  double seconds = 0;  // mean seconds per launch over the measured launches
  double total_seconds = 0;
  std::size_t launches = 0;
  int batch = 1;  // launches per timed iteration (hot) or window (steady)
  bool graph = false;
  TimingMode mode = TimingMode::steady;
  SteadyStateResult steady;  // steady mode: cv, drift, windows, warm-up, converged
  double power_w = 0;        // mean power over the measured span (0: unknown)
  double joules_per_launch = 0;
};

// Runs the state loop, timing `launch(stream)`, and sets the telemetry counters (sm_MHz, mem_MHz,
// temp_C, power_W, J) and, in steady mode, cv_pct, drift_pct, windows and warmup_s.
Timing time_gpu(benchmark::State& state, cudaStream_t stream, const Launch& launch,
                const TimerOptions& options = {});

// CPU twin of time_gpu for cases that run on the host: wall-clock time of `work` per iteration.
Timing time_cpu(benchmark::State& state, const std::function<void()>& work);

}  // namespace xfbench
