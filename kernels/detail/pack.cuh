// 16-byte packs of any storage type (fp16 / bf16: 8 elements, fp32: 4) loaded as and stored from
// fp32, for the kernels that also run in fp32 (the training step's tf32/fp32 mode). Internal to
// kernels/; include only from .cu files.
#pragma once

#include "kernels/detail/vec.cuh"

namespace xfbench::kernels::detail {

__device__ __forceinline__ float to_float(float x) { return x; }
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}

template <class T>
constexpr int kPack = 16 / sizeof(T);  // elements per 16-byte pack

template <class T>
__device__ __forceinline__ void load_pack(float (&f)[kPack<T>], const T* p) {
  union {
    int4 raw;
    T v[kPack<T>];
  } u;
  u.raw = *reinterpret_cast<const int4*>(p);
#pragma unroll
  for (int j = 0; j < kPack<T>; ++j) f[j] = to_float(u.v[j]);
}

template <class T>
__device__ __forceinline__ void unpack(float (&f)[kPack<T>], int4 raw) {
  union {
    int4 raw;
    T v[kPack<T>];
  } u;
  u.raw = raw;
#pragma unroll
  for (int j = 0; j < kPack<T>; ++j) f[j] = to_float(u.v[j]);
}

template <class T>
__device__ __forceinline__ void store_pack(T* p, const float (&f)[kPack<T>]) {
  union {
    int4 raw;
    T v[kPack<T>];
  } u;
#pragma unroll
  for (int j = 0; j < kPack<T>; ++j) u.v[j] = from_float<T>(f[j]);
  *reinterpret_cast<int4*>(p) = u.raw;
}

}  // namespace xfbench::kernels::detail
