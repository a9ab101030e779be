// FP8 tensors with per-tensor scales, as TransformerEngine keeps them (issue 34).
//
// A bf16 tensor x becomes q = saturate(round(x · scale)) in E4M3 (activations and weights; largest
// finite 448) or E5M2 (gradients; 57344), and a GEMM reading q multiplies it back by scale_inv =
// 1/scale through cuBLASLt's A/B scale pointers, so no separate rescale pass exists. The cast
// records amax = max|x| in the same pass and counts the elements it saturated.
//
// Where the scale comes from (the recipe, TransformerEngine's names and defaults):
//   delayed  the largest amax of the last `history` steps (1024), this step's amax joining the
//            history after its cast: scale = fp8_max / amax / 2^margin (margin 0), kept as it was
//            where that amax is 0 or not finite. Its first step (after construction or reset(),
//            the history empty) measures each cast's own amax as `current` does: where
//            TransformerEngine casts that step with scale 1, every gradient of a model at its
//            initialisation (~1e-6) underflows E5M2 and the first update is lost (measured: a
//            1B Llama's loss 5.3% above bf16's after 30 steps, within 0.6% with this start).
//   current  this step's own amax, measured in a pass over x just before the cast.
//
// Fp8Scales holds the state of a set of tensors in one device allocation, starting as reset()
// leaves it; update() after a step advances every history in one launch (graph-capturable: the
// history position lives on the GPU). Inputs are bf16, [rows, cols] row-major. Arguments a cast
// cannot take (n % 8, rows or cols % 16, a tensor index out of range; a history outside 1..65536,
// a margin outside 0..30, no tensors) throw InvalidArgument. NaN inputs stay NaN in q and are
// left out of amax (the scale follows the finite values).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/gemm.hpp"

#if defined(__CUDACC__)
#define XF_FP8_HD __host__ __device__
#else
#define XF_FP8_HD
#endif

namespace xfbench::kernels {

enum class Fp8Format { e4m3, e5m2 };
const char* to_string(Fp8Format f);
ElemType elem_type(Fp8Format f);  // ElemType::e4m3 or ElemType::e5m2
// The largest finite value of the format: 448 (e4m3), 57344 (e5m2).
XF_FP8_HD constexpr float fp8_max(Fp8Format f) { return f == Fp8Format::e4m3 ? 448.f : 57344.f; }
// Where saturation starts to change a value: max plus half its ulp (464, 61440). A scaled value
// |x·scale| above it is clipped and counted as an overflow; up to it, it rounds to max as usual
// (the current recipe's amax·(max/amax) may land an fp32 ulp above max: no overflow).
XF_FP8_HD constexpr float fp8_clip(Fp8Format f) { return f == Fp8Format::e4m3 ? 464.f : 61440.f; }

enum class Fp8Recipe { delayed, current };
const char* to_string(Fp8Recipe r);
Fp8Recipe fp8_recipe(const std::string& name);  // "delayed" or "current"; InvalidArgument else

struct Fp8RecipeConfig {
  Fp8Recipe recipe = Fp8Recipe::delayed;
  int history = 1024;  // delayed: amax history length (TransformerEngine's default)
  int margin = 0;      // scale = fp8_max / amax / 2^margin
};

// The scale a recipe gives for `amax`: fp8_max / amax / 2^margin; `previous` where amax is 0, not
// finite, or the quotient overflows (TransformerEngine's _default_sf_compute).
XF_FP8_HD inline float fp8_scale_from_amax(float amax, float previous, float max, int margin) {
  if (!(amax > 0.f) || !(amax <= 3.402823466e38f)) return previous;
  float s = max / amax;
  for (int i = 0; i < margin; ++i) s *= 0.5f;
  return s <= 3.402823466e38f ? s : previous;
}

// Scaling state of `formats.size()` FP8 tensors. Device pointers stay valid for its lifetime.
class Fp8Scales {
 public:
  Fp8Scales(std::vector<Fp8Format> formats, const Fp8RecipeConfig& config);
  ~Fp8Scales();
  Fp8Scales(const Fp8Scales&) = delete;
  Fp8Scales& operator=(const Fp8Scales&) = delete;

  int count() const { return int(formats_.size()); }
  Fp8Format format(int i) const { return formats_.at(std::size_t(i)); }
  const Fp8RecipeConfig& config() const { return config_; }

