#include <algorithm>
#include <cstdint>

#include "burn_kernels.hpp"
#include "xfbench/error.hpp"

namespace xfbench::burn {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;

// Elements of type T (the element's width as an unsigned integer) that differ within a 16-byte
// chunk.
template <class T>
__device__ __forceinline__ unsigned differing(const uint4& x, const uint4& y) {
  const T* a = reinterpret_cast<const T*>(&x);
  const T* b = reinterpret_cast<const T*>(&y);
  unsigned n = 0;
#pragma unroll
  for (int i = 0; i < int(sizeof(uint4) / sizeof(T)); ++i) n += a[i] != b[i];
  return n;
}

// 16-byte loads over the chunks, the tail element by element; one atomic per block that found
// any difference.
template <class T>
__global__ void mismatch_kernel(const T* a, const T* b, std::size_t count,
                                unsigned long long* mismatches) {
  const std::size_t chunks = count * sizeof(T) / sizeof(uint4);
  const auto* va = reinterpret_cast<const uint4*>(a);
  const auto* vb = reinterpret_cast<const uint4*>(b);
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t first = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  unsigned long long n = 0;
  for (std::size_t i = first; i < chunks; i += stride) n += differing<T>(va[i], vb[i]);
  for (std::size_t i = chunks * sizeof(uint4) / sizeof(T) + first; i < count; i += stride)
    n += a[i] != b[i];
  for (int offset = 16; offset > 0; offset /= 2) n += __shfl_down_sync(0xffffffffu, n, offset);
  __shared__ unsigned long long warp_sums[kThreads / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = n;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long block = 0;
    for (int w = 0; w < kThreads / 32; ++w) block += warp_sums[w];
    if (block) atomicAdd(mismatches, block);
  }
}

template <class T>
void launch_mismatch(cudaStream_t stream, const void* a, const void* b, std::size_t count,
                     unsigned long long* mismatches) {
  const std::size_t chunks = count * sizeof(T) / sizeof(uint4);
  const unsigned blocks = unsigned(std::min<std::size_t>(
      std::max<std::size_t>((chunks + kThreads - 1) / kThreads, 1), kMaxBlocks));
  mismatch_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(a),
                                                      static_cast<const T*>(b), count, mismatches);
  XF_CUDA_CHECK_LAUNCH();
}

template <class T>
__global__ void flip_kernel(T* data, std::size_t index, unsigned bit) {
  data[index] ^= T(T(1) << bit);
}

template <class T>
void launch_flip(cudaStream_t stream, void* data, std::size_t index, unsigned bit) {
  if (bit >= 8 * sizeof(T)) XF_THROW(InvalidArgument, "flip_bit: bit beyond the element");
  flip_kernel<T><<<1, 1, 0, stream>>>(static_cast<T*>(data), index, bit);
  XF_CUDA_CHECK_LAUNCH();
}

}  // namespace

void count_mismatches(cudaStream_t stream, const void* a, const void* b, std::size_t count,
                      std::size_t elem_bytes, unsigned long long* mismatches) {
  switch (elem_bytes) {
    case 1:
      return launch_mismatch<std::uint8_t>(stream, a, b, count, mismatches);
    case 2:
      return launch_mismatch<std::uint16_t>(stream, a, b, count, mismatches);
    case 4:
      return launch_mismatch<std::uint32_t>(stream, a, b, count, mismatches);
    case 8:
      return launch_mismatch<std::uint64_t>(stream, a, b, count, mismatches);
  }
  XF_THROW(InvalidArgument, "count_mismatches: elements of 1, 2, 4 or 8 bytes");
}

void flip_bit(cudaStream_t stream, void* data, std::size_t index, std::size_t elem_bytes,
              unsigned bit) {
  switch (elem_bytes) {
    case 1:
      return launch_flip<std::uint8_t>(stream, data, index, bit);
    case 2:
      return launch_flip<std::uint16_t>(stream, data, index, bit);
    case 4:
      return launch_flip<std::uint32_t>(stream, data, index, bit);
    case 8:
      return launch_flip<std::uint64_t>(stream, data, index, bit);
  }
  XF_THROW(InvalidArgument, "flip_bit: elements of 1, 2, 4 or 8 bytes");
}

}  // namespace xfbench::burn
