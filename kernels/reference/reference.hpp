// Float64 CPU references of the kernels in kernels/ (host only, slow, for tests and for validating
// layer cases at small sizes). Tensors are dense row-major double arrays; nullable pointers mirror
// the kernels' optional inputs and outputs. Dropout masks are the kernels' (philox.hpp), so a
// reference with dropout matches the GPU element for element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/gelu.hpp"
#include "kernels/philox.hpp"

namespace xfbench::kernels::ref {

// z = dropout(x + xbias) + residual; out = norm(z) · weight + bias (rms: no mean, no bias).
void norm_forward(double* out, double* z, double* mean, double* rstd, const double* x,
                  const double* xbias, const double* residual, const double* weight,
                  const double* bias, Dropout dropout, int N, int C, double eps, bool rms);

// Gradients of norm_forward given z (its statistics are recomputed here in float64):
// dz = dnorm(dout + dout2) + dresidual; dx = dropout_backward(dz); dxbias = Σrows dx;
// dweight, dbias the parameter gradients. Any output may be null.
void norm_backward(double* dz, double* dx, double* dxbias, double* dweight, double* dbias,
                   const double* dout, const double* dout2, const double* dresidual,
                   const double* z, const double* weight, Dropout dropout, int N, int C, double eps,
                   bool rms);

double gelu(double x, Gelu kind);
double gelu_grad(double x, Gelu kind);
double silu(double x);  // x·sigmoid(x), Llama's gate
double silu_grad(double x);

// out = residual + dropout(x + bias) over [N, C] (bias, residual nullable).
void bias_dropout_residual(double* out, const double* x, const double* bias, const double* residual,
                           Dropout dropout, int N, int C);
// dx = dropout_backward(dout); dbias = Σrows dx (nullable).
void dropout_bias_backward(double* dx, double* dbias, const double* dout, Dropout dropout, int N,
                           int C);

// Attention softmax over [B, NH, Sq, Sk] rows (see softmax.hpp).
void attention_softmax_forward(double* probs, double* probs_dropped, const double* scores,
                               const double* mask, const double* bias, double scale, bool causal,
                               Dropout dropout, int B, int NH, int Sq, int Sk);
void attention_softmax_backward(double* dscores, const double* dprobs_dropped, const double* probs,
                                double scale, Dropout dropout, int B, int NH, int Sq, int Sk);

// Attention on dense [B, NH, S, HD] tensors. kv_lens (nullable) hides keys j >= kv_lens[b]; bias
// [NH, Sq, Sk] nullable; the dropout mask is Philox's over [B, NH, Sq, Sk] (the unfused backend's).
// Grouped-query: k, v, dk, dv are [B, NKV, Sk, HD], query head h reads K/V head h / (NH / NKV)
// (HF's repeat_kv), and dk, dv are the sums over each K/V head's query heads.
struct AttentionRef {
  int B, NH, Sq, Sk, HD;
  double scale;
  bool causal;
  const int* kv_lens;
  const double* bias;
  Dropout dropout;
  int NKV = 0;  // K/V heads; 0: NH (last, so shorter aggregate initialisers keep compiling)
};
void attention_forward(double* o, const double* q, const double* k, const double* v,
                       const AttentionRef& a);
void attention_backward(double* dq, double* dk, double* dv, const double* dout, const double* q,
                        const double* k, const double* v, const AttentionRef& a);
// The same, and dbias [NH, Sq, Sk] (nullable): the gradient of the additive score bias, summed over
// the batch.
void attention_backward(double* dq, double* dk, double* dv, double* dbias, const double* dout,
                        const double* q, const double* k, const double* v, const AttentionRef& a);

}  // namespace xfbench::kernels::ref
