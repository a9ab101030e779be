// The one set of element conversions every floor uses, on the host and in kernels: a stored
// element to fp32 (exact for every storage type), fp32 to a 16-bit type rounding to nearest even,
// and double to a stored type for the random fills (16-bit types rounding once). Include from
// .cu files or, for the host functions only, from .cpp files (cuda_runtime_api.h first there).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

namespace xfbench {

__host__ __device__ __forceinline__ float to_float(float x) { return x; }
__host__ __device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__host__ __device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__host__ __device__ __forceinline__ float to_float(__nv_fp8_e4m3 x) { return float(x); }
__host__ __device__ __forceinline__ float to_float(__nv_fp8_e5m2 x) { return float(x); }

template <class T>
__host__ __device__ __forceinline__ T from_float(float x);
template <>
__host__ __device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__host__ __device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__host__ __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

template <class T>
__host__ __device__ __forceinline__ T from_double(double x) {
  return static_cast<T>(x);  // float, double
}
template <>
__host__ __device__ __forceinline__ __half from_double<__half>(double x) {
  return __double2half(x);
}
template <>
__host__ __device__ __forceinline__ __nv_bfloat16 from_double<__nv_bfloat16>(double x) {
  return __double2bfloat16(x);
}
template <>
__host__ __device__ __forceinline__ __nv_fp8_e4m3 from_double<__nv_fp8_e4m3>(double x) {
  return __nv_fp8_e4m3(static_cast<float>(x));  // through fp32, as the fills always drew it
}

}  // namespace xfbench
