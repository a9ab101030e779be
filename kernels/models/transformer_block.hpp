// A transformer block (one layer of BERT, GPT-2, T5 and the training step's models) forward and
// backward on the kernels of this folder. Two sublayers, attention and FFN, each with a residual
// connection and a LayerNorm, placed after the residual add (post, BERT) or before the sublayer
// (pre, GPT-2, T5); T5's decoder has a cross-attention sublayer between them:
//
//   post (HF BertLayer)                          pre (HF GPT2Block)
//   h1  = LN1(x + drop(attn(x)))                 h1  = x + drop(attn(LN1(x)))
//   out = LN2(h1 + drop(ffn(h1)))                out = h1 + drop(ffn(LN2(h1)))
//
//   T5Block (RMSNorm N, no biases; the decoder's cross-attention sublayer in brackets)
//   h1  = x + drop(attn(N1(x)))        [h2 = h1 + drop(cross(N_cross(h1), enc))]
//   out = h + drop(ffn(N2(h)))         h: h2 in the decoder, else h1
//
//   LlamaDecoderLayer: T5's form with scaled causal scores, no dropout, grouped-query attention
//   (kv_heads key/value heads), rotary position embeddings on q and k (rope.hpp) and a SwiGLU FFN
//
//   attn(a) = (attention(a·Wqkvᵀ + bqkv))·Woᵀ + bo   unfused (eager), cuDNN SDPA or xfbench's
//                                                     flash attention; causal for GPT-2 and T5's
//                                                     decoder; T5: scores unscaled, plus the
//                                                     relative position bias built from its table
//   cross(a, enc)                                     queries a·Wq_crossᵀ, keys and values
//                                                     enc·Wkv_crossᵀ, no mask, no position bias
//   ffn(a)  = act(a·Wiᵀ + bi)·Woutᵀ + bout            GELU erf (BERT) or tanh (GPT-2); T5: ReLU or
//                                                     the gated GELU, dropout after it; Llama:
//                                                     silu(a·W_gateᵀ) · (a·W_upᵀ), one GEMM on
//                                                     wi = [W_gate; W_up]
//
// Kernels: cuBLASLt GEMMs; bias + dropout + residual + LayerNorm fused forward and backward (pre:
// the attention's residual add and LN2 are one kernel); GELU with the bias fused in; Philox
// dropout whose masks the backward regenerates. T = batch·seq tokens, rows b-major (HF's
// [B, S, H]). Weights are stored as nn.Linear's [out, in] (GPT-2's Conv1D stores [in, out]; the
// FLOPs are the same). The backward computes the input gradient and every parameter gradient,
// with the weight-gradient GEMMs on a side stream overlapping the data-gradient chain.
//
// A BlockPart selects a piece of a block, as the seeds time BERT's. Post-LN (BERT): dense
// (h1·Wiᵀ + bi), dense_gelu, ffn (BertIntermediate + BertOutput), attention (BertAttention), each
// with its residual and LayerNorm. Pre-norm (Llama), forward only, HF's modules without the
// residual: attention (LlamaAttention: the QKV projection, rotary embeddings, attention, o_proj),
// ffn (LlamaMLP), norm_qkv (input_layernorm and the QKV projection: output "qkv").
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/fp8.hpp"
#include "kernels/gelu.hpp"
#include "kernels/gemm.hpp"
#include "kernels/philox.hpp"  // XF_HOST_DEVICE
#include "kernels/rope.hpp"

