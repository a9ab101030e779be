// Event timing for the by-hand bandwidth runs (kernel_bandwidth, test_train_bandwidth): the mean
// of back-to-back launches after a few warm-up launches. Not the benchmark protocol: these runs
// rank kernel versions against each other, the plugins' cases give the numbers.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "xfbench/error.hpp"

namespace xftest {

// Mean milliseconds per launch of `iters` launches on `stream` after `warmup` launches.
inline double time_ms(const std::function<void()>& launch, int iters = 20, int warmup = 3,
                      cudaStream_t stream = nullptr) {
  for (int i = 0; i < warmup; ++i) launch();
  cudaEvent_t a, b;
  XF_CUDA_CHECK(cudaEventCreate(&a));
  XF_CUDA_CHECK(cudaEventCreate(&b));
  XF_CUDA_CHECK(cudaEventRecord(a, stream));
  for (int i = 0; i < iters; ++i) launch();
  XF_CUDA_CHECK(cudaEventRecord(b, stream));
  XF_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  XF_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / iters;
}

// Each launch's best of `rounds` time_ms(launch, iters), the launches taking turns within a round
// so that they share the GPU's clock states.
inline std::vector<double> best_alternating(const std::vector<std::function<void()>>& launches,
                                            int iters, int rounds = 3) {
  std::vector<double> best(launches.size(), 1e30);
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < launches.size(); ++i)
      best[i] = std::min(best[i], time_ms(launches[i], iters));
  return best;
}

}  // namespace xftest
