// What a training step of a language model is: the model (HF BertForMaskedLM or GPT2LMHeadModel
// by name, or custom sizes), the run (batch, sequence, accumulation, precision, checkpointing,
// attention backend, optimizer), its FLOP count by the seeds' formula, and the synthetic data the
// seeds' dummy datasets stand for. Host only: no GPU needed (registration, tests, the reference).
//
//   masked (BERT)  embeddings word + position + type, LayerNorm, dropout; post-LN blocks; the MLM
//                  head dense + GELU(erf) + LayerNorm, decoder tied to the word embeddings with its
//                  own bias; the loss counts the masked 15% of positions only.
//   causal (GPT-2) embeddings token + position, dropout; pre-LN blocks; final LayerNorm; LM head
//                  tied to the token embeddings, no bias; each position predicts the next token.
//   causal (Llama) token embeddings only (rotary positions inside the blocks), no dropout; Llama
//                  blocks (llama_block); final RMSNorm; LM head tied (3.2-1b, 3.2-3b) or its own
//                  weight "lm_head" (3.1-8b).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/models/transformer_block.hpp"

namespace xfbench::kernels {

enum class LmKind { masked, causal };

struct LmModel {
  std::string name = "bert-large";
  LmKind kind = LmKind::masked;
  int layers = 24, hidden = 1024, heads = 16, intermediate = 4096;
  int vocab = 30522, positions = 512, token_types = 2;  // GPT-2: 50257, 1024, 0
  float eps = 1e-12f;                                   // every LayerNorm's (GPT-2: 1e-5)
  // Llama: grouped-query attention with rotary embeddings (positions: the longest sequence; no
  // position table), RMSNorm everywhere, a SwiGLU MLP, no dropout; the head tied or not.
  bool llama = false;
  int kv_heads = 0, head_dim = 0;
  RopeConfig rope;
  bool tied_head = true;
  bool learned_positions() const { return !llama; }

  // The vocabulary the LM head computes: rounded up to a multiple of 64 so the logits' rows and the
  // tied table's GEMMs are aligned (30522 and 50257 are not multiples of 8). The extra rows of the
  // word table are zero and their logits never count (cross_entropy.hpp).
  int padded_vocab() const { return (vocab + 63) / 64 * 64; }
  BlockConfig block() const;  // bert_block / gpt2_block / llama_block with these widths
};

// bert-base, bert-large, gpt2, gpt2-medium, gpt2-large, gpt2-xl, llama-3.2-1b, llama-3.2-3b,
// llama-3.1-8b; InvalidArgument otherwise.
LmModel lm_model(const std::string& name);
std::vector<std::string> lm_model_names();

enum class OptimizerKind { fused, unfused };  // one multi-tensor launch, or a chain per tensor
const char* to_string(OptimizerKind o);

struct AdamWSettings {
  float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
};

struct TrainConfig {
  LmModel model;
  int batch = 8, seq = 128;  // per micro-batch
  int accum = 1;             // micro-batches per optimizer step (gradient accumulation)
  // bf16, fp16 (dynamic loss scaling), tf32 and fp32 (fp32 weights, the unfused attention); fp8:
  // the blocks' linear layers in FP8 by `fp8`'s recipe (BlockConfig::precision), everything else
  // (embeddings, LM head, loss, optimizer inputs) bf16 — Llama models on one GPU so far.
  Precision precision = Precision::bf16;
  Fp8RecipeConfig fp8;
  AttentionBackend backend = AttentionBackend::fused;
  bool checkpointing = false;  // keep only layer inputs; recompute each layer before its backward
  OptimizerKind optimizer = OptimizerKind::fused;
  float dropout = 0.1f;  // every dropout site (HF's hidden / attention / embedding dropout)
  AdamWSettings adamw;
  float max_grad_norm = 1.f;           // clip by global norm (HF Trainer's default)
  float mlm_probability = 0.15f;       // masked LM: the share of positions the loss counts
  float initial_loss_scale = 65536.f;  // fp16: as torch.amp.GradScaler
  int loss_scale_window = 2000;        // fp16: steps without overflow before the scale doubles
  std::uint64_t seed = 42;             // parameters, data and dropout
  // Data parallel over `ranks` GPUs (kernels/models/parallel/parallel_trainer.hpp): the flat
  // buffers' parameter groups (embeddings, each layer, the head) start at multiples of ranks × 128
  // elements, so buckets of whole groups split into equal shards; with `shard_optimizer` (ZeRO-2)
  // the model keeps no AdamW state of its own: the trainer holds each rank's shard of it.
  int ranks = 1;
  bool shard_optimizer = false;
  // ZeRO-3 (with shard_optimizer): each rank also stores only its chunk of every layer's weights
  // and gradients (language_model.hpp's ShardedRegion); a layer's weights are all-gathered into
  // one of two windows before its forward and its backward, and its gradients, written to one of
  // two windows, reduce-scattered into the chunk after its backward, by the trainer's collectives
  // (LanguageModel::set_layer_collectives) after each micro-batch's backward, added up over the
  // micro-batches. `rank` is this model's data-parallel rank. Embeddings and the head stay whole
  // (ZeRO-2). No tensor parallelism.
  bool shard_weights = false;
  int rank = 0;
  // Tensor parallel (Megatron-LM, parallel_trainer.hpp's tp): this model is rank tp_rank of
  // tp_size, its blocks split (BlockConfig::tp_*: heads and FFN columns), tp_reduce their
  // all-reduce, which also adds the gradient norm's partial sums. The embeddings and the LM head
  // are whole on every rank, each computing the same ones: simple, and cheap beside the blocks at
  // tp:2 (a vocabulary-parallel head would save memory and time at larger sizes). Not combined
  // with data parallelism (ranks > 1).
  int tp_rank = 0, tp_size = 1;
  TpReduce tp_reduce;
  // The LM head's logits (and their gradient, in place) are made for at most this many bytes of
  // rows at a time: a causal head over every token of a long batch at vocab 128,256 would hold
  // gigabytes (head_chunk_rows). A choice of how, not of what: the loss and gradients are the same.
  std::size_t max_logits_bytes = std::size_t(1) << 30;

