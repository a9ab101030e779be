// The LlamaBlock family: HF LlamaDecoderLayer (pre-RMSNorm, causal grouped-query attention with
// rotary embeddings, SwiGLU MLP, no biases, no dropout) of llama-3.1-8b by default, forward and
// forward+backward, with the unfused (eager: repeat_kv and the full score matrix), fused (cuDNN
// SDPA with grouped-query attention, causal) and flash (xfbench's own kernels) backends.
#include <string>

#include "block_case.hpp"
#include "kernels/models/transformer_block.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::llama {
namespace {

using kernels::BlockConfig;

struct Model {
  const char* name;
  int hidden, heads, kv_heads, head_dim, intermediate;
  double rope_factor;  // rope_scaling "llama3": 3.1 8, 3.2 32 (low 1, high 4, original 8192)
};
// The published configs (rope_theta 500000, rms_norm_eps 1e-5 for all four).
constexpr Model kModels[] = {{"llama-3.2-1b", 2048, 32, 8, 64, 8192, 32},
                             {"llama-3.2-3b", 3072, 24, 8, 128, 8192, 32},
                             {"llama-3.1-8b", 4096, 32, 8, 128, 14336, 8},
                             {"llama-3.1-70b", 8192, 64, 8, 128, 28672, 8}};
constexpr const char* kDefaultModel = "llama-3.1-8b";

// The sizes from --xfbench_llama_model, each overridden by --xfbench_llama_hidden/heads/kv_heads/
// head_dim/inter, and the tag the case names carry: none for llama-3.1-8b, "/model:<name>" for the
// other named sizes, "/hidden:H/heads:N/kv_heads:K/head_dim:D/inter:I" otherwise.
BlockConfig model_from_flags(std::string& tag) {
  const Model& named = block::model_named(
      kModels, "llama_model",
      flag_string("llama_model", kDefaultModel,
                  "LlamaBlock model: llama-3.2-1b, llama-3.2-3b, llama-3.1-8b, llama-3.1-70b "
                  "(custom sizes: the flags below)"));
  auto size = [](const char* flag, const char* what, const char* zero = "the model's") {
    return int(flag_int(flag, 0, std::string("LlamaBlock ") + what + " (0: " + zero + ")",
                        {0, 1 << 20, ""}));
  };
  const int hidden = size("llama_hidden", "hidden size");
  const int heads = size("llama_heads", "attention (query) heads");
  const int kv_heads = size("llama_kv_heads", "key/value heads (grouped-query attention)");
  const int head_dim =
      size("llama_head_dim", "head dim", "hidden / heads where either is given, else the model's");
  const int inter = size("llama_inter", "MLP intermediate size");
  const int h = hidden ? hidden : named.hidden, n = heads ? heads : named.heads;
  const int d = head_dim ? head_dim : (hidden || heads) && n > 0 ? h / n : named.head_dim;
  kernels::RopeConfig rope;
  rope.theta = 500000.0;
  rope.factor = named.rope_factor;
  BlockConfig c = kernels::llama_block(h, n, kv_heads ? kv_heads : named.kv_heads, d,
                                       inter ? inter : named.intermediate, rope);
  tag = block::model_tag(
      kModels, kDefaultModel,
      [&](const Model& m) {
        return c.hidden == m.hidden && c.heads == m.heads && c.kv_heads == m.kv_heads &&
               c.head_size == m.head_dim && c.intermediate == m.intermediate;
      },
      "/hidden:" + std::to_string(c.hidden) + "/heads:" + std::to_string(c.heads) +
          "/kv_heads:" + std::to_string(c.kv_heads) + "/head_dim:" + std::to_string(c.head_size) +
          "/inter:" + std::to_string(c.intermediate));
  return c;
}

void register_cases() {
  std::string model_tag;
  const BlockConfig model = model_from_flags(model_tag);
  block::LayerSweep sweep = block::layer_sweep_flags("llama", "LlamaBlock", {2048, 4096, 8192},
                                                     {1, 2, 4, 8, 16}, true, true);
  sweep.headline_dtype = "bf16";  // Llama trains in bf16
  try {                           // model dimensions alone, before any case exists
    kernels::check_block_config([&] {
      BlockConfig c = model;  // (its message names the first case's run, not a probe's)
      c.backend = kernels::AttentionBackend::fused;
      c.seq = sweep.seqs.front(), c.batch = sweep.batches.front();
      c.precision = block::precision_of(sweep.dtypes.front());
      return c;
    }());
  } catch (const Unsupported&) {
    // A backend's limit (cuDNN's head dims up to 128): those cases skip, naming it; the rest run.
  }
  // The default suite: seq 4096 batch 2 in bf16 with cuDNN's attention; every case when seqs,
  // batches or dtypes are given by flag.
  block::add_layer_cases("LlamaBlock", model, sweep, model_tag,
                         [](int seq, int batch, const std::string& backend) {
                           return seq == 4096 && batch == 2 && backend == "fused";
                         });
  // HF's modules alone at the headline shape, forward: LlamaAttention (per backend), LlamaMLP,
  // input_layernorm + the QKV projection.
  block::add_part_cases("LlamaBlock", model, sweep, model_tag, 4096, 2,
                        {{kernels::BlockPart::attention, "attention"},
                         {kernels::BlockPart::ffn, "mlp"},
                         {kernels::BlockPart::norm_qkv, "rmsnorm_qkv"}});
}

}  // namespace
}  // namespace xfbench::llama

XFBENCH_PLUGIN("llama_block", "1.0.0",
               "HF LlamaDecoderLayer (llama-3.1-8b; llama-3.2-1b to llama-3.1-70b: grouped-query "
               "attention, RoPE, SwiGLU) forward and backward, causal: unfused, cuDNN fused and "
               "xfbench flash attention",
               xfbench::llama::register_cases)
