// AdamW as torch.optim.AdamW (decoupled weight decay, bias correction, eps outside the sqrt), on
// fp32 master weights and fp32 moments, the model's low-precision weights written from the master:
//   g = grad · grad_mult                          (clip coefficient / loss scale, grad_norm.hpp)
//   p = p · (1 − lr·wd)                           (wd = 0 for segments without decay)
//   m = lerp(m, g, 1 − β1);  v = v·β2 + (1 − β2)·g·g
//   p = p − lr / (1 − β1^t) · m / (sqrt(v) / sqrt(1 − β2^t) + eps);   weights = T(p)
// with t = TrainScalars::step (counted by grad_norm_clip, which must run first in each step). When
// TrainScalars::nonfinite is set the step is skipped: nothing is written.
//
// Parameters, gradients, master weights and moments are flat buffers indexed alike; a plan lists
// the segments (parameter tensors) and whether each decays (HF excludes biases and LayerNorm
// weights). Two implementations give the same bits (each fp32 operation rounded on its own, no
// contraction into FMAs, in the same order):
//   adamw_fused    ONE multi-tensor launch over every segment (a work table of pieces, built once
//                  by the plan, in device memory).
//   adamw_unfused  per tensor the chain of torch's single-tensor AdamW (foreach=False, fused=False,
//                  fp32 parameters), kAdamWUnfusedLaunches launches each (one less without params):
//                  g = float(grad)·grad_mult (autocast's fp32 grad after clip_grad_norm_'s mul_),
//                  p.mul_(1 − lr·wd), m.lerp_(g, 1 − β1), v.mul_(β2), v.addcmul_(g, g, 1 − β2),
//                  d = v.sqrt(), d.div_(sqrt(bc2)), d.add_(eps), p.addcdiv_(m, d, −lr/bc1),
//                  weights.copy_(p).
// T = __half, __nv_bfloat16 or float (fp32/tf32 steps; `params` may then be null: the master
// buffer is the model's weights).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "kernels/grad_norm.hpp"

namespace xfbench::kernels {

struct AdamWConfig {
  float lr = 1e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;  // applied to segments with decay = true
};

// One parameter tensor: elements [offset, offset + count) of the flat buffers.
struct ParamSegment {
  std::size_t offset = 0;
  std::size_t count = 0;
  bool decay = true;
};

constexpr int kAdamWUnfusedLaunches = 10;

// The segments and the fused kernel's work table (pieces of at most a few thousand elements,
// vector pieces 8-aligned), uploaded once at construction (synchronously: build it outside any
// timed region). Segments must not overlap; any order; the flat buffers need total() elements.
// Owns device memory; movable, not copyable.
class AdamWPlan {
 public:
  explicit AdamWPlan(std::vector<ParamSegment> segments);
  ~AdamWPlan();
  AdamWPlan(AdamWPlan&& other) noexcept;
  AdamWPlan& operator=(AdamWPlan&& other) noexcept;
  AdamWPlan(const AdamWPlan&) = delete;
  AdamWPlan& operator=(const AdamWPlan&) = delete;

  const std::vector<ParamSegment>& segments() const { return segments_; }
  std::size_t total() const { return total_; }      // max over segments of offset + count
  std::size_t largest() const { return largest_; }  // elements of the largest segment
  const void* pieces() const { return pieces_; }    // device work table (adamw.cu)
  int num_pieces() const { return num_pieces_; }

 private:
  std::vector<ParamSegment> segments_;
  std::size_t total_ = 0, largest_ = 0;
  void* pieces_ = nullptr;
  int num_pieces_ = 0;
};

// master = float(params) over n elements: the master copy at initialisation (moments: memset 0).
template <class T>
void adamw_init_master(float* master, const T* params, std::size_t n, cudaStream_t stream);

// One AdamW step over all of the plan's segments in one launch. params (T, nullable for T =
// float), master, m, v, grads: flat buffers of plan.total() elements, 16-byte aligned.
template <class T>
void adamw_fused(T* params, float* master, float* m, float* v, const T* grads,
                 const AdamWPlan& plan, const AdamWConfig& config, const TrainScalars* scalars,
                 cudaStream_t stream);

// Bytes of `scratch` adamw_unfused needs: two fp32 temporaries of the largest segment.
std::size_t adamw_unfused_scratch_bytes(const AdamWPlan& plan);

// The same step as a chain of element-wise launches per segment (see above).
template <class T>
void adamw_unfused(T* params, float* master, float* m, float* v, const T* grads, void* scratch,
                   const AdamWPlan& plan, const AdamWConfig& config, const TrainScalars* scalars,
                   cudaStream_t stream);

}  // namespace xfbench::kernels
