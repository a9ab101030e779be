// LanguageModel's state (language_model.hpp), shared by language_model.cu (construction,
// parameters, data) and language_model_step.cu (the step). Internal to kernels/.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/adamw.hpp"
#include "kernels/gemm.hpp"
#include "kernels/models/detail/language_model_layout.hpp"
#include "kernels/models/language_model.hpp"
#include "kernels/models/transformer_block.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

// One cudaMalloc, freed on destruction; throws Unsupported("out of memory ...") when it fails.
struct DeviceAllocation {
  void* p = nullptr;
  std::size_t bytes = 0;
  DeviceAllocation() = default;
  DeviceAllocation(std::size_t bytes, const std::string& what);
  ~DeviceAllocation();
  DeviceAllocation(DeviceAllocation&& o) noexcept { *this = std::move(o); }
  DeviceAllocation& operator=(DeviceAllocation&& o) noexcept {
    std::swap(p, o.p), std::swap(bytes, o.bytes);
    return *this;
  }
};

// ZeRO-3's windows (TrainConfig::shard_weights): two of a layer's weights and two of its
// gradients, layer l in window l % 2, and the events that order the trainer's collectives with
// the compute stream.
struct LayerWindows {
  DeviceAllocation memory;  // weights 0, weights 1, gradients 0, gradients 1
  void *weights[2] = {}, *grads[2] = {};
  cudaEvent_t weights_ready[2] = {}, weights_free[2] = {}, grads_ready[2] = {}, grads_free[2] = {};
  cudaEvent_t collectives_done = nullptr;
  int holds[2] = {-1, -1};  // the layer whose gathered weights a window holds (-1: none)
  LanguageModel::LayerCollectives collectives;
  ~LayerWindows();
};

struct LanguageModel::Impl {
  TrainConfig c;
  detail::ModelLayout layout;
  DeviceAllocation params, grads, accum_grads, master, arena;  // master: (master,) m, v
  std::unique_ptr<LayerWindows> windows;                       // ZeRO-3 only
  std::vector<std::unique_ptr<TransformerBlock>> blocks;
  std::unique_ptr<AdamWPlan> adamw;
  std::uint64_t micro_step = 0;       // dropout masks: a new Philox offset per micro-batch
  bool tuning = false;                // run() searches each GEMM plan's algorithms first
  LanguageModel::PartDone part_done;  // set_part_marks: a profile's marks, or none
  void done(const char* part, cudaStream_t s) const {
    if (part_done) part_done(part, s);
  }

  // The LM head's GEMMs: BERT's transform (dense) and the tied decoder, forward and backward.
  Gemm *dense = nullptr, *d_dense_w = nullptr, *d_dense_x = nullptr;
  Gemm *decoder = nullptr, *d_decoder_w = nullptr, *d_decoder_x = nullptr;
  void make_head_plans();
  void run(Gemm* g, cudaStream_t s, const GemmOperands& o);

  // The placement of layer `layer`'s tensors (TensorPlacement).
  void* place(int layer, const std::string& name, TensorRole role, std::size_t bytes);
  void* param(const std::string& name) const;  // in the flat parameter buffer
  void* grad(const std::string& name) const;   // in the flat gradient buffer
  // ZeRO-3: layer `layer`'s chunk in the stored flat buffer `base` (params.p or grads.p).
  void* chunk(void* base, int layer) const;
  // ZeRO-3's schedule (language_model_step.cu), enqueued around layer `layer` on stream s.
  void gather_layer(int layer);                     // its weights into its window, unless there
  void use_layer(int layer, cudaStream_t s);        // s waits for its gathered weights
  void release_layer(int layer, cudaStream_t s);    // s is done with its weights' window
  void before_backward(int layer, cudaStream_t s);  // s waits until its gradient window is free
  void scatter_layer(int layer, cudaStream_t s);  // its gradients into its chunk, once s wrote them
  void join_collectives(cudaStream_t s);          // s waits for every collective enqueued
  void* buf(const std::string& key) const;        // an arena slot
  // What the norm and the optimizer read: the accumulated gradients, or the last backward's.
  void* final_grads() const { return c.accum > 1 ? accum_grads.p : grads.p; }
  // Bytes of a stored parameter, gradient or activation: 2 (fp16, bf16), 4 (tf32, fp32).
  std::size_t elem() const { return elem_size(input_type(storage_precision(c.precision))); }
  // tf32/fp32: the fp32 weights are AdamW's master copy (as in torch's fp32 training, no second
  // copy); `master` then holds the moments alone.
  bool weights_are_master() const {
    return input_type(storage_precision(c.precision)) == ElemType::f32;
  }
  float* master_weights() const {
    return static_cast<float*>(weights_are_master() ? params.p : master.p);
  }
  float* moment1() const {
    return static_cast<float*>(master.p) + (weights_are_master() ? 0 : layout.param_elements);
  }
  float* moment2() const { return moment1() + layout.param_elements; }
  TrainScalars* scalars() const { return static_cast<TrainScalars*>(buf("scalars")); }
  LossScaling loss_scaling() const;
  // Philox seeds: block i draws from dropout_seed(i), the embeddings from dropout_seed(layers).
  std::uint64_t dropout_seed(int site) const;

  void reset_optimizer(cudaStream_t s);  // master = weights, moments 0, scalars initial
  // Forward, loss, backward, accumulation; `ready` (data parallel) is called at each gradient
  // ready point (LanguageModel::gradient_ready_offsets).
  void micro_batch(cudaStream_t s, int k, const LanguageModel::GradientsReady* ready = nullptr);
  void optimizer_step(cudaStream_t s);
};

// Calls f with a null T* of the step's storage type T: __half, __nv_bfloat16, float (tf32, fp32).
template <class F>
void with_storage_type(Precision p, const F& f) {
  if (p == Precision::fp16)
    f(static_cast<__half*>(nullptr));
  else if (storage_precision(p) == Precision::bf16)  // bf16, and fp8 (FP8 products, bf16 storage)
    f(static_cast<__nv_bfloat16*>(nullptr));
  else
    f(static_cast<float*>(nullptr));
}

}  // namespace xfbench::kernels
