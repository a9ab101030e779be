// 16-byte packs of any storage type (fp16 / bf16: 8 elements, fp32: 4) loaded as and stored from
// fp32, for the kernels that also run in fp32 (the training step's tf32/fp32 mode). Internal to
// kernels/; include only from .cu files.
#pragma once

#include "kernels/detail/vec.cuh"

namespace xfbench::kernels::detail {

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

// The 8-element vectors of vec.cuh (kVec, the unit of the row and element-wise kernels and of
// their dropout masks) in fp32 storage: two 16-byte loads or stores. Non-template overloads, so
// detail::load8 / store8 in a kernel templated on T pick them for T = float (include this header
// before the kernel's code).
__device__ __forceinline__ void load8(float (&f)[kVec], const float* p) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}
__device__ __forceinline__ void store8(float* p, const float (&f)[kVec]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(f[0], f[1], f[2], f[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(f[4], f[5], f[6], f[7]);
}

// 8 elements as stored (16 bytes of fp16/bf16, 32 of fp32), kept packed in registers: rows
// prefetched before they are used (layernorm.cu).
template <class T>
struct Raw8 {
  int4 w[sizeof(T) / 2];
};
template <class T>
__device__ __forceinline__ Raw8<T> load_raw8(const T* p) {
  Raw8<T> r;
#pragma unroll
  for (int i = 0; i < int(sizeof(T) / 2); ++i) r.w[i] = reinterpret_cast<const int4*>(p)[i];
  return r;
}
template <class T>
__device__ __forceinline__ void unpack8(float (&f)[kVec], const Raw8<T>& raw) {
  union {
    int4 w[sizeof(T) / 2];
    T v[kVec];
  } u;
#pragma unroll
  for (int i = 0; i < int(sizeof(T) / 2); ++i) u.w[i] = raw.w[i];
#pragma unroll
  for (int j = 0; j < kVec; ++j) f[j] = to_float(u.v[j]);
}

}  // namespace xfbench::kernels::detail
