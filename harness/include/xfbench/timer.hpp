// GPU timing for Google Benchmark: CUDA events around the launches, handed over with
// SetIterationTime as seconds per launch. Hot mode (default) batches back-to-back launches per
// timed iteration so launch gaps do not dominate short kernels (through a CUDA graph when a launch
// is short and can be captured); cold mode (--xfbench_l2_flush) flushes the L2 before each single
// timed launch. GPU cases run a fixed number of timed iterations (--xfbench_iterations), because
// Google Benchmark's own stopping rule would count only the per-launch share of each batch.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

namespace xfbench {

using Launch = std::function<void(cudaStream_t)>;

struct TimerOptions {
  int warmup = 3;                          // untimed launches first (plans, caches, clocks)
  double target_iteration_seconds = 5e-3;  // hot mode: batch launches up to about this long
  int max_batch = 2000;
  bool use_graph = true;  // capture the batch in a CUDA graph when possible
};

struct Timing {
  double seconds = 0;  // mean seconds per launch over the timed iterations
  double total_seconds = 0;
  std::size_t launches = 0;
  int batch = 1;  // launches per timed iteration
  bool graph = false;
  bool cold = false;
};

// Runs the state loop, timing `launch(stream)`. Also samples clocks, temperature and power (NVML)
// while it runs and sets the telemetry counters.
Timing time_gpu(benchmark::State& state, cudaStream_t stream, const Launch& launch,
                const TimerOptions& options = {});

// CPU twin of time_gpu for cases that run on the host: wall-clock time of `work` per iteration.
Timing time_cpu(benchmark::State& state, const std::function<void()>& work);

}  // namespace xfbench
