// The GPT2Block family: HF GPT2Block (pre-LN, causal self-attention, tanh GELU "gelu_new", 4h
// MLP, attention-probability and residual dropout 0.1 active as in training) of gpt2-medium by
// default, forward and forward+backward, with the unfused (eager: masked softmax on the full
// score matrix), fused (cuDNN SDPA, causal) and flash (xfbench's own kernels) backends.
#include <string>
#include <vector>

#include "block_case.hpp"
#include "kernels/models/transformer_block.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::gpt2 {
namespace {

using block::BlockCase;
using kernels::BlockConfig;

struct Model {
  const char* name;
  int hidden, heads, inner;
};
// HF's GPT-2 sizes (n_inner unset: 4 · n_embd).
constexpr Model kModels[] = {{"gpt2", 768, 12, 3072},
                             {"gpt2-medium", 1024, 16, 4096},
                             {"gpt2-large", 1280, 20, 5120},
                             {"gpt2-xl", 1600, 25, 6400}};
constexpr const char* kDefaultModel = "gpt2-medium";  // the seeds' GPT-2 table

// The sizes from --xfbench_gpt2_model, each overridden by --xfbench_gpt2_hidden/heads/inner (inner
// defaults to 4 · hidden when only hidden is given), and the tag the case names carry: none for
// gpt2-medium, "/model:<name>" for the other named sizes, "/hidden:H/heads:N/inner:I" otherwise.
BlockConfig model_from_flags(std::string& tag) {
  const Model& named =
      block::model_named(kModels, "gpt2_model",
                         flag_string("gpt2_model", kDefaultModel,
                                     "GPT2Block model: gpt2, gpt2-medium, gpt2-large, "
                                     "gpt2-xl (custom sizes: the flags below)"));
  const int hidden =
      int(flag_int("gpt2_hidden", 0, "GPT2Block hidden size (0: the model's; gpt2-medium: 1024)",
                   {0, 1 << 20, ""}));
  const int heads =
      int(flag_int("gpt2_heads", 0, "GPT2Block attention heads (0: the model's; gpt2-medium: 16)",
                   {0, 1 << 20, ""}));
  const int inner = int(flag_int("gpt2_inner", 0,
                                 "GPT2Block MLP size (0: 4 x hidden if hidden "
                                 "is given, else the model's; gpt2-medium: 4096)",
                                 {0, 1 << 20, ""}));
  BlockConfig c = kernels::gpt2_block(hidden ? hidden : named.hidden, heads ? heads : named.heads,
                                      inner    ? inner
                                      : hidden ? 4 * hidden
                                               : named.inner);
  tag = block::model_tag(
      kModels, kDefaultModel,
      [&](const Model& m) {
        return c.hidden == m.hidden && c.heads == m.heads && c.intermediate == m.inner;
      },
      "/hidden:" + std::to_string(c.hidden) + "/heads:" + std::to_string(c.heads) +
          "/inner:" + std::to_string(c.intermediate));
  return c;
}

void register_cases() {
  std::string model_tag;
  BlockConfig model = model_from_flags(model_tag);
  model.set_dropout(block::dropout_flag("gpt2", "GPT2Block attn_pdrop and resid_pdrop:"));
  model_tag += block::dropout_tag(model.attention_dropout);
  const block::LayerSweep sweep =
      block::layer_sweep_flags("gpt2", "GPT2Block", {512, 1024}, {2, 4, 8, 16, 32, 64}, true, true);
  kernels::check_block_config([&] {  // model dimensions alone, before any case exists
    BlockConfig c = model;
    c.backend = kernels::AttentionBackend::unfused;
    return c;
  }());

  // The default suite: seq 1024 batch 64 in fp16 (the seeds' headline); every case when seqs,
  // batches or dtypes are given by flag.
  block::add_layer_cases(
      "GPT2Block", model, sweep, model_tag,
      [](int seq, int batch, const std::string&) { return seq == 1024 && batch == 64; });
}

}  // namespace
}  // namespace xfbench::gpt2

XFBENCH_PLUGIN("gpt2_block", "1.0.0",
               "HF GPT2Block (gpt2-medium; gpt2 to gpt2-xl) forward and backward, causal: unfused, "
               "cuDNN fused and xfbench flash attention",
               xfbench::gpt2::register_cases)
