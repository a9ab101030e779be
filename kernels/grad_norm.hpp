// Gradient clipping by global norm and fp16 dynamic loss scaling, decided on the device so a
// training step never waits for the host:
//   norm      = ‖grads‖₂ / S                  (S = loss scale; fp32 accumulation, deterministic)
//   clip_coef = min(1, max_norm / (norm + 1e-6))          (torch.nn.utils.clip_grad_norm_)
//   grad_mult = clip_coef / S                  (what the optimizer multiplies gradients by)
// A non-finite sum (inf/nan in some gradient) marks the step skipped: the optimizer (adamw.hpp)
// then writes nothing. With dynamic scaling (torch.amp.GradScaler's rule) a skipped step halves S
// and growth_interval finite steps in a row double it.
//
// TrainScalars lives in device memory, one per model; grad_norm_clip is the optimizer step's
// prologue: it also counts the steps taken (AdamW's bias correction reads `step`), so it runs
// before every optimizer step, with max_norm <= 0 when no clipping is wanted.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace xfbench::kernels {

struct TrainScalars {
  float loss_scale;  // S: the loss gradient is multiplied by it (1 without fp16 scaling)
  float grad_norm;   // global L2 norm of the last step's unscaled gradients
  float clip_coef;   // min(1, max_norm / (grad_norm + 1e-6)), 1 without clipping
  float grad_mult;   // clip_coef / S, for the optimizer
  int step;          // optimizer steps taken; skipped steps are not counted
  int nonfinite;     // 1: the last step's gradients were not finite, the optimizer skipped it
  int good_steps;    // finite steps since the last change of S
  int skipped;       // steps skipped so far
};

struct LossScaling {
  bool dynamic = false;  // fp16: true; otherwise S stays 1 (non-finite steps are still skipped)
  float init_scale = 65536.f;
  float growth_factor = 2.f;
  float backoff_factor = 0.5f;
  int growth_interval = 2000;
};

// *scalars = {S = dynamic ? init_scale : 1, norm 0, clip 1, grad_mult 1/S, counters 0}.
void train_scalars_init(TrainScalars* scalars, const LossScaling& scaling, cudaStream_t stream);

// Bytes of `scratch` grad_norm_clip needs (per-block partial sums).
std::size_t grad_norm_scratch_bytes();

// Global norm of grads [n] (the whole flat gradient buffer), clip coefficient, non-finite check,
// loss-scale update and step count into *scalars, as described above. Two passes: fixed blocks
// write partial sums of squares, one block adds them in a fixed order (the same bits on any GPU).
template <class T>
void grad_norm_clip(TrainScalars* scalars, float* scratch, const T* grads, std::size_t n,
                    float max_norm, const LossScaling& scaling, cudaStream_t stream);

// grad_norm_clip's two passes apart, for gradients sharded over ranks (ZeRO): grad_norm_partials
// writes the partial sums of squares of this rank's shard into `scratch`
// (grad_norm_scratch_bytes() / 4 floats); the caller adds them element-wise over the ranks (an
// all-reduce); grad_norm_finish does the rest of grad_norm_clip on the sums. On one rank the two
// are grad_norm_clip, bit for bit.
template <class T>
void grad_norm_partials(float* scratch, const T* grads, std::size_t n, cudaStream_t stream);
void grad_norm_finish(TrainScalars* scalars, const float* scratch, float max_norm,
                      const LossScaling& scaling, cudaStream_t stream);

// A shard made of pieces of a flat gradient buffer, taken one after another (ZeRO-2 reduced in
// place: a rank's chunk of every bucket): piece i is elements [offset, offset + count), offsets
// and counts multiples of 8. Uploaded once at construction (synchronously: build it outside any
// timed region). Owns device memory; movable, not copyable.
class GradPieces {
 public:
  struct Piece {
    std::size_t offset = 0, count = 0;
  };
  explicit GradPieces(const std::vector<Piece>& pieces);  // InvalidArgument: not 8-aligned
  ~GradPieces();
  GradPieces(GradPieces&& other) noexcept;
  GradPieces& operator=(GradPieces&& other) noexcept;
  GradPieces(const GradPieces&) = delete;
  GradPieces& operator=(const GradPieces&) = delete;

  std::size_t elements() const { return elements_; }  // of the shard: the counts' sum
  const void* table() const { return table_; }        // device array (grad_norm.cu)

 private:
  std::size_t elements_ = 0;
  void* table_ = nullptr;
};

// grad_norm_partials over the shard `pieces` make of `grads`: the same bits as grad_norm_partials
// over a contiguous copy of that shard (the same blocks add the same elements in the same order).
template <class T>
void grad_norm_partials(float* scratch, const T* grads, const GradPieces& pieces,
                        cudaStream_t stream);

// acc += g over n elements (gradient accumulation when the backward overwrites its gradients;
// n % 8 == 0, pointers 16-byte aligned). T = __half, __nv_bfloat16 or float.
template <class T>
void grad_accumulate(T* acc, const T* g, std::size_t n, cudaStream_t stream);

}  // namespace xfbench::kernels