  int tokens() const { return batch * seq; }
  // Masked LM: positions of a sequence whose label counts (round(p·seq), at least 1).
  int masked_per_sequence() const;
  // Rows of the LM head per micro-batch: the masked tokens (BERT) or every token (GPT-2).
  int head_rows() const;
  // Rows whose target counts per micro-batch: masked tokens, or (seq - 1) per sequence.
  int loss_rows() const;
  // Rows of the LM head made at a time: all head_rows() where their logits fit max_logits_bytes
  // (and always for a masked LM), else the largest divisor of head_rows() that is a multiple of
  // 16 and fits, or the smallest such divisor where none fits (head_rows() where none divides).
  int head_chunk_rows() const;
  BlockConfig block() const;  // the model's block at this run's size, precision and backend
  std::string describe() const;
};

// Throws InvalidArgument for a configuration no GPU could run (sizes, seq above the model's
// positions, the block's own limits, heads or FFN width that do not split over tp_size) and
// Unsupported for one this build cannot (tf32/fp32 with the fused or flash attention, which take
// fp16/bf16 only; tensor and data parallelism together).
void check_train_config(const TrainConfig& c);

// The seeds' count per sample: 3·(L·(att + ffn) + 2·s·h·V), att = 8sh² + 4s²h, ffn = 4shI
// (16sh² for I = 4h), V the true vocabulary; 4× instead of 3× with checkpointing. Llama:
// att = 2sh(h + 2·kv·d) + 2sh² + 4s²h, ffn = 6shI (block_forward_flops).
double train_flops_per_sample(const TrainConfig& c);

// One micro-batch of synthetic data, fixed by `seed` (HF's dummy datasets: random token ids).
//   masked: masked_per_sequence() distinct random positions per sequence carry the label (the
//           original id); their input becomes [MASK] (80%), a random id (10%) or stays (10%), as
//           HF's DataCollatorForLanguageModeling; every other label is kIgnoreIndex. Types all 0.
//   causal: labels are the next token; the last position of a sequence has none.
struct TokenBatch {
  int batch = 0, seq = 0;
  std::vector<int> ids, type_ids, labels;  // [batch·seq]
  std::vector<int> head_rows;     // token indices the LM head computes (masked: the labelled ones)
  std::vector<int> head_targets;  // their labels (kIgnoreIndex where none)
};
TokenBatch synthetic_batch(const TrainConfig& c, std::uint64_t seed);
// The micro-batches of a step: synthetic_batch with seeds c.seed, c.seed + 1, ...; data-parallel
// rank r's from c.seed + r·accum on (rank 0's are the one-GPU step's).
std::vector<TokenBatch> step_data(const TrainConfig& c, int rank = 0);
// Micro-batches as one batch, concatenated along the batch (the same sequences, one step).
TokenBatch concatenate(const std::vector<TokenBatch>& parts);

// One causal micro-batch of a fixed synthetic language, for training that must learn a rule
// rather than memorise one batch (whose loss falls to ~0, where relative gaps say nothing): a
// first-order Markov chain over kLanguageWords ids spread over the vocabulary, each word followed
// by one of four successors with probabilities kLanguageOdds (the chain is the same for every
// seed; `seed` draws the sequences, each from a random word). The loss can fall from ln V to the
// chain's entropy, language_entropy() (1.11 nats), and no lower. Causal models only.
constexpr int kLanguageWords = 1024;
constexpr double kLanguageOdds[4] = {0.55, 0.25, 0.15, 0.05};
TokenBatch language_batch(const TrainConfig& c, std::uint64_t seed);
double language_entropy();  // nats per next token

constexpr int kMaskTokenId = 103;  // BERT's [MASK] (the vocabulary's last id when it is smaller)

}  // namespace xfbench::kernels
