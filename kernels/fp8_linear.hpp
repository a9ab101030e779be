// One linear layer, y[T, out] = x[T, in]·Wᵀ (+ bias), with its three products in FP8 as
// TransformerEngine runs them (issue 34; fp8.hpp for the formats and recipes):
//
//   forward          y  = q(x)·q(W)ᵀ                   x, W in e4m3
//   data gradient    dx = q(dy)·q(W)                    dy in e5m2, W as its e4m3 transpose
//   weight gradient  dW = q(dy)ᵀ·q(x)                   dyᵀ and xᵀ: cuBLASLt's FP8 kernels take
//                                                       both operands with the reduced dimension
//                                                       contiguous (layout NT), so each cast
//                                                       also writes the transpose the next
//                                                       product needs, in the same pass
//
// Each product multiplies by the operands' scale_inv through cuBLASLt's scale pointers, writes
// bf16 (dW: bf16 or fp32) and accumulates in fp32 (the forward with cuBLASLt's fast accumulation,
// the gradients with its periodic promotion, as TransformerEngine's defaults). The scales are three
// consecutive tensors of an Fp8Scales (x e4m3, W e4m3, dy e5m2: fp8_linear_formats()). The weight
// is cast once per step (cast_weight) into copies of this object's; the backward casts x again from
// the bf16 input the caller keeps or, where x's producer wrote it in FP8 (input(), forward_fp8),
// transposes the FP8 x the caller keeps instead (backward_weight_fp8): half the bytes kept. The
// step's FP8 copies of x and dy are scratch, which a model places once for all its layers
// (Fp8LinearOptions::scratch).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/fp8.hpp"
#include "kernels/gemm.hpp"

namespace xfbench::kernels {

// The formats of a linear layer's three scaled tensors, in the order Fp8Linear takes them.
std::vector<Fp8Format> fp8_linear_formats();  // {e4m3 (x), e4m3 (W), e5m2 (dy)}

struct Fp8LinearOptions {
  ElemType weight_grad = ElemType::bf16;  // dW's storage: bf16 or f32
  bool backward = true;                   // false: forward only (no gradient copies)
  // The step's copies, placed by the caller (16-byte aligned; each nullptr: the layer allocates
  // it): x and xᵀ of tokens·in bytes, dy and dyᵀ of tokens·out bytes (backward only), at least.
  // x and xᵀ may be one buffer where no forward runs while a backward_weight does, and several
  // layers may share them, each cast_grad waiting for the last reader of the one before.
  struct Scratch {
    void *x = nullptr, *xt = nullptr, *dy = nullptr, *dyt = nullptr;
  } scratch;
};

class Fp8Linear {
 public:
  // tokens, in and out multiples of 16 (InvalidArgument). `scales` outlives this object; tensor
  // indices first, first + 1, first + 2 are x, W, dy. Throws Unsupported where cuBLASLt has no FP8
  // product (before sm_89).
  Fp8Linear(int tokens, int in, int out, const Fp8Scales& scales, int first,
            const Fp8LinearOptions& options = {});
  ~Fp8Linear();
  Fp8Linear(const Fp8Linear&) = delete;
  Fp8Linear& operator=(const Fp8Linear&) = delete;

  // W [out, in] -> its e4m3 copy and transpose; once per step, after the optimizer.
  void cast_weight(cudaStream_t s, const __nv_bfloat16* w);
  // y = x·Wᵀ + bias (bias [out], nullable): casts x, then the product.
  void forward(cudaStream_t s, const __nv_bfloat16* x, __nv_bfloat16* y,
               const __nv_bfloat16* bias = nullptr);
  // Where a producer (a norm, an activation) writes this layer's input x [T, in] in FP8 instead of
  // bf16: q (16-byte aligned, T·in bytes, the caller's) as tensor x of this layer's scales.
  Fp8Output input(void* q) const;
  // Where a producer writes x and xᵀ at once (the GELU's forward, a training block): x into this
  // layer's own copy (returned as q: the forward_fp8 that follows reads it) and xᵀ [in, T] into
  // qt (16-byte aligned, the caller's, kept for backward_weight_fp8t in place of x).
  Fp8Output input_transposed(void* qt) const;
  // y = x·Wᵀ + bias from x already in FP8 (written through input()): forward without its cast.
  void forward_fp8(cudaStream_t s, const void* xq, __nv_bfloat16* y,
                   const __nv_bfloat16* bias = nullptr);
  // dy [T, out] -> its e5m2 copy and transpose: before either backward product (the two may then
  // run on different streams).
  // dbias (nullable): the column sums of dy, [out] (the bias gradient), from the same pass, with
  // `scratch` (fp8_cast_transpose).
  void cast_grad(cudaStream_t s, const __nv_bfloat16* dy, __nv_bfloat16* dbias = nullptr,
                 float* scratch = nullptr);
  // Where a producer (an activation's backward) writes dy [T, out] in e5m2 instead of bf16: this
  // layer's dy copy as tensor dy of its scales. grad_written then makes dyᵀ (fp8_transpose), in
  // place of cast_grad; with `transposed`, the producer writes dyᵀ too (Fp8Output::qt), and
  // nothing more is needed.
  Fp8Output grad_input(bool transposed = false) const;
  void grad_written(cudaStream_t s);
  // dx = dy·W (+ beta·c_in: cuBLASLt's FP8 products cannot read C in place, so a gradient added to
  // another comes from a buffer apart from dx; InvalidArgument when beta != 0 without one).
  void backward_data(cudaStream_t s, __nv_bfloat16* dx, float beta = 0.f,
                     const __nv_bfloat16* c_in = nullptr);
  // dW = dyᵀ·x: x exactly the forward's bf16 input, cast again here with the forward's scale.
  void backward_weight(cudaStream_t s, const __nv_bfloat16* x, void* dw);
  // dW = dyᵀ·x from the FP8 x forward_fp8 read (kept by the caller): transposed, not cast again.
  void backward_weight_fp8(cudaStream_t s, const void* xq, void* dw);
  // dW = dyᵀ·x from the xᵀ input_transposed's producer wrote (kept by the caller): no pass at all.
  void backward_weight_fp8t(cudaStream_t s, const void* xqt, void* dw);

  // Searches each product's algorithms on this layer's buffers (synchronises; outside timing).
  void tune(cudaStream_t s);

  std::size_t device_bytes() const;  // the FP8 copies it allocated itself
  const GemmDesc& forward_desc() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xfbench::kernels
