// Validation of a BertLayer configuration: the GPU layer at a small batch and sequence (dropout
// off) against the float64 CPU reference, forward output and every gradient.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kernels/bert_layer.hpp"
#include "xfbench/dtype.hpp"

namespace xfbench::bert {

// Relative L2 error limits per tensor kind, for fp16; bf16 (8x coarser mantissa) gets 6x these.
// Measured on the H100 (hidden 256 and 1024): fp16 at most 3e-4 in out, bf16 2.5e-3; gradients
// lower relative to their limits. The limits leave about 10x margin.
struct BertTolerances {
  double out = 3e-3;      // the layer's output (after LayerNorm: values of order 1)
  double dx = 1e-2;       // input gradient (two LayerNorm backwards, attention backward)
  double weights = 1e-2;  // weight gradients (sums over tokens, fp32 accumulation)
  double vectors = 1e-2;  // bias and LayerNorm parameter gradients
};

// Throws ValidationError naming the first tensor out of tolerance; returns the worst error seen
// ("rel_l2 3.1e-3 in dwi") for the case's label. Cached per configuration: runs once per process.
std::string validate_bert(const kernels::BertConfig& config, kernels::BertPart part, bool backward);

// A layer tensor (fp16 or bf16 as `t`) copied to the host as doubles, after the stream's work.
std::vector<double> download(const kernels::BertLayer& layer, const std::string& name, Dtype t,
                             cudaStream_t s);

}  // namespace xfbench::bert
