// Registering and running transformer-block cases (BertLayer, GPT2Block, ...): what the block
// plugins share besides their flags and names.
#pragma once

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

// Whether --xfbench_<flag> was given (a swept dimension given by flag puts every case it makes
// in the default suite).
bool flag_given(const char* flag);

// --xfbench_<flag>=a,b,... as positive integers; `fallback` when not given. Throws
// InvalidArgument naming the flag and the bad item.
std::vector<int> int_list_flag(const char* flag, const std::string& help,
                               std::vector<int> fallback);
// --xfbench_<flag>=a,b,... each one of `allowed`; `fallback` when not given.
std::vector<std::string> choice_list_flag(const char* flag, const std::string& help,
                                          std::vector<std::string> fallback,
                                          const std::vector<std::string>& allowed);

kernels::AttentionBackend backend_of(const std::string& name);  // "unfused", "fused", "flash"
kernels::Precision precision_of(const std::string& name);       // "fp16", "bf16"

}  // namespace xfbench::block
