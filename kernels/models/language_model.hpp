// A language model's training step on the GPU (language_model_config.hpp says what the models
// are). One step, enqueued on one stream without host synchronisation:
//
//   for each of `accum` micro-batches:
//     embeddings (+ LayerNorm for BERT), dropout           embedding.hpp, layernorm.hpp
//     L transformer blocks forward                          transformer_block.hpp
//     LM head: BERT the masked rows only (dense, GELU, LayerNorm, tied decoder + bias); GPT-2
//     every row (final LayerNorm, tied head); the fused softmax cross-entropy writes dlogits
//     over the logits in place                              cross_entropy.hpp
//     head backward, L blocks backward (with checkpointing each recomputes its forward first),
//     embeddings backward (adding into the tied word table's gradient)
//     gradients accumulated over micro-batches              grad_norm.hpp
//   global norm, clip coefficient, fp16 loss scale, skip on overflow     grad_norm.hpp
//   AdamW on fp32 master weights (tf32/fp32: the weights), fused or unfused   adamw.hpp
//
// Memory is planned before anything is allocated: parameters and gradients live in two flat
// buffers (one segment per tensor, so the optimizer and the norm each run over one buffer), the
// blocks' activations are placed (TensorPlacement): layer i's input is layer i-1's output, the
// backward's gradients ping-pong between two buffers, scratch is shared by the layers, and with
// checkpointing the saved activations too.
//
// Tensor parallel (TrainConfig::tp_size > 1): the model is one rank's, its blocks that rank's
// shards (transformer_block.hpp), the split parameters first in the flat buffers so the global
// norm adds their squares over the ranks (tp_reduce) and the rest, whole on every rank, once.
//
// Sharded weights (ZeRO-3, TrainConfig::shard_weights): the flat buffers store the layers' part
// as this rank's chunks only (ShardedRegion); the blocks' weights and gradients live in two
// windows each, layer l in window l % 2: its weights are gathered before its forward (the next
// layer's while it computes) and again before its backward, its gradients reduce-scattered into
// its chunk after its backward while the layer below computes (LayerCollectives).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/adamw.hpp"
#include "kernels/grad_norm.hpp"
#include "kernels/models/language_model_config.hpp"

namespace xfbench::kernels {

// ZeRO-3's storage of the flat buffers (TrainConfig::shard_weights): the layers' part [begin, end)
// is equal groups of `group` elements (one a layer), of which this rank stores only its chunk
// [rank·chunk, (rank+1)·chunk) of each; the buffers hold the elements before `begin`, then the
// chunks in layer order, then the elements from `end` on. Empty (begin == end): all are stored.
struct ShardedRegion {
  std::size_t begin = 0, end = 0, group = 0;
  int rank = 0, ranks = 1;
  std::size_t chunk() const { return group / std::size_t(ranks); }
  bool holds(std::size_t element) const;  // stored by this rank
  // Where flat element `element` is stored; InvalidArgument where this rank does not store it.
  std::size_t stored(std::size_t element) const;
  std::size_t stored_elements(std::size_t elements) const;  // of flat buffers of `elements`
};

// Device memory of a step by part, known before anything is allocated.
struct MemoryPlan {
  struct Part {
    std::string what;
    std::size_t bytes;
  };
  std::vector<Part> parts;
  std::size_t total() const;
  std::string describe() const;  // "parameters 0.67 GB, gradients 0.67 GB, ..."
};

// HF's initial weight spread (normal(0, 0.02)). At it the logits of a normalised final hidden
// state (rms 1) have variance hidden·0.02², so the first loss is about ln V + hidden·0.02²/2.
constexpr float kInitStd = 0.02f;

class LanguageModel {
 public:
  // Checks the configuration (as check_train_config), plans memory and compares it with the
  // device's free memory: a step that cannot fit throws Unsupported("out of memory: needs ~X GB,
  // Y GB free; try ..."), before any allocation. Then allocates and builds (GEMM plans, cuDNN
  // graphs). Parameters are uninitialised until init_parameters, data unset until set_data.
  explicit LanguageModel(const TrainConfig& config);
  ~LanguageModel();
  LanguageModel(const LanguageModel&) = delete;
  LanguageModel& operator=(const LanguageModel&) = delete;

  // The plan alone (builds one probe block, allocates only what GEMM plans and cuDNN cache).
  static MemoryPlan plan_memory(const TrainConfig& config);

  const TrainConfig& config() const;
  const MemoryPlan& memory_plan() const;
  // AdamW's learning rate from the next step on (a schedule, e.g. a warm-up, set step by step).
  void set_learning_rate(float lr);

  // HF's initialisation: weights and embeddings uniform with the spread of normal(0, 0.02), biases
  // 0, LayerNorm weight 1 and bias 0 (with `random_all` biases and LayerNorm parameters are random
  // too, so no gradient term is hidden by a zero); then the optimizer's state is reset (master =
  // weights, moments 0, step 0, loss scale initial; fp8: the scaling recipe starts afresh).
  // Synchronises.
  void init_parameters(std::uint64_t seed, bool random_all = false);

