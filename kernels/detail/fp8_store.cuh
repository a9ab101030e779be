// FP8 output for the kernels: the cast of eight floats with the amax and the overflow count carried
// along, their block-wide publication, and Fp8Store, an Fp8Output (fp8.hpp) as a producer kernel
// (a norm, an activation) takes it, so that its output is written in FP8 in the pass that computes
// it. Internal to kernels/; include only from .cu files.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

#include "kernels/detail/vec.cuh"
#include "kernels/fp8.hpp"

namespace xfbench::kernels::detail {

inline __nv_fp8_interpretation_t fp8_interp(Fp8Format f) {
  return f == Fp8Format::e4m3 ? __NV_E4M3 : __NV_E5M2;
}

__device__ __forceinline__ __nv_fp8x2_storage_t fp8_cvt2(float a, float b,
                                                         __nv_fp8_interpretation_t f) {
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, f);
}

// Eight values times s as eight FP8 bytes; amax m (of the values before scaling) and the clipped
// count `over` carried along.
__device__ __forceinline__ uint2 fp8_cast8(const float (&a)[kVec], float s, float clip,
                                           __nv_fp8_interpretation_t f, float& m,
                                           unsigned long long& over) {
  union {
    uint2 raw;
    __nv_fp8x2_storage_t pair[4];
  } u;
#pragma unroll
  for (int j = 0; j < kVec; j += 2) {
    m = fmaxf(m, fmaxf(fabsf(a[j]), fabsf(a[j + 1])));
    const float y0 = a[j] * s, y1 = a[j + 1] * s;
    over += (fabsf(y0) > clip) + (fabsf(y1) > clip);
    u.pair[j / 2] = fp8_cvt2(y0, y1, f);
  }
  return u.raw;
}

// Non-negative floats order as their bit patterns.
__device__ __forceinline__ void fp8_atomic_max_abs(float* target, float v) {
  atomicMax(reinterpret_cast<unsigned*>(target), __float_as_uint(v));
}

// Block-wide max and sum, then one atomic each per block. Every thread of the block calls it.
__device__ __forceinline__ void fp8_publish(float amax, unsigned long long over, float* amax_out,
                                            unsigned long long* over_out, bool record_amax) {
  for (int o = 16; o > 0; o >>= 1) {
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    over += __shfl_xor_sync(0xffffffffu, over, o);
  }
  __shared__ float s_amax[32];
  __shared__ unsigned long long s_over[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if (lane == 0) s_amax[warp] = amax, s_over[warp] = over;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < warps; ++w) amax = fmaxf(amax, s_amax[w]), over += s_over[w];
    if (record_amax && amax_out) fp8_atomic_max_abs(amax_out, amax);
    if (over && over_out) atomicAdd(over_out, over);
  }
}

// Tensor i of an Fp8Scales as a producer writes it. Three kinds of launch:
//   held     (delayed recipe, after its first step) q = x·scale, amax recorded;
//   measure  only amax (after it was zeroed): no write at all;
//   measured q = x·scale with the scale from the amax just measured (block 0 publishes it).
// fp8_produce runs the launches a recipe needs.
struct Fp8Store {
  std::uint8_t* q = nullptr;  // nullptr: the producer writes its own type
  float* scale = nullptr;
  float* scale_inv = nullptr;
  float* amax = nullptr;
  unsigned long long* overflow = nullptr;
  float max = 448.f, clip = 464.f;
  __nv_fp8_interpretation_t f = __NV_E4M3;
  int margin = 0;
  bool measure = false, measured = false;

  // The scale of a write (every block computes the same value).
  __device__ __forceinline__ float scale_value() const {
    return measured ? fp8_scale_from_amax(*amax, *scale, max, margin) : *scale;
  }
  // Eight values at element `off` of q (a no-op write when measuring).
  __device__ __forceinline__ void store8(std::size_t off, const float (&v)[kVec], float s, float& m,
                                         unsigned long long& o) const {
    if (measure) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) m = fmaxf(m, fabsf(v[j]));
      return;
    }
    *reinterpret_cast<uint2*>(q + off) = fp8_cast8(v, s, clip, f, m, o);
  }
  // After the block's last store8 (every thread of the block calls it).
  __device__ __forceinline__ void finish(float m, unsigned long long o, float s) const {
    fp8_publish(m, o, amax, measure ? nullptr : overflow, measure || !measured);
    if (measured && !measure && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {
      *scale = s;
      *scale_inv = 1.f / s;
    }
  }
};

inline Fp8Store fp8_store(const Fp8Output& out, bool measure, bool measured) {
  const Fp8Scales& s = *out.scales;
  Fp8Store d;
  d.q = static_cast<std::uint8_t*>(out.q);
  d.scale = s.scale(out.i);
  d.scale_inv = const_cast<float*>(s.scale_inv(out.i));
  d.amax = s.amax(out.i);
  d.overflow = s.overflow();
  d.max = fp8_max(s.format(out.i));
  d.clip = fp8_clip(s.format(out.i));
  d.f = fp8_interp(s.format(out.i));
  d.margin = s.config().margin;
  d.measure = measure;
  d.measured = measured;
  return d;
}

// Runs launch(Fp8Store) as out's recipe needs: once with the held scale (the delayed recipe), or
// measuring first and then writing with the scale measured (the current recipe, and the delayed
// one's first step). A null `out` runs launch(Fp8Store{}) once: the producer's own type.
template <class Launch>
void fp8_produce(const Fp8Output& out, cudaStream_t stream, const Launch& launch) {
  if (!out.q) return launch(Fp8Store{});
  check_fp8_output(out);
  if (!out.scales->measures_own_amax()) return launch(fp8_store(out, false, false));
  XF_CUDA_CHECK(cudaMemsetAsync(out.scales->amax(out.i), 0, sizeof(float), stream));
  launch(fp8_store(out, true, true));
  launch(fp8_store(out, false, true));
}

}  // namespace xfbench::kernels::detail
