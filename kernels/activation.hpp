// The activations of T5's and Llama's FFNs with the dropout HF applies right after them
// (T5DenseActDense and T5DenseGatedActDense: dropout(act(x·wiᵀ)) feeds wo), forward and backward:
//   ReLU        act = dropout(relu(pre))                          t5-small ... t5-11b
//   gated GELU  act = dropout(gelu(pre_gate) · pre_linear)        T5 v1.1 ("gated-gelu": tanh form)
//   SwiGLU      act = silu(pre_gate) · pre_up                     Llama's MLP (no dropout)
// For the gated forms `pre` is the [N, 2C] product x·[wi_0; wi_1]ᵀ of one GEMM (Llama: [gate_proj;
// up_proj]): columns [0, C) are the gate's input, [C, 2C) the linear part. Storage T = __half,
// __nv_bfloat16 or float, math fp32; C % 8 == 0, pointers 16-byte aligned. Dropout masks are
// Philox's over the element index of act [N, C] (philox.hpp); dropout.p = 0 turns dropout off.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/gelu.hpp"
#include "kernels/philox.hpp"

namespace xfbench::kernels {

// act = dropout(relu(pre)) over n elements (n % 8 == 0). act may alias pre.
template <class T>
void relu_dropout_forward(T* act, const T* pre, std::size_t n, Dropout dropout,
                          cudaStream_t stream);

// dpre = dact · relu'(pre) · mask / (1 - p), from the forward's output alone: act > 0 exactly where
// the element was kept and pre > 0, so neither pre nor the mask is needed. dpre may alias dact.
template <class T>
void relu_dropout_backward(T* dpre, const T* dact, const T* act, std::size_t n, Dropout dropout,
                           cudaStream_t stream);

// The gate's activation: GELU in either form (gelu.hpp), or SiLU x·sigmoid(x).
enum class GateAct { gelu_erf, gelu_tanh, silu };
GateAct gate_act(Gelu kind);  // the GELU of that form

// act [N, C] = dropout(f(pre[:, :C]) · pre[:, C:]) from pre [N, 2C], f the gate's activation.
// fp8 (nullable): when its q is set, act (then nullable) is written there in FP8 instead, with the
// amax in the same pass (fp8.hpp: Fp8Output; bf16 or fp16 storage), and, where its qt is set,
// transposed there too (N % 16 == 0; the down projection's weight gradient reads it).
template <class T>
void gated_dropout_forward(T* act, const T* pre, int N, int C, GateAct gate, Dropout dropout,
                           cudaStream_t stream, const Fp8Output* fp8 = nullptr);

// dpre [N, 2C] from dact [N, C]: with g = dropout_backward(dact), dgate = g · linear · f'(gate),
// dlinear = g · f(gate). dpre must not alias pre. fp8 (nullable): when its q is set, dpre (then
// nullable) is written there in FP8 instead (the up projection's gradient, e5m2, where only its
// FP8 products read it), with the amax in the same pass, and, where its qt is set, transposed
// there too ([2C, N], N % 16 == 0; the up projection's weight gradient reads it).
template <class T>
void gated_dropout_backward(T* dpre, const T* dact, const T* pre, int N, int C, GateAct gate,
                            Dropout dropout, cudaStream_t stream, const Fp8Output* fp8 = nullptr);

}  // namespace xfbench::kernels
