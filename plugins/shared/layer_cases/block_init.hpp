// Random parameters and inputs for a transformer block: nn.Linear's uniform(±1/sqrt(fan_in))
// weights, small biases, LayerNorm weights near 1, inputs (T5's encoder states too) and output
// gradients uniform(±1), T5's relative bias table uniform(±1).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/models/transformer_block.hpp"
#include "xfbench/dtype.hpp"

namespace xfbench::block {

// How a block of this precision stores its tensors: fp16, bf16 (also fp8: its linears keep their
// own FP8 copies), or fp32 (as tf32 or fp32): kernels/precision.hpp.
using kernels::storage_dtype;

void init_block(kernels::TransformerBlock& block, std::uint64_t seed, cudaStream_t stream);

}  // namespace xfbench::block
