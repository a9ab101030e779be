// Device helpers shared by the memory-bound kernels: 16-byte vectors of 8 fp16/bf16 values
// converted to fp32, warp and row-group reductions, and argument checks. Internal to kernels/.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "xfbench/convert.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels::detail {

constexpr int kVec = 8;  // elements per 16-byte vector (fp16 / bf16)

// The SDK's one set of element conversions (xfbench/convert.hpp).
using xfbench::from_float;
using xfbench::to_float;

// Loads 8 consecutive elements (16-byte aligned) as floats.
template <class T>
__device__ __forceinline__ void load8(float (&f)[kVec], const T* p) {
  union {
    int4 raw;
    T v[kVec];
  } u;
  u.raw = *reinterpret_cast<const int4*>(p);
#pragma unroll
  for (int j = 0; j < kVec; ++j) f[j] = to_float(u.v[j]);
}

// Raw 16-byte loads kept packed in registers (prefetching the next row), unpacked when used.
template <class T>
__device__ __forceinline__ int4 load_raw(const T* p) {
  return *reinterpret_cast<const int4*>(p);
}
template <class T>
__device__ __forceinline__ void unpack8(float (&f)[kVec], int4 raw) {
  union {
    int4 raw;
    T v[kVec];
  } u;
  u.raw = raw;
#pragma unroll
  for (int j = 0; j < kVec; ++j) f[j] = to_float(u.v[j]);
}

template <class T>
__device__ __forceinline__ void store8(T* p, const float (&f)[kVec]) {
  union {
    int4 raw;
    T v[kVec];
  } u;
#pragma unroll
  for (int j = 0; j < kVec; ++j) u.v[j] = from_float<T>(f[j]);
  *reinterpret_cast<int4*>(p) = u.raw;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Row kernels run blocks of kRowWarps warps; a row is handled by a group of WPR consecutive warps
// (WPR = 1, 2, 4 or 8), each thread holding up to VPT vectors of the row in registers.
constexpr int kRowWarps = 8;
constexpr int kRowThreads = kRowWarps * 32;

// Sum (or max) over the LPR lanes of a row: LPR = 8 or 16 splits a warp between rows, LPR = 32
// is a warp, LPR = 64..256 spans warps through shared memory (every thread of the block must call
// it then, the same number of times).
template <int LPR, bool kMax = false>
__device__ __forceinline__ float lanes_reduce(float v, float* smem /* [blockDim / 32] */) {
  constexpr int kShfl = LPR < 32 ? LPR : 32;
#pragma unroll
  for (int o = kShfl / 2; o > 0; o >>= 1) {
    const float u = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, u) : v + u;
  }
  if constexpr (LPR > 32) {
    constexpr int kWarps = LPR / 32;
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) smem[warp] = v;
    __syncthreads();
    const int first = warp / kWarps * kWarps;
    v = smem[first];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) v = kMax ? fmaxf(v, smem[first + w]) : v + smem[first + w];
    __syncthreads();
  }
  return v;
}

// Sum (or max) over the WPR warps of the calling thread's row group. Every thread of the block must
// call it the same number of times (it synchronises the block when WPR > 1).
template <int WPR, bool kMax = false>
__device__ __forceinline__ float group_reduce(float v, float* smem /* [kRowWarps] */) {
  return lanes_reduce<32 * WPR, kMax>(v, smem);
}

// Two sums over the row group at once (one synchronisation instead of two).
template <int WPR>
__device__ __forceinline__ float2 group_sum2(float2 v, float2* smem /* [kRowWarps] */) {
  v.x = warp_sum(v.x);
  v.y = warp_sum(v.y);
  if constexpr (WPR > 1) {
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) smem[warp] = v;
    __syncthreads();
    const int first = warp / WPR * WPR;
    v = smem[first];
#pragma unroll
    for (int w = 1; w < WPR; ++w) {
      v.x += smem[first + w].x;
      v.y += smem[first + w].y;
    }
    __syncthreads();
  }
  return v;
}

}  // namespace xfbench::kernels::detail

namespace xfbench::kernels::detail {

// Host-side checks shared by the launchers.
inline void require_aligned(const void* p, const char* name) {
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
    XF_THROW(InvalidArgument, std::string(name) + " must be 16-byte aligned");
}
// A device copy of a host table (a launcher's work list), uploaded synchronously; null when empty.
// The caller owns it (cudaFree).
template <class T>
void* upload_table(const std::vector<T>& table) {
  if (table.empty()) return nullptr;
  void* d = nullptr;
  XF_CUDA_CHECK(cudaMalloc(&d, sizeof(T) * table.size()));
  const cudaError_t copied =
      cudaMemcpy(d, table.data(), sizeof(T) * table.size(), cudaMemcpyHostToDevice);
  if (copied != cudaSuccess) {
    cudaFree(d);
    XF_CUDA_CHECK(copied);
  }
  return d;
}
inline void require_row_shape(long long N, long long C, long long max_c, const char* what) {
  if (N < 0 || C <= 0 || C % kVec != 0 || C > max_c)
    XF_THROW(InvalidArgument, std::string(what) + ": row length " + std::to_string(C) +
                                  " must be a positive multiple of 8 and at most " +
                                  std::to_string(max_c));
}

}  // namespace xfbench::kernels::detail
