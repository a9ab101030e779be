// The gated FFNs' gate activations on the device (activation.hpp: GateAct), shared by the gated
// activation kernels and the fused gated products' epilogues (gemm_fused.hpp), so both compute the
// same function of the same fp32 values. Internal to kernels/; include only from .cu files.
#pragma once

#include "kernels/activation.hpp"
#include "kernels/detail/gelu.cuh"

namespace xfbench::kernels::detail {

__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + __expf(-x)); }

// f(x): SiLU x·sigmoid(x), or GELU in either form.
__device__ __forceinline__ float gate_value(float x, GateAct a) {
  if (a == GateAct::silu) return x * sigmoid(x);
  return gelu(x, a == GateAct::gelu_erf ? Gelu::erf : Gelu::tanh);
}

// f'(x).
__device__ __forceinline__ float gate_grad(float x, GateAct a) {
  if (a == GateAct::silu) {
    const float s = sigmoid(x);
    return s * (1.f + x * (1.f - s));
  }
  return gelu_grad(x, a == GateAct::gelu_erf ? Gelu::erf : Gelu::tanh);
}

}  // namespace xfbench::kernels::detail
