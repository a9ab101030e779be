// Multi-head scaled dot-product attention, forward and backward, in backends sharing one
// description:
//   UnfusedAttention  HF "eager": scores = Q·Kᵀ (strided-batched cuBLASLt, kernels/gemm.hpp), the
//                     masked softmax + dropout of softmax.hpp, O = P·V. Saves P ([B, NH, Sq, Sk]).
//   CudnnAttention    fused flash attention: cuDNN's SDPA forward/backward through cudnn-frontend's
//                     graph API (cudnn_attention.cpp); saves only the softmax statistics.
//   FlashAttention    xfbench's own fused kernels (flash_attention*.cu); saves the statistics.
//
//   O[b,h] = dropout(softmax(scale · Q[b,h]·K[b,h]ᵀ + masks)) · V[b,h]
//
// Q, K, V, O are per-head views [B, NH, S, HD] of the caller's tensors, described by element
// strides (the head dimension is contiguous), so both backends read the packed QKV projection
// output directly — no transposes:
//   QkvLayout::bshd  HF order: tokens b-major, a token's row is [q heads | k heads | v heads]
//                    ([B, S, 3, NH, HD]); O is [B, S, NH, HD].
//   QkvLayout::sbhd  Megatron order: tokens s-major, q/k/v interleaved per head
//                    ([S, B, NH, 3, HD]); O is [S, B, NH, HD]. Here every (b, h) matrix is one
//                    stride apart, so each unfused product is a single strided-batched GEMM; with
//                    bshd it is one batched GEMM per head (batch = B).
// Gradients dQ, dK, dV use the strides of Q, K, V (a packed dQKV), dO the strides of O.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/gemm.hpp"
#include "kernels/philox.hpp"

namespace xfbench::kernels {

struct HeadStrides {
  std::int64_t b = 0, h = 0, s = 0;  // elements between batch items, heads, sequence positions
};

struct AttentionDesc {
  // fp16 or bf16 storage, fp32 softmax/accumulation; the unfused backend also takes fp32 storage
  // with tf32 or fp32 products (the fused backends are fp16/bf16 only).
  Precision precision = Precision::fp16;
  int B = 0, NH = 0, Sq = 0, Sk = 0, HD = 0;
  // Grouped-query attention (Llama): NKV key/value heads, each shared by NH / NKV consecutive query
  // heads (query head h reads key/value head h / (NH / NKV), HF's repeat_kv); 0: NKV = NH. K, V
  // (and dK, dV) strides describe the NKV heads; dK, dV sum over each head's query group.
  int NKV = 0;
  HeadStrides q, k, v, o;
  float scale = 0.f;          // 0: 1 / sqrt(HD); T5 uses 1
  bool causal = false;        // GPT-2: query i sees keys j <= i (Sq == Sk)
  bool padding_mask = false;  // BERT: keys j >= kv_len[b] are hidden (HF's additive [B, 1, 1, Sk])
  bool bias = false;          // additive score bias [NH, Sq, Sk] shared by the batch (T5)
  bool bias_grad = false;     // the backward also gives dbias = Σ_b dscores[b] (a learned bias)
  float dropout = 0.f;        // dropout on the probabilities (training); 0: none

  float softmax_scale() const;
  int kv_heads() const { return NKV ? NKV : NH; }
  int group() const { return NH / kv_heads(); }  // query heads per key/value head
};

enum class QkvLayout { bshd, sbhd };
const char* to_string(QkvLayout l);

// Self-attention on a packed QKV tensor of the given layout (Sq = Sk = S). Pointers for Q, K, V are
// qkv + qkv_offset(layout, 0 | 1 | 2, NH, HD, NKV). With NKV key/value heads (grouped-query, bshd
// only) a token's row is [NH q heads | NKV k heads | NKV v heads] ((NH + 2·NKV)·HD wide).
AttentionDesc self_attention_desc(Precision precision, int B, int NH, int S, int HD,
                                  QkvLayout layout, int NKV = 0);
std::int64_t qkv_offset(QkvLayout layout, int which, int NH, int HD, int NKV = 0);

// Throws InvalidArgument when a description is malformed (any backend).
void check_attention_desc(const AttentionDesc& d);

// FLOPs of the two attention products, forward (4·B·NH·Sq·Sk·HD; the seeds' 4bs²h); the backward
// is twice that.
double attention_core_flops(const AttentionDesc& d);

class UnfusedAttention {
 public:
  // Builds the GEMM plans (outside timed regions). Throws InvalidArgument on a bad description.
  // Without `training` (forward only, as under torch.no_grad) no backward can follow: with
  // dropout the forward then leaves `probs` holding the raw scores and writes only dropout(P).
  explicit UnfusedAttention(const AttentionDesc& desc, bool training = true);
  ~UnfusedAttention();
  UnfusedAttention(const UnfusedAttention&) = delete;
  UnfusedAttention& operator=(const UnfusedAttention&) = delete;

