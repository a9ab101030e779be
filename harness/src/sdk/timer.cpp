#include "xfbench/timer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "telemetry.hpp"
#include "xfbench/device.hpp"
#include "xfbench/error.hpp"
#include "xfbench/flags.hpp"
#include "xfbench/memory.hpp"

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

}  // namespace

Timing time_gpu(benchmark::State& state, cudaStream_t stream, const Launch& launch,
                const TimerOptions& options) {
  Timing t;
  t.cold = l2_flush_enabled();
  Event start, stop;

  for (int i = 0; i < options.warmup; ++i) launch(stream);
  XF_CUDA_CHECK(cudaStreamSynchronize(stream));

  // One launch, to size the batch.
  start.record(stream);
  launch(stream);
  stop.record(stream);
  double single = stop.elapsed_ms_since(start) / 1e3;
  if (!t.cold) {
    double fit = options.target_iteration_seconds / std::max(single, 1e-7);
    t.batch = int(std::clamp(std::floor(fit), 1.0, double(options.max_batch)));
  }
  std::unique_ptr<BatchGraph> graph;
  if (!t.cold && t.batch > 1 && options.use_graph && single < kGraphBelowSeconds) {
    graph = std::make_unique<BatchGraph>(stream, launch, t.batch);
    if (*graph) {
      t.graph = true;
      graph->launch(stream);  // first replay uploads the graph
      XF_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
  }

  detail::TelemetrySampler telemetry(telemetry_enabled() ? selected_device() : -1);
  for (auto _ : state) {
    if (t.cold) flush_l2(stream);
    start.record(stream);
    if (t.graph) {
      graph->launch(stream);
    } else {
      for (int i = 0; i < t.batch; ++i) launch(stream);
    }
    stop.record(stream);
    double seconds = stop.elapsed_ms_since(start) / 1e3;
    state.SetIterationTime(seconds / t.batch);
    t.total_seconds += seconds;
    t.launches += std::size_t(t.batch);
  }
  detail::TelemetryReading r = telemetry.stop();
  XF_CUDA_CHECK(cudaGetLastError());
  t.seconds = t.launches ? t.total_seconds / double(t.launches) : 0;
  if (r.samples > 0) {
    state.counters["sm_MHz"] = r.sm_mhz;
    state.counters["mem_MHz"] = r.mem_mhz;
    state.counters["temp_C"] = r.temp_c;
    state.counters["power_W"] = r.power_w;
  }
  return t;
}

Timing time_cpu(benchmark::State& state, const std::function<void()>& work) {
  Timing t;
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    work();
    ++t.launches;
  }
  t.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.seconds = t.launches ? t.total_seconds / double(t.launches) : 0;
  return t;
}

}  // namespace xfbench
