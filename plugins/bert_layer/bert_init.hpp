// Random parameters and inputs for a BertLayer: nn.Linear's uniform(±1/sqrt(fan_in)) weights,
// small biases, LayerNorm weights near 1, inputs and output gradients uniform(±1).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/bert_layer.hpp"

namespace xfbench::bert {

void init_layer(kernels::BertLayer& layer, std::uint64_t seed, cudaStream_t stream);

}  // namespace xfbench::bert
