// The BertLayer family: HF BertLayer of bert-large (hidden 1024, 16 heads, intermediate 4096,
// post-LN, erf GELU, dropout 0.1 active as in training), forward and forward+backward, with the
// unfused (eager), fused (cuDNN flash attention) and flash (xfbench's own flash attention
// kernels) backends, and the seeds' parts of the layer.
#include <string>
#include <vector>

#include "block_case.hpp"
#include "kernels/models/transformer_block.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::bert {
namespace {

using block::BlockCase;
using kernels::AttentionBackend;
using kernels::BlockConfig;
using kernels::BlockPart;

void register_cases() {
  BlockConfig model = kernels::bert_block(
      int(flag_int("bert_hidden", 1024, "BertLayer hidden size (bert-large: 1024)",
                   {1, 1 << 20, ""})),
      int(flag_int("bert_heads", 16, "BertLayer attention heads (bert-large: 16)",
                   {1, 1 << 20, ""})),
      int(flag_int("bert_intermediate", 4096, "BertLayer FFN size (bert-large: 4096)",
                   {1, 1 << 20, ""})));
  model.set_dropout(block::dropout_flag("bert", "BertLayer"));
  const block::LayerSweep sweep = block::layer_sweep_flags("bert", "BertLayer", {128, 512},
                                                           {2, 4, 8, 16, 32, 64, 128}, true, true);
  const bool default_model =
      model.hidden == 1024 && model.heads == 16 && model.intermediate == 4096;
  const std::string model_tag =
      (default_model
           ? ""
           : "/hidden:" + std::to_string(model.hidden) + "/heads:" + std::to_string(model.heads) +
                 "/inter:" + std::to_string(model.intermediate)) +
      block::dropout_tag(model.attention_dropout);
  kernels::check_block_config([&] {  // model dimensions alone, before any case exists
    BlockConfig c = model;
    c.backend = AttentionBackend::unfused;
    return c;
  }());

  // The default suite: the seeds' headline shapes (seq 512 batch 64; seq 128 batch 128 with fused
  // attention) in fp16 (block::in_default_suite's backends); every case when seqs, batches or
  // dtypes are given by flag.
  block::add_layer_cases(
      "BertLayer", model, sweep, model_tag, [](int seq, int batch, const std::string& backend) {
        return (seq == 512 && batch == 64) || (seq == 128 && batch == 128 && backend == "fused");
      });
  // The seeds' parts table: batch 64, seq 128, forward; attention with each backend. Not in the
  // default suite (minutes matter more there than the breakdown) unless the sweep is given by flag;
  // --benchmark_filter=BertLayer/part: runs the four.
  block::add_part_cases("BertLayer", model, sweep, model_tag, 128, 64,
                        {{BlockPart::dense, "dense"},
                         {BlockPart::dense_gelu, "dense_gelu"},
                         {BlockPart::ffn, "ffn"},
                         {BlockPart::attention, "attention"}});
}

}  // namespace
}  // namespace xfbench::bert

XFBENCH_PLUGIN("bert_layer", "1.0.0",
               "HF BertLayer (bert-large) forward and backward: unfused, cuDNN fused and xfbench "
               "flash attention, and its parts",
               xfbench::bert::register_cases)