  // The `accum` micro-batches the next steps train on (synthetic_batch, language_batch), uploaded
  // until set again. Synchronises.
  void set_data(const std::vector<TokenBatch>& micro_batches);

  // Searches the cuBLASLt algorithms of every GEMM shape (one block and the LM head) on the
  // model's tensors, outside timed regions. Overwrites activations and gradients. Synchronises.
  void tune();
  // How the layers' FFN products run, for labels (TransformerBlock::ffn_products: what tune()
  // chose for the layers' shape; "" where they cannot be fused).
  std::string ffn_products() const;

  // One optimizer step (enqueued on `stream`, no host synchronisation).
  void step(cudaStream_t stream);
  // Where a step's time goes: mark(part, stream) is called as each part of the step is enqueued,
  // right after it, in order: "embeddings", "blocks forward", "head and loss", "blocks backward",
  // "embeddings backward" (and "gradient accumulation" with accum > 1) each micro-batch, then
  // "optimizer" (gradient norm, clipping, AdamW).
  // A profile records a CUDA event there; never while a step is timed. Empty: no marks (default).
  using PartDone = std::function<void(const char* part, cudaStream_t)>;
  void set_part_marks(PartDone mark);
  // The gradients of one step without the optimizer: forward, loss and backward of every
  // micro-batch, accumulated (tests).
  void compute_gradients(cudaStream_t stream);

  // The last step's mean loss (over its micro-batches) and the optimizer's scalars (synchronise).
  float loss(cudaStream_t stream) const;
  TrainScalars scalars(cudaStream_t stream) const;

  // Parameter names (language_model_ref.hpp's), their element counts and values widened to
  // float64: the weights, the gradients of the last compute_gradients / step (unscaled by the
  // loss scale), or the fp32 master weights (tf32/fp32: the weights themselves). The word table
  // without its padding rows.
  enum class Values { weights, gradients, master };
  std::vector<std::string> parameters() const;
  std::vector<double> download(const std::string& name, Values which, cudaStream_t stream) const;
  std::size_t parameter_count() const;  // elements of every parameter (padding rows included)

  // For a data- or tensor-parallel trainer (kernels/models/parallel/parallel_trainer.hpp), one
  // model per rank (tensor parallel: parameters() and download() give the rank's shards). The
  // offsets of the flat gradient buffer from which on the gradients are final, in the order the
  // backward gets there: the LM head's group, each layer's from the last to the first, 0 (the
  // embeddings and the word table). compute_gradients(stream, ready) calls ready(i) while it
  // enqueues, right after point i is reached in the last micro-batch (with accumulation: every
  // point after the last micro-batch is added); ready may record an event on the stream.
  std::vector<std::size_t> gradient_ready_offsets() const;
  using GradientsReady = std::function<void(int point)>;
  // ZeRO-3: the trainer's collectives, enqueued by the step on `stream` (the trainer's one
  // communication stream, ordered with the compute stream by events): gather a layer's weights
  // (all ranks' chunks of `chunk` elements, this rank's from `mine`) into `window`; scatter a
  // layer's gradients in `window` into this rank's chunk `mine` (reduced: their mean).
  struct LayerCollectives {
    cudaStream_t stream = nullptr;
    std::function<void(void* window, const void* mine, std::size_t chunk, cudaStream_t)> gather;
    std::function<void(void* mine, const void* window, std::size_t chunk, cudaStream_t)> scatter;
  };
  void set_layer_collectives(const LayerCollectives& collectives);
  void compute_gradients(cudaStream_t stream, const GradientsReady& ready);
  // step()'s second half on the final gradients: norm, clipping, AdamW (not with shard_optimizer).
  void optimizer_step(cudaStream_t stream);
  // The flat buffers and the optimizer's state a trainer reduces, shards and updates.
  struct Flat {
    void* params = nullptr;    // [elements] of the storage type (element_bytes each)
    void* grads = nullptr;     // the step's final (accumulated) gradients, [elements]
    std::size_t elements = 0;  // a multiple of TrainConfig::ranks × 128
    std::size_t element_bytes = 2;
    std::vector<ParamSegment> segments;  // the parameters, as the model's AdamW plan has them
    // Tensor parallel: [0, tp_split) holds the split parameters; the rest is whole on every rank.
    std::size_t tp_split = 0;
    // ZeRO-3: params and grads store the layers' part as this rank's chunks (offsets into them:
    // sharded.stored(element)); empty otherwise.
    ShardedRegion sharded;
    // fp32 master weights [elements] (tf32/fp32: the weights); null with shard_optimizer
    float* master = nullptr;
    TrainScalars* scalars = nullptr;
    float* norm_scratch = nullptr;  // grad_norm_scratch_bytes()
    void* adamw_scratch = nullptr;  // adamw:unfused: two fp32 temporaries of the largest segment
    LossScaling loss_scaling;
  };
  Flat flat() const;

  struct Impl;  // implementation detail (language_model.cu)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace xfbench::kernels
