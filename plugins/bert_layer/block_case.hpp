// Registering and running transformer-block cases (BertLayer, GPT2Block, ...): what the block
// plugins share besides their flags and names.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernels/transformer_block.hpp"
#include "xfbench/case.hpp"

namespace xfbench::block {

struct BlockCase {
  kernels::BlockConfig config;
  kernels::BlockPart part = kernels::BlockPart::layer;
  bool backward = false;  // forward + backward (input and every parameter gradient)
  bool search = true;     // time cuBLASLt's top algorithms for each GEMM first
  Suite suite = Suite::core;
};

// Adds case `name`. The configuration is checked now: InvalidArgument propagates (the host exits
// 2 with the reason), Unsupported becomes the case's skip reason. When it runs, the case validates
// once against the float64 reference (block_validate.hpp), tunes, and times forward (+ backward);
// counters: TFLOPS by block_forward_flops (3x with the backward), pct_peak, samples/s, tokens/s,
// mem_GB (the block's parameters, gradients and activations).
void add_block_case(const std::string& name, const BlockCase& spec);

// The swept dimensions of a block family's layer cases, from --xfbench_<prefix>_seqs, _batches,
// _dtypes (fp16, bf16), _backends (unfused, fused, flash) and _search.
struct LayerSweep {
  std::vector<int> seqs, batches;
  std::vector<std::string> dtypes, backends;
  bool search = true;
  bool given = false;  // seqs, batches or dtypes given by flag: every case is in the default suite
};
// Reads the flags (help texts name `family` and the defaults). Throws InvalidArgument naming a
// bad flag value.
LayerSweep layer_sweep_flags(const std::string& prefix, const std::string& family,
                             const std::vector<int>& seqs, const std::vector<int>& batches);

// Adds <family>/<backend>/<dtype>/<fwd|fwdbwd>/seq:S/batch:B<model_tag> for every combination of
// the sweep. The default suite holds the fp16 cases whose (seq, batch) is `headline`, or every
// case when the sweep was given by flag.
void add_layer_cases(const std::string& family, const kernels::BlockConfig& model,
                     const LayerSweep& sweep, const std::string& model_tag,
                     const std::function<bool(int seq, int batch)>& headline);

// --xfbench_<flag>=a,b,... as positive integers, or each one of `allowed`; `fallback` when not
// given. Throws InvalidArgument naming the flag and the bad value.
std::vector<int> int_list_flag(const std::string& flag, const std::string& help,
                               std::vector<int> fallback);
std::vector<std::string> choice_list_flag(const std::string& flag, const std::string& help,
                                          std::vector<std::string> fallback,
                                          const std::vector<std::string>& allowed);

kernels::AttentionBackend backend_of(const std::string& name);  // "unfused", "fused", "flash"
kernels::Precision precision_of(const std::string& name);       // "fp16", "bf16"

}  // namespace xfbench::block
