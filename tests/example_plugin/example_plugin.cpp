// Example: a GPU case using the SDK's buffers, validation, timer and counters, and its CPU twin.
#include <vector>

#include "axpy.hpp"
#include "xfbench/xfbench.hpp"

namespace {

constexpr std::size_t kN = std::size_t(1) << 22;
constexpr float kA = 0.5f;

void gpu_case(benchmark::State& state) {
  xfbench::Stream stream;
  xfbench::DeviceBuffer<float> x(kN), y(kN);
  xfbench::fill_uniform(x, xfbench::Dtype::fp32, 1, -1.0, 1.0, stream);
  xfbench::fill_uniform(y, xfbench::Dtype::fp32, 2, -1.0, 1.0, stream);
  if (xfbench::should_validate()) {
    std::vector<float> hx(kN), hy(kN);
    XF_CUDA_CHECK(cudaMemcpyAsync(hx.data(), x.data(), x.bytes(), cudaMemcpyDeviceToHost, stream));
    XF_CUDA_CHECK(cudaMemcpyAsync(hy.data(), y.data(), y.bytes(), cudaMemcpyDeviceToHost, stream));
    axpy_gpu(kA, x.data(), y.data(), kN, stream);
    std::vector<float> got(kN);
    XF_CUDA_CHECK(cudaMemcpyAsync(got.data(), y.data(), y.bytes(), cudaMemcpyDeviceToHost, stream));
    stream.sync();
    std::vector<double> g(got.begin(), got.end()), ref(kN);
    for (std::size_t i = 0; i < kN; ++i) ref[i] = double(kA) * hx[i] + hy[i];
    xfbench::require_close("axpy", g, ref, {1e-6});
  }
  auto t = xfbench::time_gpu(state, stream,
                             [&](cudaStream_t s) { axpy_gpu(kA, x.data(), y.data(), kN, s); });
  xfbench::set_counters(state, t, {2.0 * kN, 12.0 * kN, xfbench::Dtype::fp32});
}

void cpu_case(benchmark::State& state) {
  std::vector<float> x(kN, 0.25f), y(kN, 1.0f);
  if (xfbench::should_validate()) {
    axpy_cpu(kA, x.data(), y.data(), kN);
    xfbench::require_close("axpy", {double(y[7])}, {1.125}, {1e-7});
  }
  auto t = xfbench::time_cpu(state, [&] { axpy_cpu(kA, x.data(), y.data(), kN); });
  xfbench::set_counters(state, t, {2.0 * kN, 12.0 * kN, xfbench::Dtype::fp32});
}

void register_cases() {
  xfbench::add_case("Example/axpy/gpu/n:" + std::to_string(kN), gpu_case);
  xfbench::add_case("Example/axpy/cpu/n:" + std::to_string(kN), cpu_case, xfbench::Needs::cpu);
}

}  // namespace

XFBENCH_PLUGIN("example", "1.0.0", "out-of-tree example: axpy on the GPU and its CPU twin",
               register_cases)
