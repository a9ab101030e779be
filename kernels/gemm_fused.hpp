// Linear-layer products with the FFN's activation in their epilogue, where cuBLASLt has none
// (erf-GELU, the gated FFNs' product of two projections) or would round differently from our own
// activation kernels (gelu.hpp, activation.hpp): CUTLASS 3 warp-specialised TMA/WGMMA kernels with
// epilogue visitor trees, Hopper only (sm_90a). Row-major terms as gemm.hpp:
//
//   bias_gelu       act[m,n] = gelu(x·Wᵀ + bias[n])                     x [m,k], W [n,k] ("NT")
//   bias_gelu_aux   as bias_gelu, and pre[m,n] = x·Wᵀ + bias[n]
//   dgelu           dpre[m,n] = (dy·W) ⊙ gelu'(pre)                      dy [m,k], W [k,n] ("NN")
//
// The gated FFNs (Llama's SwiGLU, T5 v1.1's gated GELU; activation.hpp) keep pre [m, 2n] as
// gated_dropout_forward reads it, the gate's input in columns [0, n) and the linear part's in
// [n, 2n), f the gate's activation (FusedGemmDesc::gate); their W is the up (linear) projection's:
//
//   gated           act[m,n] = f(pre[m,n]) · (x·Wᵀ)[m,n]                x [m,k], W [n,k] ("NT")
//   gated_aux       as gated, and pre[m,n+j] = (x·Wᵀ)[m,j]
//   dgated          with g = dy·W: dpre[m,j] = g ⊙ pre[m,n+j] ⊙ f'(pre[m,j]),
//                   dpre[m,n+j] = g ⊙ f(pre[m,j])             dy [m,k], W [k,n] ("NN"), dpre [m,2n]
//
// so a gated FFN's forward is the gate's plain product into pre's first half, then gated_aux; its
// backward dgated replaces the product dy·W and gated_dropout_backward (no dropout).
//
// A training forward writes both act and pre (what the backward reads); the backward reads pre and
// never writes dy·W. Packed, bf16 or fp16 storage, fp32 accumulation and epilogue math, the
// activations of detail/gelu.cuh and detail/gate.cuh (the unfused kernels compute the same
// function of the same fp32 values).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/activation.hpp"
#include "kernels/gelu.hpp"
#include "kernels/precision.hpp"

namespace xfbench::kernels {

enum class FusedGemmOp { bias_gelu, bias_gelu_aux, dgelu, gated, gated_aux, dgated };
bool is_gated(FusedGemmOp op);
const char* to_string(FusedGemmOp op);

struct FusedGemmDesc {
  Precision precision = Precision::bf16;  // bf16 or fp16
  FusedGemmOp op = FusedGemmOp::bias_gelu_aux;
  Gelu gelu = Gelu::erf;             // the GELU ops'
  GateAct gate = GateAct::silu;      // the gated ops'
  std::int64_t m = 0, n = 0, k = 0;  // n and k multiples of 8 (16-byte rows for TMA)
  std::string describe() const;
};

struct FusedGemmOperands {
  const void* a = nullptr;  // x (forward) or dy (backward)
  const void* b = nullptr;  // W
  void* out = nullptr;      // act (forward) or dpre (backward; gated: [m, 2n])
  void* pre = nullptr;      // GELU: written by bias_gelu_aux, read by dgelu, unused by bias_gelu;
                            // gated: [m, 2n], read by all three, written by gated_aux (half)
  const void* bias = nullptr;  // GELU forward: [n], nullable (no bias); the gated ops take none
};

// Whether this build and the current device run the fused products (sm_90a kernels built and a
// compute-capability 9.0 GPU), and if not, why.
bool fused_gemm_available(std::string* why = nullptr);

class FusedGemm {
 public:
  // Throws Unsupported where fused_gemm_available() is false, InvalidArgument on a bad
  // description. Uses the current CUDA device.
  explicit FusedGemm(const FusedGemmDesc& desc);
  ~FusedGemm();
  FusedGemm(const FusedGemm&) = delete;
  FusedGemm& operator=(const FusedGemm&) = delete;

  const FusedGemmDesc& desc() const;
  std::string label() const;  // the kernel, e.g. "cutlass 128x256x64 cluster 2x1 cooperative"
  // Enqueues the product: no allocation, no synchronisation (graph-capturable). Pointers 16-byte
  // aligned.
  void run(cudaStream_t stream, const FusedGemmOperands& ops) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace xfbench::kernels