namespace xfbench::kernels {

enum class AttentionBackend { unfused, fused, flash };
enum class BlockPart { layer, dense, dense_gelu, ffn, attention, norm_qkv };
enum class NormPlacement { post, pre };  // BERT: post; GPT-2, T5: pre
enum class NormKind { layernorm, rmsnorm };
enum class Activation { gelu_erf, gelu_tanh, relu, silu };  // silu: a gated FFN's gate
enum class FfnProducts { search, unfused, fused };
const char* to_string(AttentionBackend b);
const char* to_string(BlockPart p);
const char* to_string(NormPlacement p);

// Tensor parallelism's reduction (Megatron's all-reduce over the tensor-parallel group): sums
// `elements` values of `type` at `data` over the group's ranks, in place on every rank, enqueued on
// `stream` (no host synchronisation). Every rank calls it at the same points in the same order, so
// each rank's block runs on a host thread of its own (or an in-process stand-in in tests).
using TpReduce =
    std::function<void(void* data, std::size_t elements, ElemType type, cudaStream_t stream)>;

struct BlockConfig {
  // The model (defaults: HF BertLayer of bert-large, as bert_block()); `name` starts messages.
  std::string name = "BertLayer";
  int hidden = 1024, heads = 16, intermediate = 4096;
  NormPlacement placement = NormPlacement::post;
  NormKind norm = NormKind::layernorm;
  float eps = 1e-12f;
  Activation activation = Activation::gelu_erf;
  bool causal = false;  // query i sees keys j <= i (GPT-2, T5 decoder self-attention)
  // Dropout sites (training mode; a timed step keeps them on): the attention probabilities, and
  // each sublayer's output before its residual add (BERT hidden_dropout, GPT-2 resid_pdrop).
  float attention_dropout = 0.1f;
  float residual_dropout = 0.1f;
  // The Philox seed of this block's masks: each layer of a model takes its own.
  std::uint64_t dropout_seed = 0x5eed;
  // T5 (t5_block): RMSNorm without bias (norm; pre-norm blocks without linear biases only),
  // linears without biases, scores without the 1/sqrt(head dim) scale, a ReLU or gated-GELU FFN
  // with dropout after its activation (p = residual_dropout), the relative position bias added to
  // the self-attention scores, and the decoder's cross-attention sublayer on the encoder states.
  bool linear_bias = true;
  bool scale_scores = true;
  bool gated_ffn = false;  // act = gelu(a·wi_0ᵀ) · (a·wi_1ᵀ): "wi" is [wi_0; wi_1], [2I, hidden]
  bool ffn_dropout = false;
  bool relative_bias = false;  // learned table "rel_bias" [32 buckets, heads], max distance 128
  bool cross_attention = false;
  int head_size = 0;  // 0: hidden / heads; T5's d_kv (t5-3b: 32 heads of 128 over hidden 1024)
  // Llama (llama_block): grouped-query attention with kv_heads key/value heads (0: heads), each
  // shared by heads / kv_heads query heads; "wqkv" is [Wq; Wk; Wv], (heads + 2·kv_heads)·head_dim
  // rows. Rotary position embeddings on q and k after the projection (rope.hpp) when `rotary`.
  int kv_heads = 0;
  bool rotary = false;
  RopeConfig rope;

  // Tensor parallelism (Megatron-LM): this block is rank tp_rank of tp_size. It holds heads /
  // tp_size heads (column-parallel QKV; T5's relative bias table and cross-attention split by heads
  // too) and intermediate / tp_size FFN columns (column-parallel wi: a gated FFN's two halves
  // each), row-parallel output projections wo, wout (wo_cross), whole norms and row-parallel
  // biases. tp_reduce sums the row-parallel products in the forward (before their bias, added once
  // after it) and the column-parallel input gradients in the backward; whatever every rank holds
  // whole is then computed identically on each (gradients of norms and row-parallel biases too).
  // The sizes above stay the whole model's. Only the whole layer (BlockPart::layer).
  int tp_rank = 0, tp_size = 1;
  TpReduce tp_reduce;

  // The run.
  int batch = 1, seq = 128;
  // fp16 or bf16; tf32 and fp32 (fp32 storage, TF32 or FP32 products) on the unfused backend;
  // fp8: every linear layer's products in FP8 (fp8_linear.hpp: E4M3 forward, E5M2 gradients,
  // per-tensor scales by `fp8`'s recipe), everything else (storage, norms, attention) bf16.
  // fp8 takes pre-norm blocks without linear biases (Llama's) and no tensor parallelism so far.
  Precision precision = Precision::fp16;
  Fp8RecipeConfig fp8;
  AttentionBackend backend = AttentionBackend::fused;
  // false: forward only, as under torch.no_grad (dropout still on): no gradient buffers, and none
  // of what a backward would read is saved.
  bool backward = true;
  // The FFN's up projection with its activation, and their backward (ffn_products_fusable:
  // bf16/fp16 GELU or gated FFNs without dropout inside, on Hopper): unfused (the cuBLASLt
  // product, then our activation kernel), fused (gemm_fused.hpp: the GELU, or the gate's
  // activation times the up projection, in a CUTLASS product's epilogue, forward and backward), or
  // search: unfused until tune() times both on the block's tensors and keeps the faster, for
  // every block of that shape on the device. The same function either way (within rounding).
  // fused where they cannot run (ffn_products_fusable) throws Unsupported naming why.
  FfnProducts ffn_products = FfnProducts::search;

