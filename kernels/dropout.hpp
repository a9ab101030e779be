// Dropout, bias and residual additions on [N, C] rows (the element-wise glue of a transformer
// block). Masks come from Philox (philox.hpp): nothing is stored, backward passes regenerate the
// forward's mask from the same Dropout {p, seed, offset}. Storage T = __half, __nv_bfloat16 or
// float, math fp32; C % 8 == 0 and pointers 16-byte aligned. Column sums (bias gradients) are
// deterministic and need `scratch` of norm_backward_scratch_bytes(C) bytes (layernorm.hpp); C <=
// 16384 there.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/philox.hpp"

namespace xfbench::kernels {

struct Fp8Output;  // fp8.hpp

// out = dropout(inp) over n elements (n % 8 == 0). out may alias inp.
template <class T>
void dropout_forward(T* out, const T* inp, std::size_t n, Dropout dropout, cudaStream_t stream);

// dinp = dout * mask / (1 - p), the mask of dropout_forward with the same Dropout.
template <class T>
void dropout_backward(T* dinp, const T* dout, std::size_t n, Dropout dropout, cudaStream_t stream);

// out = residual + dropout(x + bias): the residual add closing a pre-LN sublayer (GPT-2, T5).
// bias, residual nullable (p = 0 and residual null gives a plain bias add). out may alias x or
// residual.
template <class T>
void bias_dropout_residual_forward(T* out, const T* x, const T* bias, const T* residual,
                                   Dropout dropout, int N, int C, cudaStream_t stream);

// Backward of bias_dropout_residual_forward: dx = dropout_backward(dout); dbias (nullable) = column
// sums of dx. (The residual's gradient is dout itself.) dx may alias dout. fp8 (nullable): when
// its q is set, dx (then nullable) is written there in FP8 instead and, where its qt is set,
// transposed there too (N % 16 == 0), in the same pass (the down projection's gradient as both
// its FP8 products read it; bf16 or fp16 storage).
template <class T>
void dropout_bias_backward(T* dx, T* dbias, float* scratch, const T* dout, Dropout dropout, int N,
                           int C, cudaStream_t stream, const Fp8Output* fp8 = nullptr);

// dbias = column sums of dout [N, C] (C <= 16384): the bias gradient of a linear layer.
template <class T>
void bias_backward(T* dbias, float* scratch, const T* dout, int N, int C, cudaStream_t stream);

}  // namespace xfbench::kernels
