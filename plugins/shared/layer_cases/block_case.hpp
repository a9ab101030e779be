// Registering and running transformer-block cases (BertLayer, GPT2Block, ...): what the block
// plugins share besides their flags and names.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/models/transformer_block.hpp"
#include "xfbench/case.hpp"
#include "xfbench/error.hpp"
#include "xfbench/names.hpp"

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
// mem_GB (the block's parameters, gradients and activations), and for a causal block
// TFLOPS_causal (the half of the score matrix the mask leaves).
void add_block_case(const std::string& name, const BlockCase& spec);

// The swept dimensions of a block family's layer cases, from --xfbench_<prefix>_seqs, _batches,
// _dtypes (fp16, bf16; fp8 where the family takes it), _backends (unfused, fused, flash), _search
// and, with fp8, _fp8_recipe (delayed or current: fp8.hpp).
struct LayerSweep {
  std::vector<int> seqs, batches;
  std::vector<std::string> dtypes, backends;
  kernels::Fp8RecipeConfig fp8;
  bool search = true;
  kernels::FfnProducts ffn_products = kernels::FfnProducts::search;  // (fusable_ffn)
  bool given = false;  // seqs, batches or dtypes given by flag: every case is in the default suite
  std::string headline_dtype = "fp16";  // the default suite's (the seeds' tables: fp16)
};
// Reads the flags (help texts name `family` and the defaults); `fp8`: the family offers dtype fp8
// (not by default); `fusable_ffn`: its FFN's products may take its activation (a GELU or gated FFN
// without dropout inside: <prefix>_ffn_products). Throws InvalidArgument naming a bad flag value.
LayerSweep layer_sweep_flags(const std::string& prefix, const std::string& family,
                             const std::vector<int>& seqs, const std::vector<int>& batches,
                             bool fp8 = false, bool fusable_ffn = false);

// The dtype as a case name says it: "fp16", "bf16", or "fp8/recipe:<delayed|current>" (fp8's
// scales come from a recipe, which changes what is computed); returns `name`.
CaseName& add_dtype(CaseName& name, const std::string& dtype, const LayerSweep& sweep);

// Adds <family>/<backend>/<dtype>/<fwd|fwdbwd>/seq:S/batch:B<model_tag> for every combination of
// the sweep. The default suite holds the headline_dtype cases whose (seq, batch, backend) is
// `headline` and whose backend and pass are in_default_suite, or every case when the sweep was
// given by flag.
void add_layer_cases(
    const std::string& family, const kernels::BlockConfig& model, const LayerSweep& sweep,
    const std::string& model_tag,
    const std::function<bool(int seq, int batch, const std::string& backend)>& headline);

// A block's parts forward at one shape (each of the sweep's seqs and batches when they were given
// by flag), as the seeds' parts table: <family>/part:<name>/<dtype>/fwd/seq:S/batch:B<model_tag>
// for each (part, name) of `parts`, the attention part once per backend of the sweep
// ("<name>_<backend>" but for unfused, HF eager's). In the default suite only when the sweep was
// given by flag.
void add_part_cases(const std::string& family, const kernels::BlockConfig& model,
                    const LayerSweep& sweep, const std::string& model_tag, int seq, int batch,
                    const std::vector<std::pair<kernels::BlockPart, std::string>>& parts);

// The default suite's backends, so that it answers in minutes: cuDNN's fused attention forward
// and forward+backward (the PyTorch sdpa peer's counterpart) and xfbench's flash forward+backward;
// unfused (the HF eager counterpart) and flash forward when a filter selects them.
bool in_default_suite(const std::string& backend, const std::string& pass);

// --xfbench_<flag>=a,b,... as positive integers, or each one of `allowed`; `fallback` when not
// given. Throws InvalidArgument naming the flag and the bad value.
std::vector<int> int_list_flag(const std::string& flag, const std::string& help,
                               std::vector<int> fallback);
std::vector<std::string> choice_list_flag(const std::string& flag, const std::string& help,
                                          std::vector<std::string> fallback,
                                          const std::vector<std::string>& allowed);

// A named model size from `table` (entries with a `name`): --xfbench_<flag>=<name>. Throws
// InvalidArgument "--xfbench_<flag>: unknown model 'x' (known: a, b, ...)".
template <class Model, std::size_t N>
const Model& model_named(const Model (&table)[N], const std::string& flag,
                         const std::string& name) {
  std::string known;
  for (const Model& m : table) {
    if (name == m.name) return m;
    known += std::string(known.empty() ? "" : ", ") + m.name;
  }
  XF_THROW(InvalidArgument,
           "--xfbench_" + flag + ": unknown model '" + name + "' (known: " + known + ")");
}

// The tag a block family's case names carry for the sizes in use: none for `default_name`,
// "/model:<name>" for the other sizes of `table` (the first `is(m)` holds for), `custom` otherwise.
template <class Model, std::size_t N, class Is>
std::string model_tag(const Model (&table)[N], const std::string& default_name, Is is,
                      std::string custom) {
  for (const Model& m : table)
    if (is(m)) return m.name == default_name ? "" : std::string("/model:") + m.name;
  return custom;
}

// Dropout, HF's training mode by default: --xfbench_<prefix>_dropout_pct (0 to 99, default 10) as
// a probability; `family` names the cases in the help text. A rate other than the default computes
// something else, so the names say it: dropout_tag(p) is "/dropout:<percent>", or "" for 0.1.
float dropout_flag(const std::string& prefix, const std::string& family);
std::string dropout_tag(float p);

kernels::AttentionBackend backend_of(const std::string& name);  // "unfused", "fused", "flash"
kernels::Precision precision_of(const std::string& name);       // "fp16", "bf16", "fp8"

}  // namespace xfbench::block
