// Random fills and poisoning for benchmark inputs and outputs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "xfbench/convert.hpp"
#include "xfbench/memory.hpp"

namespace xfbench {
namespace {

// SplitMix64 of (seed, index): a counter-based generator, the same values on every launch shape.
__device__ __forceinline__ double uniform01(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (z >> 11) * (1.0 / 9007199254740992.0);
}

template <class T>
__global__ void fill_kernel(T* out, std::size_t n, std::uint64_t seed, double lo, double span) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    out[i] = from_double<T>(lo + span * uniform01(seed, i));
  }
}

template <class T>
void launch_fill(void* data, std::size_t n, std::uint64_t seed, double lo, double hi,
                 cudaStream_t stream) {
  if (n == 0) return;
  int sms = 0, dev = 0;
  XF_CUDA_CHECK(cudaGetDevice(&dev));
  XF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  std::size_t blocks = (n + 255) / 256;
  if (blocks > std::size_t(sms) * 32) blocks = std::size_t(sms) * 32;
  fill_kernel<T><<<unsigned(blocks), 256, 0, stream>>>(static_cast<T*>(data), n, seed, lo, hi - lo);
  XF_CUDA_CHECK_LAUNCH();
}

}  // namespace

void fill_uniform(void* data, std::size_t count, Dtype type, std::uint64_t seed, double lo,
                  double hi, cudaStream_t stream) {
  switch (type) {
    case Dtype::fp64:
      return launch_fill<double>(data, count, seed, lo, hi, stream);
    case Dtype::fp32:
    case Dtype::tf32:
      return launch_fill<float>(data, count, seed, lo, hi, stream);
    case Dtype::fp16:
      return launch_fill<__half>(data, count, seed, lo, hi, stream);
    case Dtype::bf16:
      return launch_fill<__nv_bfloat16>(data, count, seed, lo, hi, stream);
    case Dtype::fp8:
      return launch_fill<__nv_fp8_e4m3>(data, count, seed, lo, hi, stream);
  }
}

void poison(void* data, std::size_t bytes, cudaStream_t stream) {
  XF_CUDA_CHECK(cudaMemsetAsync(data, 0xFF, bytes, stream));
}

}  // namespace xfbench
