// GELU activations on [N, C] rows, optionally with the bias of the preceding linear layer fused in.
//   Gelu::erf   x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))                  BERT, T5 v1.1 ("gelu")
//   Gelu::tanh  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))            GPT-2 ("gelu_new")
// Storage T = __half, __nv_bfloat16 or float, math fp32; C % 8 == 0, pointers 16-byte aligned.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace xfbench::kernels {

enum class Gelu { erf, tanh };

struct Fp8Output;  // fp8.hpp

// out = gelu(inp + bias) (bias [C] nullable). out may alias inp. fp8 (nullable): when its q is
// set, out (then nullable) is written there in FP8 instead, with the amax in the same pass
// (fp8.hpp: Fp8Output; bf16 or fp16 storage), and, where its qt is set, transposed there too
// (N % 16 == 0).
template <class T>
void bias_gelu_forward(T* out, const T* inp, const T* bias, int N, int C, Gelu kind,
                       cudaStream_t stream, const Fp8Output* fp8 = nullptr);

// dinp = dout * gelu'(inp + bias), with inp the pre-activation given to the forward. dbias
// (nullable) = column sums of dinp, deterministic, using `scratch` (norm_backward_scratch_bytes(C)
// bytes, layernorm.hpp; C <= 16384). dinp may alias dout. fp8 (nullable): when its q is set, dinp
// (then nullable) is written there in FP8 instead and, where its qt is set, transposed there too,
// in the same pass (the up projection's gradient as both its FP8 products read it; N % 16 == 0
// with qt), dbias then from that pass's values (bf16 or fp16 storage).
template <class T>
void bias_gelu_backward(T* dinp, T* dbias, float* scratch, const T* dout, const T* inp,
                        const T* bias, int N, int C, Gelu kind, cudaStream_t stream,
                        const Fp8Output* fp8 = nullptr);

}  // namespace xfbench::kernels
