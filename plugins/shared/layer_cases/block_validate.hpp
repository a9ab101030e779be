// Validation of a transformer block configuration (BertLayer, GPT2Block, T5, LlamaBlock): the GPU
// block at a small batch and sequence (dropout off) against the float64 CPU reference, forward
// output and every gradient. Shared by the block plugins (this folder's static library).
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kernels/models/transformer_block.hpp"
#include "xfbench/dtype.hpp"

namespace xfbench::block {

// Relative L2 error limits per tensor kind, for fp16 and tf32; bf16 (8x coarser mantissa) gets 6x
// these, fp32 0.01x.
// Measured on the H100 (BertLayer hidden 256 and 1024): fp16 at most 3e-4 in out, bf16 2.5e-3;
// gradients lower relative to their limits. The limits leave about 10x margin.
struct BlockTolerances {
  double out = 3e-3;       // the block's output (values of order 1)
  double dx = 1e-2;        // input gradient (two LayerNorm backwards, attention backward)
  double weights = 1e-2;   // weight gradients (sums over tokens, fp32 accumulation)
  double vectors = 1e-2;   // bias and LayerNorm parameter gradients
  double part_out = 3e-3;  // a part's output (no residual stream to dilute its errors)

  // fp8 (every linear layer's products in FP8, the rest bf16), from the formats: an E4M3 operand
  // is rounded to 3 mantissa bits (~3.6% rms relative), an E5M2 gradient to 2; one product of two
  // rounded operands errs ~3.6% (forward) and ~5.7% (gradients) in relative L2 (measured on an
  // H100 in test_fp8_linear). A layer's output carries the residual stream (x itself, exact), which
  // dilutes its sublayers' errors (measured 1.6%): 5%. A part without the residual is two forward
  // products in a chain (qkv then o_proj: ~5.1%, measured 5.2%): part_out 8%. Gradients pass
  // through up to four FP8 products (down, up, o_proj, qkv; measured up to 9.7%, in dln1_w): 15%.
  // A wrong scale or transpose errs by ~100%.
  static BlockTolerances fp8() { return {5e-2, 0.15, 0.15, 0.15, 8e-2}; }
};

// Throws ValidationError naming the first tensor out of tolerance; returns the worst error seen
// ("rel_l2 3.1e-3 in dwi") for the case's label. Cached per configuration: runs once per process.
// Runs at batch 2 and seq 32 (64 for the flash backend, which takes multiples of 64).
std::string validate_block(const kernels::BlockConfig& config, kernels::BlockPart part,
                           bool backward);
// The same at the configuration's own batch and seq (not cached): for tests of long sequences
// (rotary embeddings past position 4096) at small widths.
std::string validate_block_as_given(const kernels::BlockConfig& config, kernels::BlockPart part,
                                    bool backward);

// A block tensor (stored as `t`: fp16, bf16, fp32 or tf32) copied to the host as doubles, after
// the stream's work.
std::vector<double> download(const kernels::TransformerBlock& block, const std::string& name,
                             Dtype t, cudaStream_t s);

}  // namespace xfbench::block
