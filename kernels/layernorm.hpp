// LayerNorm and RMSNorm (T5LayerNorm) over rows of C elements, forward and backward, optionally
// fused with the residual block around them: z = dropout(x + bias) + residual, out = norm(z).
//
// Storage is T = __half, __nv_bfloat16 or float, math is fp32; mean / rstd are saved in fp32 (N
// floats each) for the backward. C must be a multiple of 8, at most 4096, and every pointer 16-byte
// aligned (a row lives in registers; loads and stores are 16-byte vectors). The weight/bias
// gradients are reduced without atomics: per-block partials in `scratch`, then a fixed-order sum,
// so they are bitwise reproducible on a given device. Dropout masks are regenerated from (seed,
// offset), see philox.hpp.
//
// Uses: BERT (post-LN)  out = LN(dropout(x + b) + residual) bias_dropout_residual_layernorm_*
//       GPT-2 (pre-LN)  z = residual + dropout(x + b) is the stream, out = LN(z) feeds the next
//       sublayer T5              RMSNorm, no biases: rmsnorm_* / dropout_residual_rmsnorm_*
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/philox.hpp"

namespace xfbench::kernels {

struct Fp8Output;  // fp8.hpp

constexpr int kMaxNormWidth = 8192;  // llama-3.1-70b's hidden

// out = (inp - mean) * rstd * weight + bias over each of N rows of C. mean/rstd may be null.
// Every forward below takes `fp8` (nullable): when its q is set, out (then nullable) is written
// there in FP8 instead, with the amax in the same pass (fp8.hpp: Fp8Output; bf16 or fp16 storage).
template <class T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const T* weight,
                       const T* bias, int N, int C, float eps, cudaStream_t stream,
                       const Fp8Output* fp8 = nullptr);

// z = dropout(x + xbias) + residual; out = LayerNorm(z). z is written when non-null (it is what the
// backward reads); xbias, residual may be null; dropout.p = 0 turns dropout off.
template <class T>
void bias_dropout_residual_layernorm_forward(T* out, T* z, float* mean, float* rstd, const T* x,
                                             const T* xbias, const T* residual, const T* weight,
                                             const T* bias, Dropout dropout, int N, int C,
                                             float eps, cudaStream_t stream,
                                             const Fp8Output* fp8 = nullptr);

// Bytes of `scratch` the backward passes below need for row length C on the current device.
std::size_t norm_backward_scratch_bytes(int C);

// Gradients of out = LayerNorm(inp): dinp = dLN(dout) (+ dresidual when non-null: the gradient
// reaching inp along a residual branch, e.g. pre-LN); dweight, dbias overwritten. dinp may alias
// dresidual.
template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, float* scratch, const T* dout,
                        const T* dresidual, const T* inp, const T* weight, const float* mean,
                        const float* rstd, int N, int C, cudaStream_t stream);

// Backward of bias_dropout_residual_layernorm_forward, from z and the saved statistics:
//   dz = dLN(dout + dout2) + dresidual   (dout2, dresidual nullable)  = gradient of `residual`
//   dx = dropout_backward(dz)             (same mask as the forward)   = gradient of x and of xbias
//   dxbias = column sums of dx; dweight, dbias the LayerNorm parameter gradients.
// dz, dx, dxbias may each be null when not wanted. dz may alias dresidual.
template <class T>
void bias_dropout_residual_layernorm_backward(T* dz, T* dx, T* dxbias, T* dweight, T* dbias,
                                              float* scratch, const T* dout, const T* dout2,
                                              const T* dresidual, const T* z, const T* weight,
                                              const float* mean, const float* rstd, Dropout dropout,
                                              int N, int C, cudaStream_t stream);

// T5LayerNorm: out = inp * rstd * weight, rstd = 1 / sqrt(mean(inp^2) + eps); no mean, no bias.
template <class T>
void rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight, int N, int C, float eps,
                     cudaStream_t stream, const Fp8Output* fp8 = nullptr);

// z = dropout(x) + residual; out = RMSNorm(z) (T5's pre-norm residual stream; z nullable).
template <class T>
void dropout_residual_rmsnorm_forward(T* out, T* z, float* rstd, const T* x, const T* residual,
                                      const T* weight, Dropout dropout, int N, int C, float eps,
                                      cudaStream_t stream, const Fp8Output* fp8 = nullptr);

// dinp = dRMSNorm(dout) (+ dresidual); dweight overwritten.
template <class T>
void rmsnorm_backward(T* dinp, T* dweight, float* scratch, const T* dout, const T* dresidual,
                      const T* inp, const T* weight, const float* rstd, int N, int C,
                      cudaStream_t stream);

// Backward of dropout_residual_rmsnorm_forward from z: dz = dRMSNorm(dout) + dresidual (the
// gradient of `residual`; dresidual nullable), dx = dropout_backward(dz) (nullable); dweight
// overwritten. dz may alias dresidual.
template <class T>
void dropout_residual_rmsnorm_backward(T* dz, T* dx, T* dweight, float* scratch, const T* dout,
                                       const T* dresidual, const T* z, const T* weight,
                                       const float* rstd, Dropout dropout, int N, int C,
                                       cudaStream_t stream);

}  // namespace xfbench::kernels
