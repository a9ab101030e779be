// Rotary position embeddings (RoPE) as HF Llama applies them (apply_rotary_pos_emb with
// rotate_half): for query and key heads x of head dim D at position p, with f_i the inverse
// frequencies (i < D/2) and angle a = p·f_i,
//   out[i]       = x[i]·cos(a) − x[i + D/2]·sin(a)
//   out[i + D/2] = x[i + D/2]·cos(a) + x[i]·sin(a)
// f_i = theta^(−2i/D), rescaled by Llama-3's frequency scaling (rope_scaling "llama3": long
// wavelengths divided by `factor`, a smooth blend between low_freq_factor and high_freq_factor)
// when factor > 0. The table of cos/sin is built once in float64 and stored in fp32; the rotation
// runs in fp32 and rounds once to the storage type.
//
// The kernels rotate in place inside the packed QKV projection output of a transformer block:
// rows of `tokens` = B·S tokens, b-major (position = row % S), each row [NH q heads | NKV k heads |
// NKV v heads] of D each ((NH + 2·NKV)·D wide); q and k heads are rotated, v is untouched. The
// backward applies the inverse rotation (the transpose) to the gradient of the rotated q and k.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "kernels/fp8.hpp"

namespace xfbench::kernels {

struct RopeConfig {
  double theta = 10000.0;  // rope_theta (Llama 3: 500000)
  // Llama-3's scaling; factor 0: none (Llama 3.1: 8, Llama 3.2: 32; both 1, 4, 8192).
  double factor = 0.0, low_freq_factor = 1.0, high_freq_factor = 4.0;
  int original_max_position = 8192;
};

// The D/2 inverse frequencies f_i in float64 (HF's _compute_default_rope_parameters, and
// _compute_llama3_parameters when factor > 0). Throws InvalidArgument for an odd or non-positive
// head dim or a bad config.
std::vector<double> rope_inv_freq(const RopeConfig& config, int head_dim);

// The cos/sin table of positions [0, max_seq) on the current device, and the kernels using it.
class RotaryEmbedding {
 public:
  // head_dim even and a multiple of 8 (16-byte rows); max_seq >= 1. Throws InvalidArgument.
  RotaryEmbedding(const RopeConfig& config, int head_dim, int max_seq);
  ~RotaryEmbedding();
  RotaryEmbedding(const RotaryEmbedding&) = delete;
  RotaryEmbedding& operator=(const RotaryEmbedding&) = delete;

  int head_dim() const { return head_dim_; }
  int max_seq() const { return max_seq_; }

  // Rotates the q and k heads of packed qkv [tokens, (NH + 2·NKV)·D] in place; seq <= max_seq(),
  // tokens % seq == 0. T = __half, __nv_bfloat16 or float.
  template <class T>
  void forward(T* qkv, int tokens, int seq, int NH, int NKV, cudaStream_t stream) const;
  // The gradient: dqkv's q and k parts (gradients of the rotated heads) become the gradients of
  // the heads before rotation, in place; v's part is untouched.
  template <class T>
  void backward(T* dqkv, int tokens, int seq, int NH, int NKV, cudaStream_t stream) const;
  // The same gradient written in FP8 instead, by the pass that reads dqkv (left as it is): out.q
  // [tokens, (NH + 2·NKV)·D] with the amax, and out.qt its transpose where set (tokens % 16 == 0):
  // the QKV projection's dy, as Fp8Linear::grad_input gives it (fp8.hpp). T = __nv_bfloat16;
  // D/2 a multiple of 8.
  template <class T>
  void backward_fp8(const T* dqkv, int tokens, int seq, int NH, int NKV, const Fp8Output& out,
                    cudaStream_t stream) const;

 private:
  int head_dim_, max_seq_;
  float2* table_ = nullptr;  // [max_seq, D/2] of (cos, sin)
};

}  // namespace xfbench::kernels
