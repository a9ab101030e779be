#include "axpy.hpp"
#include "xfbench/error.hpp"

namespace {
__global__ void axpy_kernel(float a, const float* x, float* y, std::size_t n) {
  std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
}  // namespace

void axpy_gpu(float a, const float* x, float* y, std::size_t n, cudaStream_t stream) {
  axpy_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(a, x, y, n);
  XF_CUDA_CHECK_LAUNCH();
}

void axpy_cpu(float a, const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
