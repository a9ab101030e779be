// Softmax over attention score rows, as the unfused ("eager") attention path computes it:
//   x[b,h,i,j]     = scale * scores[b,h,i,j] + mask[b,j] + bias[h,i,j]   (-inf where causal hides
//   j) probs          = softmax_j(x)                                       (saved for the backward)
//   probs_dropped  = dropout(probs)                                     (what multiplies V)
// Rows: B * NH * Sq, each of Sk elements, contiguous ([B, NH, Sq, Sk]). Storage T = __half,
// __nv_bfloat16 or float, math fp32. Sk % 8 == 0, Sk <= 4096, pointers 16-byte aligned. mask is
// HF's additive padding mask in fp32 ([B, Sk]: 0 to attend, a large negative value to hide),
// nullable; bias is an additive [NH, Sq, Sk] score bias shared by the batch (T5's relative position
// bias), nullable. causal hides j > i + Sk - Sq (GPT-2). A fully hidden row gives probabilities 0,
// not NaN. The dropout mask is Philox's over the element index of [B, NH, Sq, Sk] (philox.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/philox.hpp"

namespace xfbench::kernels {

constexpr int kMaxSoftmaxWidth = 4096;

// probs_dropped is written when dropout is active (it may be null otherwise); probs may be null
// when no backward follows and dropout is active. scores may alias probs.
template <class T>
void attention_softmax_forward(T* probs, T* probs_dropped, const T* scores, const float* mask,
                               const T* bias, float scale, bool causal, Dropout dropout, int B,
                               int NH, int Sq, int Sk, cudaStream_t stream);

// dscores = scale * probs * (dp - sum_j(probs * dp)), dp = dropout_backward(dprobs_dropped) with
// the forward's Dropout. dscores may alias dprobs_dropped. (mask and bias gradients: dscores /
// scale.)
template <class T>
void attention_softmax_backward(T* dscores, const T* dprobs_dropped, const T* probs, float scale,
                                Dropout dropout, int B, int NH, int Sq, int Sk,
                                cudaStream_t stream);

}  // namespace xfbench::kernels
