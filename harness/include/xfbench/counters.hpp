// A case declares its work; the SDK turns it into counters in plain units (TFLOPS=386.2,
// GB/s=3014).
#pragma once

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "xfbench/dtype.hpp"
#include "xfbench/timer.hpp"

namespace xfbench {

struct Work {
  double flops = 0;           // per launch
  double bytes = 0;           // per launch, read + written
  Dtype dtype = Dtype::fp32;  // which tensor-core peak `pct_peak` refers to when flops > 0
  double samples = 0;         // per launch, for samples/s
  double tokens = 0;          // per launch, for tokens/s
};

// Sets TFLOPS, GB/s, pct_peak (of the dtype's peak when there are flops, else of memory bandwidth),
// samples/s, tokens/s — each only where its work is non-zero.
void set_counters(benchmark::State& state, const Timing& timing, const Work& work);

// Appends a note to the case's label ("a; b"), so the SDK's timing notes (noisy, throttled) and a
// plugin's own (kernel, validation error) stand side by side. Use it instead of State::SetLabel.
void add_label(benchmark::State& state, const std::string& note);

// The arithmetic, kept separate so it is tested without a GPU.
double tflops(double flops, double seconds);
double gbps(double bytes, double seconds);
double percent_of(double value, double peak);  // 0 when the peak is unknown
double median(
    std::vector<double> values);  // 0 of none; the mean of the middle two of an even count

}  // namespace xfbench
