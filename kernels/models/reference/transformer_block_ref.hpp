// Float64 CPU reference of kernels/models/transformer_block.hpp's TransformerBlock (post- and
// pre-LN, and the parts of a post-LN block; T5's RMSNorm, bias-free linears, unscaled scores, ReLU
// or gated-GELU FFN, relative position bias and the decoder's cross-attention; Llama's
// grouped-query attention, rotary embeddings and SwiGLU), forward and backward, with the same
// tensor names. Slow: for validation at small shapes. Written as the model reads (no fused
// kernels), so it checks the block's fusions too.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernels/models/transformer_block.hpp"

namespace xfbench::kernels::ref {

using Tensors = std::map<std::string, std::vector<double>>;

// `in` holds "x" (and the decoder's encoder states "enc"), the part's parameters and (for a
// backward) "dout". Fills `out` with "out" (for dense / dense_gelu parts: their [T, I] output), and
// with a backward "dx" ("denc") and "d<param>" for every parameter, the relative bias table's
// "drel_bias" included. Dropout is taken as off: validate the GPU block with dropout 0. An optional
// "relu_mask" [T, I] (1 where the ReLU passes) replaces pre > 0 in the ReLU's backward: validation
// passes the GPU's, so a pre-activation that fp16 rounding moved across 0 (its gradient flips
// between 0 and the full value) is not counted as an error; the forward values are compared as
// computed.
void transformer_block(const BlockConfig& c, BlockPart part, const Tensors& in, bool backward,
                       Tensors& out);

}  // namespace xfbench::kernels::ref
