// GELU and its derivative on the device in both forms (gelu.hpp), shared by the activation kernels.
// Internal to kernels/; include only from .cu files.
#pragma once

#include "kernels/gelu.hpp"

namespace xfbench::kernels::detail {

constexpr float kSqrt1_2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kTanhCoef = 0.044715f;

__device__ __forceinline__ float gelu(float x, Gelu kind) {
  if (kind == Gelu::erf) return 0.5f * x * (1.f + erff(x * kSqrt1_2));
  return 0.5f * x * (1.f + tanhf(kSqrt2OverPi * (x + kTanhCoef * x * x * x)));
}

__device__ __forceinline__ float gelu_grad(float x, Gelu kind) {
  if (kind == Gelu::erf)
    return 0.5f * (1.f + erff(x * kSqrt1_2)) + x * kInvSqrt2Pi * __expf(-0.5f * x * x);
  const float t = tanhf(kSqrt2OverPi * (x + kTanhCoef * x * x * x));
  return 0.5f * (1.f + t) +
         0.5f * x * (1.f - t * t) * kSqrt2OverPi * (1.f + 3.f * kTanhCoef * x * x);
}

}  // namespace xfbench::kernels::detail
