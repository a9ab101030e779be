// The TrainStep family: a whole training step (forward, loss, backward, clipping, AdamW) of
// BERT masked LM, GPT-2 and Llama causal LMs, with the seeds' knobs in the names: attention
// backend, model, precision, seq, batch, gradient accumulation, checkpointing, fused or unfused
// AdamW; and their multi-GPU variants (parallel_case.hpp) after them.
#include <set>
#include <string>
#include <vector>

#include "block_case.hpp"
#include "kernels/models/language_model.hpp"
#include "parallel_case.hpp"
#include "train_case.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::train {
namespace {

using kernels::TrainConfig;

struct Registry {
  std::string tag;  // custom sizes
  bool search = true;
  bool graph = false;  // --xfbench_train_graph: the one-GPU names end in /graph:on
  std::set<std::string> names;
  std::vector<std::pair<TrainConfig, std::string>> added;  // with their tags
  void add(const TrainConfig& c, Suite suite) {
    const std::string name = case_name(c, tag + (graph ? "/graph:on" : ""));
    if (!names.insert(name).second) return;
    add_train_case(name, c, suite, search, graph);
    added.emplace_back(c, tag);
  }
};

// The model by name with the size flags applied; `tag` names what the flags changed.
kernels::LmModel sized_model(const std::string& name, std::string& tag) {
  kernels::LmModel m = kernels::lm_model(name);
  auto size = [&](const char* flag, const char* key, int& field, const char* what) {
    const long v =
        flag_int(flag, 0, std::string("TrainStep ") + what + " (0: the model's)", {0, 1 << 20, ""});
    if (v > 0 && v != field)
      field = int(v), tag += std::string("/") + key + ":" + std::to_string(v);
  };
  size("train_layers", "layers", m.layers, "layers");
  size("train_hidden", "hidden", m.hidden, "hidden size");
  size("train_heads", "heads", m.heads, "attention heads");
  const bool hidden_given = tag.find("/hidden:") != std::string::npos;
  if (hidden_given) m.intermediate = 4 * m.hidden;
  size("train_inter", "inter", m.intermediate, "FFN size (default 4x hidden)");
  size("train_vocab", "vocab", m.vocab, "vocabulary");
  return m;
}

TrainConfig base(const kernels::LmModel& m, int seq, int batch, float dropout) {
  TrainConfig c;
  c.model = m;
  c.seq = seq, c.batch = batch;
  c.dropout = m.llama ? 0.f : dropout;  // Llama's configs have none
  return c;
}

// Each knob changed alone around a headline configuration (extended suite).
void add_knobs(Registry& r, const TrainConfig& head) {
  TrainConfig c = head;
  c.optimizer = kernels::OptimizerKind::unfused;
  r.add(c, Suite::extended);
  c = head, c.accum = 4;
  r.add(c, Suite::extended);
  c = head, c.checkpointing = true;
  r.add(c, Suite::extended);
  c = head, c.precision = kernels::Precision::fp16;
  r.add(c, Suite::extended);
  c = head, c.precision = kernels::Precision::tf32;
  c.backend = kernels::AttentionBackend::unfused;  // cuDNN SDPA and flash take fp16/bf16 only
  r.add(c, Suite::extended);
  for (kernels::AttentionBackend be :
       {kernels::AttentionBackend::unfused, kernels::AttentionBackend::flash}) {
    c = head, c.backend = be;
    if (be != kernels::AttentionBackend::flash || c.model.hidden / c.model.heads == 64)
      r.add(c, Suite::extended);
  }
}

void register_cases() {
  Registry r;
  r.search = flag_bool("train_search", true, "TrainStep: search cuBLASLt algorithms per GEMM");
  r.graph = flag_bool("train_graph", false,
                      "TrainStep on one GPU: time each step as one replay of a CUDA graph of the "
                      "step (/graph:on; dropout 0)");
  const float dropout = block::dropout_flag("train", "TrainStep (BERT, GPT-2; Llama has none)");
  const std::vector<std::string> models = block::choice_list_flag(
      "train_models", "TrainStep models (default: the seeds' headline cases and knob sweeps)", {},
      kernels::lm_model_names());
  const std::vector<int> seqs =
      block::int_list_flag("train_seqs", "TrainStep sequence lengths", {});
  const std::vector<int> batches =
      block::int_list_flag("train_batches", "TrainStep batch sizes", {});
  const std::vector<std::string> precisions = block::choice_list_flag(
      "train_precisions",
      "TrainStep precisions (bf16, fp16; tf32, fp32 need backends=unfused; fp8: the linear "
      "layers of GPT-2 and Llama in FP8)",
      {"bf16"}, {"bf16", "fp16", "tf32", "fp32", "fp8"});
  const std::string recipe = flag_string(
      "train_fp8_recipe", "delayed",
      "TrainStep fp8 scaling: delayed (amax history of 1024 steps) or current (this step's amax)");
  if (recipe != "delayed" && recipe != "current")
    XF_THROW(InvalidArgument,
             "--xfbench_train_fp8_recipe='" + recipe + "': expected delayed or current");
  const kernels::Fp8Recipe fp8_recipe = kernels::fp8_recipe(recipe);
  const std::vector<std::string> backends = block::choice_list_flag(
      "train_backends", "TrainStep attention backends", {"fused"}, {"unfused", "fused", "flash"});
  const std::vector<int> accums =
      block::int_list_flag("train_accum", "TrainStep accumulation steps", {1});
  const std::vector<std::string> ckpts = block::choice_list_flag(
      "train_ckpt", "TrainStep gradient checkpointing (off, on)", {"off"}, {"off", "on"});
  const std::vector<std::string> adamws = block::choice_list_flag(
      "train_adamw", "TrainStep AdamW (fused, unfused)", {"fused"}, {"fused", "unfused"});
  const ParallelFlags parallel = parallel_flags(r.search);
  const bool given = !models.empty() || !seqs.empty() || !batches.empty();

  std::string tag;
  const kernels::LmModel first = sized_model(models.empty() ? "bert-large" : models.front(), tag);
  r.tag = tag;
  if (given || !tag.empty()) {  // the cross product of what was given, all in the default suite
    for (const std::string& name : models.empty() ? std::vector<std::string>{first.name} : models) {
      std::string t;
      const kernels::LmModel m = sized_model(name, t);
      r.tag = t;
      const bool masked = m.kind == kernels::LmKind::masked;
      Axes axes;
      axes.add("seq", seqs.empty() ? std::vector<int>{m.llama  ? 4096
                                                      : masked ? 128
                                                               : 1024}
                                   : seqs)
          .add("batch", batches.empty() ? std::vector<int>{8} : batches)
          .add("precision", precisions)
          .add("backend", backends)
          .add("accum", accums)
          .add("ckpt", ckpts)
          .add("adamw", adamws);
      axes.for_each([&](const AxisPoint& p) {
        TrainConfig c = base(m, p.integer("seq"), p.integer("batch"), dropout);
        c.precision = kernels::precision_of(parse_dtype(p["precision"]));
        c.fp8.recipe = fp8_recipe;
        c.backend = block::backend_of(p["backend"]);
        c.accum = p.integer("accum"), c.checkpointing = p["ckpt"] == "on";
        c.optimizer =
            p["adamw"] == "fused" ? kernels::OptimizerKind::fused : kernels::OptimizerKind::unfused;
        r.add(c, Suite::core);
      });
    }
    if (parallel.given)
      for (const auto& [c, t] : r.added) add_parallel_cases(c, t, parallel, Suite::core);
    return;
  }

  // The seeds' headline cases (default suite), each knob around them, checkpointing off and on
  // over batches (the largest that fits each way), and the other named sizes.
  const kernels::LmModel bert = kernels::lm_model("bert-large");
  const kernels::LmModel gpt2 = kernels::lm_model("gpt2-medium");
  const TrainConfig heads[] = {base(bert, 128, 64, dropout), base(bert, 512, 16, dropout),
                               base(gpt2, 1024, 8, dropout)};
  for (const TrainConfig& h : heads) r.add(h, Suite::core);
  for (const TrainConfig& h : heads) add_knobs(r, h);
  for (bool ckpt : {false, true}) {
    for (int b : {32, 64, 128, 256, 512}) {
      TrainConfig c = base(bert, 128, b, dropout);
      c.checkpointing = ckpt;
      r.add(c, Suite::extended);
    }
    for (int b : {4, 8, 16, 32, 64}) {
      TrainConfig c = base(gpt2, 1024, b, dropout);
      c.checkpointing = ckpt;
      r.add(c, Suite::extended);
    }
  }
  r.add(base(kernels::lm_model("bert-base"), 128, 64, dropout), Suite::extended);
  r.add(base(kernels::lm_model("bert-base"), 512, 16, dropout), Suite::extended);
  r.add(base(kernels::lm_model("gpt2"), 1024, 8, dropout), Suite::extended);
  r.add(base(kernels::lm_model("gpt2-large"), 1024, 4, dropout), Suite::extended);
  r.add(base(kernels::lm_model("gpt2-xl"), 1024, 2, dropout), Suite::extended);
  // Llama on one GPU (issue 38): bf16 at seq 4096, no dropout; 3B with checkpointing (its
  // parameters, gradients and AdamW state alone take 51 GB), and without at batch 1.
  const kernels::LmModel llama1b = kernels::lm_model("llama-3.2-1b"),
                         llama3b = kernels::lm_model("llama-3.2-3b");
  for (bool ckpt : {false, true}) {
    TrainConfig c = base(llama1b, 4096, 4, dropout);
    c.checkpointing = ckpt;
    r.add(c, Suite::extended);
    c = base(llama3b, 4096, ckpt ? 2 : 1, dropout);
    c.checkpointing = ckpt;
    r.add(c, Suite::extended);
  }
  // ... and in FP8 (issue 34), the recipe by flag.
  for (const kernels::LmModel& m : {llama1b, llama3b}) {
    TrainConfig c = base(m, 4096, m.hidden == llama1b.hidden ? 4 : 1, dropout);
    c.precision = kernels::Precision::fp8, c.fp8.recipe = fp8_recipe;
    r.add(c, Suite::extended);
  }

  // Multi-GPU: the seeds' BERT-large and (for ZeRO-2's memory) gpt2-large, per-GPU batches.
  add_parallel_cases(heads[0], "", parallel, Suite::core);
  add_parallel_cases(base(kernels::lm_model("gpt2-large"), 1024, 4, dropout), "", parallel,
                     Suite::core);
  add_parallel_cases(heads[1], "", parallel, Suite::extended);
  add_parallel_cases(heads[2], "", parallel, Suite::extended);
}

}  // namespace
}  // namespace xfbench::train

XFBENCH_PLUGIN("train_step", "1.0.0",
               "A whole training step of BERT masked LM and GPT-2 causal LM (forward, fused "
               "cross-entropy, backward, clipping, AdamW) with the seeds' knobs",
               xfbench::train::register_cases)
