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

struct LanguageModel::Impl {
  TrainConfig c;
  detail::ModelLayout layout;
  DeviceAllocation params, grads, accum_grads, master, arena;  // master: (master,) m, v
  std::vector<std::unique_ptr<TransformerBlock>> blocks;
  std::unique_ptr<AdamWPlan> adamw;
  std::uint64_t micro_step = 0;  // dropout masks: a new Philox offset per micro-batch
  bool tuning = false;           // run() searches each GEMM plan's algorithms first

  // The LM head's GEMMs: BERT's transform (dense) and the tied decoder, forward and backward.
  Gemm *dense = nullptr, *d_dense_w = nullptr, *d_dense_x = nullptr;
  Gemm *decoder = nullptr, *d_decoder_w = nullptr, *d_decoder_x = nullptr;
  void make_head_plans();
  void run(Gemm* g, cudaStream_t s, const GemmOperands& o);

  // The placement of layer `layer`'s tensors (TensorPlacement).
  void* place(int layer, const std::string& name, TensorRole role, std::size_t bytes);
  void* param(const std::string& name) const;  // in the flat parameter buffer
  void* grad(const std::string& name) const;   // in the flat gradient buffer
  void* buf(const std::string& key) const;     // an arena slot
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