  int tokens() const { return batch * seq; }
  int head_dim() const { return head_size ? head_size : hidden / heads; }
  int attention_width() const { return heads * head_dim(); }  // hidden, or T5's inner_dim
  int kv_head_count() const { return kv_heads ? kv_heads : heads; }
  int qkv_width() const { return (heads + 2 * kv_head_count()) * head_dim(); }  // 3A without GQA
  void set_dropout(float p) { attention_dropout = residual_dropout = p; }
  std::string describe() const;
  // What one tensor-parallel rank computes: heads / tp_size heads of head_dim(), intermediate /
  // tp_size; the block itself when tp_size is 1.
  BlockConfig shard() const;
};

// How tensor-parallel rank r's parameter is cut from the whole one (tp_split). By rows: the whole
// tensor is `parts` blocks of rows one after another (Q, K, V; a gated wi's two halves), part p
// part_rows[p] rows of `cols`, and the rank holds rows [r·n/tp, (r+1)·n/tp) of each part, n its
// rows (grouped-query attention's K and V have fewer rows than Q). With split_cols: one part, the
// rank holds columns [r·cols/tp, (r+1)·cols/tp) of every row. Not split: the norms and the
// row-parallel biases bo, bout.
struct TpSplit {
  static constexpr int kMaxParts = 3;
  bool split = false;
  int parts = 1;
  std::int64_t part_rows[kMaxParts] = {0, 0, 0};
  std::int64_t cols = 0;
  bool split_cols = false;
  std::size_t elements() const {  // the whole tensor's
    std::int64_t rows = 0;
    for (int p = 0; p < parts; ++p) rows += part_rows[p];
    return std::size_t(rows * cols);
  }
  // The whole tensor's index of element i of rank `rank`'s shard (i itself when not split).
  XF_HOST_DEVICE std::size_t whole_index(std::size_t i, int rank, int tp) const {
    if (!split) return i;
    const std::int64_t e = std::int64_t(i);
    if (split_cols) {
      const std::int64_t k = cols / tp;
      return std::size_t(e / k * cols + rank * k + e % k);
    }
    std::int64_t mine = 0, whole = 0;  // where part p starts in the shard and in the whole
    for (int p = 0; p < parts; ++p) {
      const std::int64_t r = part_rows[p] / tp;
      if (e < mine + r * cols || p == parts - 1)
        return std::size_t(whole + (rank * r) * cols + (e - mine));
      mine += r * cols, whole += part_rows[p] * cols;
    }
    return i;
  }
};
// Of parameter `name` ("wqkv", ... as TransformerBlock::parameters) of the whole block `c`: wqkv,
// bqkv (Q, K, V each by heads: K and V by key/value heads), wq_cross, wkv_cross (K, V), wi, bi (a
// gated wi's halves each) by rows; wo, wo_cross, wout and rel_bias [buckets, heads] by columns.
TpSplit tp_split(const BlockConfig& c, const std::string& name);

// HF BertLayer: post-LN, erf GELU, LayerNorm eps 1e-12 (bert-large: 1024, 16, 4096).
BlockConfig bert_block(int hidden, int heads, int intermediate);
// HF GPT2Block: pre-LN, causal self-attention, tanh GELU ("gelu_new"), eps 1e-5
// (gpt2-medium: 1024, 16, 4096).
BlockConfig gpt2_block(int hidden, int heads, int inner);
// HF T5Block as the first block of a stack (has_relative_attention_bias): pre-RMSNorm (eps 1e-6)
// without biases anywhere, unscaled scores, the relative position bias (bidirectional buckets in
// the encoder; causal self-attention and buckets in the decoder, which adds cross-attention),
// ReLU FFN or T5 v1.1's gated GELU (tanh form), dropout 0.1 everywhere HF has it (t5-large:
// 1024, 16, 64, 4096).
BlockConfig t5_block(int d_model, int heads, int d_kv, int d_ff, bool decoder, bool gated);
// HF LlamaDecoderLayer: pre-RMSNorm (eps 1e-5), no biases, no dropout, causal grouped-query
// attention with rotary embeddings, SwiGLU MLP (llama-3.1-8b: 4096, 32, 8, 128, 14336, theta
// 500000 and Llama-3.1's scaling).
BlockConfig llama_block(int hidden, int heads, int kv_heads, int head_dim, int intermediate,
                        const RopeConfig& rope);

// Throws InvalidArgument when the configuration cannot be built (hidden not divisible by heads,
// widths the kernels cannot take, T5 features outside a T5 block, heads or intermediate / 8 not
// divisible by tp_size, a tensor-parallel part) and Unsupported when the backend cannot run it
// here.
void check_block_config(const BlockConfig& c, BlockPart part = BlockPart::layer);
// Whether this part's FFN can run its activation in its products here (BlockConfig::ffn_products),
// and if not, why.
bool ffn_products_fusable(const BlockConfig& c, BlockPart part, std::string* why = nullptr);

// The seeds' FLOP counts: layer forward 24·b·s·h² + 4·b·s²·h (8bsh² + 4bshI + 4bs²h for any I),
// the full s² attention even when causal; dense and dense_gelu 2·T·h·I; ffn 4·T·h·I (6·T·h·I
// gated); attention 8bsh² + 4bs²h (8bshA + 4bs²A for an attention width A != h; with kv key/value
// heads of d: 2bsh(A + 2·kv·d) + 2bshA + 4bs²A), counted twice with cross-attention (T5's
// decoder). Backward is twice forward. causal_half: the s² terms of a causal attention halved (the
// part of the score matrix the mask leaves; TFLOPS_causal).
double block_forward_flops(const BlockConfig& c, BlockPart part = BlockPart::layer,
                           bool causal_half = false);

// What a block tensor is to a caller placing it (TensorPlacement).
enum class TensorRole {
  input,        // "x"; in a model, the previous layer's "out"
  output,       // "out"
  input_grad,   // "dx"
  output_grad,  // "dout"; in a model, the next layer's "dx"
  parameter,    // weights, biases, norm weights
  gradient,     // "d<parameter>" (written, not accumulated, by each backward)
  saved,        // written by the forward and read by the backward (checkpointing recomputes them)
  scratch,      // temporaries of one forward or one backward: layers run one after another may
                // share them (each backward joins its side stream before it returns)
};
const char* to_string(TensorRole r);

// Where a block's tensor lives: device memory of at least `bytes`, 16-byte aligned, valid while
// the block lives and not freed by it; nullptr lets the block allocate (and free) it. A training
// step puts parameters and gradients in flat buffers, chains layers and shares scratch this way.
using TensorPlacement =
    std::function<void*(const std::string& name, TensorRole role, std::size_t bytes)>;

// Parameters, activations and gradients on the device, owned by the block unless placed. Every
// tensor is `T`-typed (fp16/bf16; fp32 for tf32 and fp32; bf16 for fp8) except LayerNorm
// statistics (fp32); fp8's scaled copies belong to its linear layers.
class TransformerBlock {
 public:
  // Throws as check_block_config, and Unsupported when the device lacks memory or the flash
  // backend has no backward here. A tensor-parallel block's tensors are its rank's shards
  // (forward and backward throw InvalidArgument without tp_reduce).
  explicit TransformerBlock(const BlockConfig& config, BlockPart part = BlockPart::layer,
                            const TensorPlacement& place = {});
  ~TransformerBlock();
  TransformerBlock(const TransformerBlock&) = delete;
  TransformerBlock& operator=(const TransformerBlock&) = delete;