  const AttentionDesc& desc() const;
  // Elements of each of the two score-sized buffers, `probs` and `work` (B·NH·Sq·Sk).
  std::size_t probs_elements() const;

  // probs <- P (kept for the backward); work <- dropout(P) when dropout is on. mask: additive fp32
  // [B, Sk] (needed when desc.padding_mask); bias: [NH, Sq, Sk] (when desc.bias). dropout.p must
  // equal desc.dropout; seed/offset pick the mask.
  void forward(void* o, void* probs, void* work, const void* q, const void* k, const void* v,
               const float* mask, const void* bias, Dropout dropout, cudaStream_t stream) const;
  // Overwrites work. dq, dk, dv may all point into one packed dQKV (every element is written).
  void backward(void* dq, void* dk, void* dv, void* work, const void* dout, const void* probs,
                const void* q, const void* k, const void* v, Dropout dropout,
                cudaStream_t stream) const;
  // The same, and the bias gradient dbias [NH, Sq, Sk] (when desc.bias_grad): the score gradient
  // summed over the batch in a fixed order.
  void backward(void* dq, void* dk, void* dv, void* dbias, void* work, const void* dout,
                const void* probs, const void* q, const void* k, const void* v, Dropout dropout,
                cudaStream_t stream) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class CudnnAttention {
 public:
  // Builds (or takes from a process-wide cache) the cuDNN SDPA graphs for this description on the
  // current device: forward, and backward when `training`. Throws Unsupported when cuDNN cannot run
  // it here. Call outside timed regions.
  explicit CudnnAttention(const AttentionDesc& desc, bool training = true);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  const AttentionDesc& desc() const;
  std::size_t workspace_bytes() const;  // device scratch for forward and backward
  std::size_t stats_elements() const;   // fp32 softmax statistics saved for the backward: B·NH·Sq

  // kv_lens: int32 [B] device array (when desc.padding_mask); bias [NH, Sq, Sk] (when desc.bias);
  // stats may be null when not training. cuDNN draws its own dropout mask from (seed, offset);
  // the backward must get the same Dropout.
  void forward(void* o, float* stats, const void* q, const void* k, const void* v,
               const int* kv_lens, const void* bias, Dropout dropout, void* workspace,
               cudaStream_t stream) const;
  void backward(void* dq, void* dk, void* dv, const void* dout, const void* o, const float* stats,
                const void* q, const void* k, const void* v, const int* kv_lens, const void* bias,
                Dropout dropout, void* workspace, cudaStream_t stream) const;
  // The same, and dbias [NH, Sq, Sk] (needed when desc.bias_grad): cuDNN's reduction of the score
  // gradient over the batch.
  void backward(void* dq, void* dk, void* dv, void* dbias, const void* dout, const void* o,
                const float* stats, const void* q, const void* k, const void* v, const int* kv_lens,
                const void* bias, Dropout dropout, void* workspace, cudaStream_t stream) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// xfbench's own flash attention (flash_attention*.cu): one kernel computes O tile by tile with an
// online softmax and draws the dropout mask in registers from the same Philox stream as the
// unfused backend (philox.hpp), so both give the same O for the same Dropout. Takes HD = 64, Sq
// and Sk multiples of 64, the causal and padding masks and a score bias in the forward; HD = 128
// in the Hopper kernels, without a score bias. The backward needs the Hopper kernels and takes
// the causal mask and the bias, not the padding mask.
// With a causal mask key tiles wholly above the diagonal are skipped both ways.
//   FlashKernel::best  Hopper's warpgroup MMAs (wgmma) on an sm_90 GPU when the build has them
//                      (CUDA architecture 90 is compiled as 90a for the *_sm90.cu files), else
//                      mma.sync
//   FlashKernel::mma   mma.sync on any sm_80+ GPU (tests compare the two)
//   FlashKernel::lockstep  as best, but the head-dim-128 forward without its overlap of a key
//                      tile's softmax with the next tile's products and its warpgroups'
//                      ping-pong (the oracle of the fast one's bit-for-bit test)
enum class FlashKernel { best, mma, lockstep };

// What a training forward saves for FlashAttention::backward (device buffers the caller owns).
struct FlashSaved {
  float* lse = nullptr;  // stats_elements() floats: log2-domain softmax row statistics
  void* keep = nullptr;  // keep_bytes(): the dropout mask's bits (null: the backward redraws them)
};

class FlashAttention {
 public:
  // Throws InvalidArgument on a bad description, Unsupported on one the kernel does not take.
  explicit FlashAttention(const AttentionDesc& desc, FlashKernel kernel = FlashKernel::best);
  const AttentionDesc& desc() const { return desc_; }
  bool uses_wgmma() const { return wgmma_; }
  // Whether backward() can run here (Hopper kernels, no padding mask).
  bool has_backward() const;
  std::size_t stats_elements() const;  // fp32 row statistics for the backward: B·NH·Sq
  std::size_t keep_bytes() const;      // dropout keep bits: B·NH·Sq·Sk/8 (0 without dropout)
  // fp32 scratch of the backward (`delta`): stats_elements(), and with desc.bias the per-block
  // sums of the bias gradient.
  std::size_t scratch_elements() const;
  // The bias gradient the backward returns (desc.bias; else 0): fp32 [NH, Sq + Sk - 1], the
  // gradient of the scores after the bias (dbias per batch item) summed over the batch and along
  // each diagonal: [h, d + Sq - 1] = Σ_b Σ_{j - i = d} dS[b, h, i, j], d = -(Sq - 1) ... Sk - 1.
  // All a bias built from j - i (T5's buckets) needs; fixed-order sums, bitwise reproducible.
  std::size_t bias_grad_elements() const;

  // Q, K, V, O need 16-byte aligned rows. saved: what a backward will read (empty when none
  // follows). kv_lens: int32 [B] device array, each >= 1 (when desc.padding_mask). bias:
  // [NH, Sq, Sk], 16-byte aligned, added to the scaled scores (exactly when desc.bias). dropout.p
  // must equal desc.dropout.
  void forward(void* o, const FlashSaved& saved, const void* q, const void* k, const void* v,
               const int* kv_lens, const void* bias, Dropout dropout, cudaStream_t stream) const;
  void forward(void* o, const FlashSaved& saved, const void* q, const void* k, const void* v,
               const int* kv_lens, Dropout dropout, cudaStream_t stream) const;  // no bias
  // Gradients for the forward that wrote o and `saved` (saved.lse required) with the same
  // Dropout and bias. dbias: bias_grad_elements() floats, or null (no bias gradient). delta:
  // scratch of scratch_elements() floats. dq, dk, dv may point into one packed dQKV. Throws
  // Unsupported when !has_backward().
  void backward(void* dq, void* dk, void* dv, float* dbias, float* delta, const void* dout,
                const void* o, const FlashSaved& saved, const void* q, const void* k, const void* v,
                const void* bias, Dropout dropout, cudaStream_t stream) const;
  void backward(void* dq, void* dk, void* dv, float* delta, const void* dout, const void* o,
                const FlashSaved& saved, const void* q, const void* k, const void* v,
                Dropout dropout, cudaStream_t stream) const;  // no bias

 private:
  AttentionDesc desc_;
  bool overlap_ = true;  // the head-dim-128 wgmma forward overlaps softmax and products (ping-pong)
  bool wgmma_ = false;
};

}  // namespace xfbench::kernels
