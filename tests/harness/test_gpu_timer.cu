// The GPU timer against kernels of known duration (skipped without a GPU).
#include <benchmark/benchmark.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "xfbench/device.hpp"
#include "xfbench/flags.hpp"
#include "xfbench/memory.hpp"
#include "xfbench/timer.hpp"

namespace {

// Spins until the global nanosecond timer has advanced by `ns`.
__global__ void spin(std::uint64_t ns) {
  std::uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

struct Capture : benchmark::BenchmarkReporter {
  std::vector<Run> runs;
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& r) override {
    runs.insert(runs.end(), r.begin(), r.end());
  }
};

// Steady mode (the default): one Google Benchmark iteration carries the whole measurement.
double measured_seconds(std::uint64_t ns, xfbench::Timing* timing,
                        benchmark::UserCounters* counters = nullptr,
                        const xfbench::TimerOptions& options = {}) {
  std::string name =
      "TimerTest/spin_ns:" + std::to_string(ns) + (options.graph_each_launch ? "/graph_each" : "");
  benchmark::RegisterBenchmark(name.c_str(),
                               [ns, timing, options](benchmark::State& state) {
                                 xfbench::Stream stream;
                                 *timing = xfbench::time_gpu(
                                     state, stream,
                                     [ns](cudaStream_t s) { spin<<<1, 1, 0, s>>>(ns); }, options);
                               })
      ->UseManualTime()
      ->Iterations(1);
  Capture capture;
  benchmark::RunSpecifiedBenchmarks(&capture, name + "/");
  if (capture.runs.size() != 1) return -1;
  if (counters) *counters = capture.runs[0].counters;
  return capture.runs[0].GetAdjustedRealTime() / 1e9;  // default unit: ns
}

class GpuTimer : public ::testing::Test {
  void SetUp() override {
    if (!xfbench::gpu_unavailable_reason().empty())
      GTEST_SKIP() << xfbench::gpu_unavailable_reason();
    xfbench::select_device(0);
  }
};

}  // namespace

TEST_F(GpuTimer, LongKernelTimedAlone) {
  xfbench::Timing t;
  benchmark::UserCounters c;
  double s = measured_seconds(500000, &t, &c);  // 500 us
  EXPECT_NEAR(s, 500e-6, 0.03 * 500e-6);
  EXPECT_EQ(t.mode, xfbench::TimingMode::steady);
  EXPECT_TRUE(t.steady.converged);  // a spin loop is steady
  EXPECT_GE(t.steady.windows, 10);
  EXPECT_GE(t.steady.warmup_s, 0.2);
  EXPECT_EQ(t.launches, std::size_t(t.steady.windows) * t.batch);
  EXPECT_GE(t.seconds * double(t.launches), 0.5);  // the minimum measured time
  EXPECT_NEAR(t.seconds, s, 1e-9);
  EXPECT_LT(c["cv_pct"], 0.5);
  EXPECT_EQ(c["windows"], t.steady.windows);
  if (c.count("power_W")) {  // NVML's energy counter over the measured windows
    EXPECT_GT(c["power_W"], 20);
    EXPECT_LT(c["power_W"], 2000);
    EXPECT_NEAR(c["J"], c["power_W"] * t.seconds, 1e-9 * c["J"]);
  }
}

// The same 10 us kernel launched one at a time between two events, as a per-launch reference:
// the sorted times of `n` launches.
std::vector<double> timed_alone(std::uint64_t ns, int n) {
  xfbench::Stream stream;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<double> seconds;
  for (int i = 0; i < n; ++i) {
    cudaEventRecord(start, stream.get());
    spin<<<1, 1, 0, stream.get()>>>(ns);
    cudaEventRecord(stop, stream.get());
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    seconds.push_back(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(seconds.begin(), seconds.end());
  return seconds;
}

// graph_each_launch: a long launch (a training step's place) is captured once and each launch
// replays it; the time is the launch's.
TEST_F(GpuTimer, LongLaunchReplayedAsOneGraph) {
  xfbench::TimerOptions options;
  options.graph_each_launch = true;
  xfbench::Timing t;
  const double s = measured_seconds(500000, &t, nullptr, options);  // 500 us
  EXPECT_TRUE(t.graph);
  EXPECT_NEAR(s, 500e-6, 0.03 * 500e-6);
  EXPECT_TRUE(t.steady.converged);
}

// A short kernel is batched in a CUDA graph so the host's launch gaps between batches do not
// count: per launch it takes no longer than the same kernel timed alone between two events in
// the same process (which the spin's own length and the timer's resolution also bound), and
// never less than the spin. No wall-clock bound of its own: the machine's noise moves both.
TEST_F(GpuTimer, ShortKernelBatchedInAGraph) {
  const std::uint64_t ns = 10000;
  const std::vector<double> alone = timed_alone(ns, 200);
  xfbench::Timing t;
  const double s = measured_seconds(ns, &t);
  EXPECT_TRUE(t.graph);
  EXPECT_GT(t.batch, 100);
  EXPECT_GE(s, ns * 1e-9 * 0.999);
  const double alone_p90 = alone[alone.size() * 9 / 10];
  EXPECT_LE(s, alone_p90) << "alone: min " << alone.front() << " s, median "
                          << alone[alone.size() / 2] << " s, p90 " << alone_p90 << " s";
}

TEST_F(GpuTimer, RandomFillIsUniformAndNeverZeroFilled) {
  xfbench::DeviceBuffer<float> buf(1 << 20);
  xfbench::fill_uniform(buf, xfbench::Dtype::fp32, 7, -1.0, 1.0, nullptr);
  std::vector<float> host(buf.size());
  ASSERT_EQ(cudaMemcpy(host.data(), buf.data(), buf.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  double sum = 0;
  std::size_t zeros = 0;
  for (float v : host) {
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    sum += v;
    zeros += v == 0.0f;
  }
  EXPECT_NEAR(sum / host.size(), 0.0, 0.01);
  EXPECT_LT(zeros, 4u);
}

// Every storage type filled on the GPU and read back as doubles: in [lo, hi], spread over it, and
// f32 exactly the bytes a plain copy gives (download_as_double widens without rounding).
TEST_F(GpuTimer, EveryStorageTypeFillsAndDownloadsAsDouble) {
  const std::size_t n = 1 << 16;
  for (xfbench::Dtype t : {xfbench::Dtype::fp64, xfbench::Dtype::fp32, xfbench::Dtype::fp16,
                           xfbench::Dtype::bf16, xfbench::Dtype::fp8}) {
    SCOPED_TRACE(xfbench::to_string(t));
    xfbench::DeviceBuffer<unsigned char> buf(n * xfbench::size_of(t));
    xfbench::fill_uniform(buf.data(), n, t, 11, 0.5, 2.0, nullptr);
    const std::vector<double> v =
        xfbench::download_as_double(buf.data(), n, xfbench::element_of(t), nullptr);
    ASSERT_EQ(v.size(), n);
    double sum = 0;
    for (double x : v) {
      ASSERT_GE(x, 0.5);
      ASSERT_LE(x, 2.0);  // 16- and 8-bit types may round up to hi
      sum += x;
    }
    EXPECT_NEAR(sum / double(n), 1.25, 0.02);
    if (t == xfbench::Dtype::fp32) {
      std::vector<float> raw(n);
      ASSERT_EQ(cudaMemcpy(raw.data(), buf.data(), n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], double(raw[i]));
    }
  }
}