  float* scale(int i) const;            // multiplies x before the cast
  const float* scale_inv(int i) const;  // 1/scale: the GEMM's A/B scale pointer
  // delayed: max|x| of this step's casts (0 before the first); current: of the last cast.
  float* amax(int i) const;
  // Elements clipped (|x·scale| > fp8_clip) by every cast since reset(), all tensors together.
  unsigned long long* overflow() const;

  // Scales 1, amax 0, histories empty, overflow 0 (a fresh start). Enqueued on `stream`.
  void reset(cudaStream_t stream);
  // Whether casts measure their own amax first: the current recipe always, the delayed one on
  // its first step (until the first update() after construction or reset()).
  bool measures_own_amax() const { return config_.recipe == Fp8Recipe::current || first_step_; }
  // After a step: delayed: each amax joins its history, scale and scale_inv follow the history's
  // maximum, amax returns to 0; current: nothing (each cast measures its own; amax is kept).
  void update(cudaStream_t stream);

  // Host copies (synchronise): for tests and labels.
  std::vector<float> scales() const;
  std::vector<float> amaxes() const;
  unsigned long long overflow_count() const;

 private:
  std::vector<Fp8Format> formats_;
  Fp8RecipeConfig config_;
  bool first_step_ = true;
  void* mem_ =
      nullptr;  // scale[n], scale_inv[n], amax[n], max[n], history[n·len], position, overflow
};

// q = saturate(x · scale) for n elements (n % 8 == 0) of tensor `i` of `scales`: the delayed
// recipe casts with the scale it holds and records amax in the same pass; the current recipe
// first measures amax (one more pass over x) and sets scale and scale_inv from it.
void fp8_cast(void* q, const __nv_bfloat16* x, std::size_t n, const Fp8Scales& scales, int i,
              cudaStream_t stream);

// As fp8_cast for x [rows, cols], writing q [rows, cols] (nullable) and its transpose
// qt [cols, rows] (nullable) in one pass: a linear layer's input and gradient feed both the
// row-major GEMM and the weight-gradient GEMM, which cuBLASLt's FP8 kernels take only with the
// reduced dimension contiguous. rows % 16 == 0 and cols % 16 == 0. `recast`: x holds exactly what
// tensor i's last cast read (a backward casting its forward's input again), so that cast's scale
// stands and a recipe measuring its own amax skips the pass (the bytes are those of a fresh cast).
// dbias (nullable; not with recast) = the column sums of x, [cols] (a linear layer's bias
// gradient, the same pass's), deterministic: per-block partials in `scratch`
// (norm_backward_scratch_bytes(cols) bytes, layernorm.hpp).
void fp8_cast_transpose(void* q, void* qt, const __nv_bfloat16* x, int rows, int cols,
                        const Fp8Scales& scales, int i, cudaStream_t stream, bool recast = false,
                        __nv_bfloat16* dbias = nullptr, float* scratch = nullptr);

// A producer's output written in FP8 where an FP8 product reads it next (a norm's, an
// activation's): q [rows, cols] gets tensor i of `scales` as fp8_cast would write it, in the
// producer's own pass (a recipe measuring its own amax runs the producer twice: measuring, then
// writing). Its bytes serve the forward product as they are and, transposed (fp8_transpose), the
// weight gradient: nothing is cast again from a bf16 copy, and none is kept.
struct Fp8Output {
  void* q = nullptr;  // nullptr: the producer writes its own type
  const Fp8Scales* scales = nullptr;
  int i = 0;
  // Where set, a producer that can (the GELU's backward) writes qᵀ [cols, rows] too, in the same
  // pass: the weight gradient's operand, without fp8_transpose (16-byte aligned; rows % 16 == 0).
  void* qt = nullptr;
};
// InvalidArgument: q without scales, i out of range, q not 16-byte aligned.
void check_fp8_output(const Fp8Output& out);

// qt [cols, rows] = q [rows, cols]ᵀ, FP8 bytes (rows % 16 == 0, cols % 16 == 0).
void fp8_transpose(void* qt, const void* q, int rows, int cols, cudaStream_t stream);

// x = q · scale_inv for n FP8 elements, in fp32 (exact: tests and validation).
void fp8_dequantize(float* x, const void* q, std::size_t n, Fp8Format f, const float* scale_inv,
                    cudaStream_t stream);

}  // namespace xfbench::kernels