  const BlockConfig& config() const;  // as given (a tensor-parallel block: the whole model's sizes)
  BlockPart part() const;

  // Parameter names of this part ("wqkv", "bqkv", ...); fill them and "x" before the forward.
  std::vector<std::string> parameters() const;

  // One training step's dropout masks come from (seed, step); the backward reuses the forward's.
  void forward(cudaStream_t stream, std::uint64_t step = 0);
  // Searches the algorithms of every GEMM plan not searched yet, on this block's tensors (runs a
  // forward and backward; synchronises). Call after filling the tensors, outside timed regions.
  void tune(cudaStream_t stream);

  // Needs the forward of the same step; reads "dout". Only the layer, ffn and attention parts.
  void backward(cudaStream_t stream, std::uint64_t step = 0);

  // fp8: the recipe's fresh start (scales 1, amax histories empty, overflow 0), as a new block
  // has; for a model trained again from its initialisation. Nothing for other precisions.
  void reset_fp8(cudaStream_t stream);

  // Named device tensors (for validation and tests): "x", "out", "dout", "dx", and parameters
  // "wqkv","bqkv","wo","bo","ln1_w","ln1_b","wi","bi","wout","bout","ln2_w","ln2_b" (ln1 is the
  // attention sublayer's norm, ln2 the FFN's, in either placement), with gradients as "d<name>".
  // T5 has no biases; its relative bias table is "rel_bias"; its decoder reads the encoder states
  // "enc" (gradient "denc") through "wq_cross","wkv_cross","wo_cross" after "ln_cross_w".
  // Returns nullptr for a tensor the part does not have.
  void* tensor(const std::string& name) const;
  std::size_t elements(const std::string& name) const;
  TensorRole role(const std::string& name) const;  // throws InvalidArgument for an unknown name
  std::vector<std::string> tensor_names() const;
  // How the FFN's products run, for labels: "" where they cannot be fused, else what tune() chose
  // ("ffn gelu fused: fused 3.1% faster than unfused"; a gated FFN's forward and backward apart:
  // "ffn swiglu fwd unfused, bwd fused: fwd: fused 2.0% slower than unfused; bwd: ...") or the
  // configuration fixed.
  std::string ffn_products() const;
  // Device bytes of this block's tensors, placed or not, and of those it allocated itself.
  std::size_t device_bytes() const;
  std::size_t owned_bytes() const;

  struct Impl;  // implementation detail (transformer_block.cu)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace xfbench::kernels
