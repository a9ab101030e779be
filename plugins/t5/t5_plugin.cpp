// The T5Encoder and T5Decoder families: HF T5Block as the first block of a t5-large encoder or
// decoder stack by default (has_relative_attention_bias: pre-RMSNorm without bias, linears without
// biases, attention scores not scaled by 1/sqrt(d), a relative position bias built from its
// [32 buckets, heads] table each step, ReLU FFN, dropout 0.1 active as in training); the decoder
// adds causal self-attention and cross-attention to the encoder states. Forward and
// forward+backward with the unfused (eager), fused (cuDNN SDPA with the bias and its gradient) and
// flash (xfbench's own kernels) backends.
#include <string>

#include "block_case.hpp"
#include "kernels/models/transformer_block.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::t5 {
namespace {

using kernels::BlockConfig;

struct Model {
  const char* name;
  int d_model, heads, d_kv, d_ff;
};
// HF's T5 sizes (t5-3b: 32 heads of 128 over d_model 1024, so heads · d_kv != d_model).
constexpr Model kModels[] = {{"t5-small", 512, 8, 64, 2048},
                             {"t5-base", 768, 12, 64, 3072},
                             {"t5-large", 1024, 16, 64, 4096},
                             {"t5-3b", 1024, 32, 128, 16384}};
constexpr const char* kDefaultModel = "t5-large";  // the seeds' T5 table

// The sizes from --xfbench_t5_model, each overridden by --xfbench_t5_d_model/heads/d_kv/d_ff, the
// FFN from --xfbench_t5_ffn, and the tag the case names carry: none for t5-large with ReLU,
// "/model:<name>" for the other named sizes, "/d_model:D/heads:N/d_kv:K/d_ff:F" otherwise, then
// "/ffn:gated-gelu" for T5 v1.1's FFN.
struct Dims {
  int d_model, heads, d_kv, d_ff;
  bool gated;
  std::string tag;
};

Dims dims_from_flags() {
  const Model& named = block::model_named(
      kModels, "t5_model",
      flag_string(
          "t5_model", kDefaultModel,
          "T5Encoder/T5Decoder model: t5-small, t5-base, t5-large, t5-3b (custom sizes: the flags "
          "below)"));
  auto size = [](const char* flag, const char* what) {
    return int(
        flag_int(flag, 0, std::string("T5 ") + what + " (0: the model's)", {0, 1 << 20, ""}));
  };
  const int d_model = size("t5_d_model", "d_model, the hidden size");
  const int heads = size("t5_heads", "attention heads");
  const int d_kv = size("t5_d_kv", "head size d_kv (heads x d_kv may differ from d_model)");
  const int d_ff = size("t5_d_ff", "FFN size d_ff");
  const std::string ffn = flag_string("t5_ffn", "relu",
                                      "T5 FFN: relu (DenseReluDense) or gated-gelu (T5 v1.1: "
                                      "gelu_new(x wi_0) * (x wi_1))");
  if (ffn != "relu" && ffn != "gated-gelu")
    XF_THROW(InvalidArgument,
             "--xfbench_t5_ffn: unknown FFN '" + ffn + "' (known: relu, gated-gelu)");
  Dims d{d_model ? d_model : named.d_model, heads ? heads : named.heads, d_kv ? d_kv : named.d_kv,
         d_ff ? d_ff : named.d_ff,          ffn == "gated-gelu",         ""};
  d.tag = block::model_tag(
      kModels, kDefaultModel,
      [&](const Model& m) {
        return d.d_model == m.d_model && d.heads == m.heads && d.d_kv == m.d_kv && d.d_ff == m.d_ff;
      },
      "/d_model:" + std::to_string(d.d_model) + "/heads:" + std::to_string(d.heads) +
          "/d_kv:" + std::to_string(d.d_kv) + "/d_ff:" + std::to_string(d.d_ff));
  if (d.gated) d.tag += "/ffn:gated-gelu";
  return d;
}

void register_cases() {
  const Dims d = dims_from_flags();
  const float dropout = block::dropout_flag("t5", "T5 dropout_rate:");
  const block::LayerSweep sweep = block::layer_sweep_flags(
      "t5", "T5Encoder and T5Decoder", {512, 128}, {2, 4, 8, 16, 32, 64, 128}, true);
  for (bool decoder : {false, true}) {
    BlockConfig model = kernels::t5_block(d.d_model, d.heads, d.d_kv, d.d_ff, decoder, d.gated);
    model.set_dropout(dropout);
    kernels::check_block_config([&] {  // model dimensions alone, before any case exists
      BlockConfig c = model;
      c.backend = kernels::AttentionBackend::unfused;
      return c;
    }());
    // The default suite: seq 512 batch 64 in fp16 (the seeds' headline column); every case when
    // seqs, batches or dtypes are given by flag.
    block::add_layer_cases(
        model.name, model, sweep, d.tag + block::dropout_tag(dropout),
        [](int seq, int batch, const std::string&) { return seq == 512 && batch == 64; });
  }
}

}  // namespace
}  // namespace xfbench::t5

XFBENCH_PLUGIN("t5", "1.0.0",
               "HF T5Block (t5-large; t5-small to t5-3b, gated-GELU FFN) as encoder and decoder "
               "(relative position bias, cross-attention) forward and backward: unfused, cuDNN "
               "fused and xfbench flash attention",
               xfbench::t5::register_cases)
