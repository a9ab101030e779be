// Float64 CPU reference of kernels/transformer_block.hpp's TransformerBlock (post- and pre-LN, and
// the parts of a post-LN block), forward and backward, with the same parameter names. Slow: for
// validation at small shapes. Written as the model reads (no fused kernels), so it checks the
// block's fusions too.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernels/transformer_block.hpp"

namespace xfbench::kernels::ref {

using Tensors = std::map<std::string, std::vector<double>>;

// `in` holds "x", the part's parameters and (for a backward) "dout". Fills `out` with "out" (for
// dense / dense_gelu parts: their [T, I] output), and with a backward "dx" and "d<param>" for every
// parameter. Dropout is taken as off: validate the GPU block with dropout 0.
void transformer_block(const BlockConfig& c, BlockPart part, const Tensors& in, bool backward,
                       Tensors& out);

}  // namespace xfbench::kernels::ref
