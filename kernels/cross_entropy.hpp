// Fused softmax cross-entropy of a language-model head (the loss and its gradient in one pass):
//   loss_i   = logsumexp(x_i) − x_i[t_i]
//   dlogit_i = (softmax(x_i) − onehot(t_i)) · grad_scale · loss_scale / num_valid
// for each row i of logits x [N, V] with target t_i; rows with t_i = -100 (kIgnoreIndex, HF's
// ignore_index) are ignored: loss 0, dlogits 0. The gradient overwrites the logits IN PLACE, so
// no fp32 copy of the logits ever exists: each row is read once into registers (one block per
// row) and written once.
//
// Storage T = __half, __nv_bfloat16 or float, math fp32. Rows have stride ldv >= V elements with
// ldv·sizeof(T) a multiple of 16 bytes (pad the LM head's output: V = 30522 or 50257 are not
// multiples of 8) and logits 16-byte aligned; the padding columns V..ldv-1 are written 0, so a
// GEMM may read dlogits with K = ldv against zero-padded weights. ldv <= kMaxCrossEntropyWidth.
//
// num_valid (rows with a target) is given by the caller, who knows it from the data (the MLM
// mask; all rows but the last position of each sequence for a causal LM); the loss mean below
// counts them again on the GPU. Targets are not range-checked on the device: t_i in [0, V) or -100.
#pragma once

#include <cuda_runtime_api.h>

namespace xfbench::kernels {

constexpr int kIgnoreIndex = -100;
constexpr int kMaxCrossEntropyWidth = 131072;  // Llama 3: 128,256

// losses [N] fp32 (per row; 0 for ignored rows); logits [N, ldv] in: scores, out: dlogits.
// grad_scale: the caller's multiplier (e.g. 1 / accumulation steps); loss_scale: device float
// (fp16 dynamic loss scaling, TrainScalars::loss_scale of grad_norm.hpp) or null for 1.
// num_valid <= 0 writes zero gradients.
template <class T>
void cross_entropy_forward_backward(float* losses, T* logits, const int* targets, int N, int V,
                                    int ldv, float grad_scale, int num_valid,
                                    const float* loss_scale, cudaStream_t stream);

// loss (one device float) = scale · mean of losses over the rows whose target is not ignored
// (0 when none), or += that when accumulate (the mean over micro-batches with scale = 1/steps).
// One block, fixed summation order: deterministic.
void cross_entropy_mean(float* loss, const float* losses, const int* targets, int N, float scale,
                        bool accumulate, cudaStream_t stream);

}  // namespace xfbench::kernels
