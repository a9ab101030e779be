// TrainStep without a GPU: the named models, the seeds' FLOP formula, the synthetic data, the
// memory layout (parameters' segments, chained layers, checkpointing's sharing), the float64
// reference against finite differences of its own loss, and the case names the plugin lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "kernels/cross_entropy.hpp"
#include "kernels/models/detail/language_model_layout.hpp"
#include "step_parts.hpp"
#include "test_host.hpp"
#include "train_case.hpp"
#include "train_test_util.hpp"
#include "xfbench/error.hpp"

using namespace xfbench;
using namespace xfbench::kernels;

TEST(TrainModels, NamedSizes) {
  const LmModel b = lm_model("bert-large");
  EXPECT_EQ(b.kind, LmKind::masked);
  EXPECT_EQ(b.layers, 24);
  EXPECT_EQ(b.hidden, 1024);
  EXPECT_EQ(b.heads, 16);
  EXPECT_EQ(b.intermediate, 4096);
  EXPECT_EQ(b.vocab, 30522);
  EXPECT_EQ(b.token_types, 2);
  EXPECT_EQ(b.padded_vocab(), 30528);
  const LmModel x = lm_model("gpt2-xl");
  EXPECT_EQ(x.kind, LmKind::causal);
  EXPECT_EQ(x.layers, 48);
  EXPECT_EQ(x.hidden, 1600);
  EXPECT_EQ(x.heads, 25);
  EXPECT_EQ(x.vocab, 50257);
  EXPECT_EQ(x.padded_vocab(), 50304);
  EXPECT_FLOAT_EQ(x.eps, 1e-5f);
  EXPECT_EQ(lm_model("bert-base").hidden, 768);
  EXPECT_EQ(lm_model("gpt2").layers, 12);
  EXPECT_EQ(lm_model("gpt2-large").hidden, 1280);
  EXPECT_THROW(lm_model("bert-huge"), InvalidArgument);
}

// The LM head's logits are made in chunks of rows where a whole micro-batch's would pass
// max_logits_bytes (1 GiB): each chunk a divisor of the rows and a multiple of 16.
TEST(TrainLayout, HeadChunksKeepTheLogitsUnderTheirLimit) {
  TrainConfig c;
  c.model = lm_model("gpt2-medium"), c.seq = 1024, c.batch = 8;  // 8192 x 50304 x 2 B: 0.82 GB
  EXPECT_EQ(c.head_chunk_rows(), c.head_rows());
  c.model = lm_model("llama-3.2-1b"), c.seq = 4096, c.batch = 4;  // 16384 x 128256 x 2 B: 4.2 GB
  EXPECT_EQ(c.head_rows(), 16384);
  EXPECT_EQ(c.head_chunk_rows(), 4096);  // 4096 x 128256 x 2 B = 1.05e9 <= 2^30
  c.precision = Precision::fp32;         // four bytes a logit: twice the chunks
  EXPECT_EQ(c.head_chunk_rows(), 2048);
  c.precision = Precision::bf16;
  c.max_logits_bytes = 0;  // nothing fits: the smallest chunk the rows allow
  EXPECT_EQ(c.head_chunk_rows(), 16);
  c.batch = 1, c.seq = 40, c.max_logits_bytes = 1;  // 40 rows: no multiple of 16 divides them
  EXPECT_EQ(c.head_chunk_rows(), 40);
  c.model = lm_model("bert-large"), c.seq = 512, c.batch = 64;  // masked: never chunked
  c.max_logits_bytes = 1;
  EXPECT_EQ(c.head_chunk_rows(), c.head_rows());
  // The memory plan holds one chunk's logits.
  TrainConfig whole = xftest::tiny(LmKind::causal, Precision::bf16), chunked = whole;
  chunked.max_logits_bytes = std::size_t(whole.head_rows() / 4) * whole.model.padded_vocab() * 2;
  EXPECT_EQ(chunked.head_chunk_rows(), whole.head_rows() / 4);
}

// 3·(L·(att + ffn) + 2·s·h·V) per sample, att = 4hs² + 8sh², ffn = 16sh²; 4x with checkpointing.
TEST(TrainFlops, SeedsFormula) {
  TrainConfig c;
  c.model = lm_model("bert-large");
  c.seq = 128;
  const double s = 128, h = 1024, L = 24, V = 30522;
  const double per = L * (4 * h * s * s + 8 * s * h * h + 16 * s * h * h) + 2 * s * h * V;
  EXPECT_DOUBLE_EQ(train_flops_per_sample(c), 3 * per);
  c.checkpointing = true;
  EXPECT_DOUBLE_EQ(train_flops_per_sample(c), 4 * per);
  c.batch = 64, c.accum = 4;  // per sample: batch and accumulation do not change it
  EXPECT_DOUBLE_EQ(train_flops_per_sample(c), 4 * per);
}

TEST(TrainConfigCheck, RejectsWhatCannotRun) {
  TrainConfig c = xftest::tiny(LmKind::masked);
  EXPECT_NO_THROW(check_train_config(c));
  c.seq = 256;  // above the 128 positions
  EXPECT_THROW(check_train_config(c), InvalidArgument);
  c = xftest::tiny(LmKind::masked);
  c.model.heads = 5;  // 64 % 5
  EXPECT_THROW(check_train_config(c), InvalidArgument);
  // tf32/fp32 (fp32 storage): the unfused attention runs them; cuDNN SDPA and flash say why not.
  for (Precision p : {Precision::tf32, Precision::fp32}) {
    c = xftest::tiny(LmKind::causal, p);
    try {
      check_train_config(c);
      ADD_FAILURE() << "no exception for " << to_string(p) << " on the fused attention";
    } catch (const Unsupported& e) {
      EXPECT_NE(e.message().find("fp16 and bf16 only"), std::string::npos) << e.message();
    }
    c.backend = AttentionBackend::unfused;
    EXPECT_NO_THROW(check_train_config(c));
  }
}

TEST(TrainData, MaskedLmLabelsOnlyTheMaskedPositions) {
  TrainConfig c = xftest::tiny(LmKind::masked);
  c.batch = 64, c.seq = 128;
  const TokenBatch d = synthetic_batch(c, 7);
  ASSERT_EQ(int(d.ids.size()), c.tokens());
  EXPECT_EQ(c.masked_per_sequence(), 19);  // round(0.15 · 128)
  ASSERT_EQ(int(d.head_rows.size()), 64 * 19);
  int mask = 0, same = 0;
  for (int b = 0; b < c.batch; ++b) {
    int labelled = 0;
    for (int s = 0; s < c.seq; ++s) labelled += d.labels[b * c.seq + s] != kIgnoreIndex;
    EXPECT_EQ(labelled, 19) << "sequence " << b;
  }
  for (std::size_t r = 0; r < d.head_rows.size(); ++r) {
    const int t = d.head_rows[r];
    EXPECT_EQ(d.head_targets[r], d.labels[t]);
    ASSERT_NE(d.labels[t], kIgnoreIndex);
    mask += d.ids[t] == kMaskTokenId;
    same += d.ids[t] == d.labels[t];
    if (r) EXPECT_LT(d.head_rows[r - 1], t);
  }
  const double n = double(d.head_rows.size());
  EXPECT_NEAR(mask / n, 0.8, 0.04);  // 80% [MASK]; 10% unchanged (+ random hits of the id)
  EXPECT_NEAR(same / n, 0.1, 0.03);
  for (int t : d.type_ids) EXPECT_EQ(t, 0);
  for (int id : d.ids) ASSERT_TRUE(id >= 0 && id < c.model.vocab);
  EXPECT_EQ(synthetic_batch(c, 7).ids, d.ids);  // fixed by the seed
  EXPECT_NE(synthetic_batch(c, 8).ids, d.ids);
}

TEST(TrainData, CausalLmPredictsTheNextToken) {
  TrainConfig c = xftest::tiny(LmKind::causal);
  const TokenBatch d = synthetic_batch(c, 3);
  ASSERT_EQ(int(d.head_rows.size()), c.tokens());
  int counted = 0;
  for (int t = 0; t < c.tokens(); ++t) {
    EXPECT_EQ(d.head_rows[t], t);
    if (t % c.seq == c.seq - 1) {
      EXPECT_EQ(d.labels[t], kIgnoreIndex);
    } else {
      EXPECT_EQ(d.labels[t], d.ids[t + 1]);
      ++counted;
    }
  }
  EXPECT_EQ(counted, c.loss_rows());
}

// A block's tensor list as the lead's block asks for it (names and roles matter, not sizes).
std::vector<kernels::detail::BlockTensor> fake_block() {
  using R = TensorRole;
  return {{"x", R::input, 1024},         {"dx", R::input_grad, 1024}, {"wqkv", R::parameter, 96},
          {"dwqkv", R::gradient, 96},    {"bqkv", R::parameter, 6},   {"dbqkv", R::gradient, 6},
          {"qkv", R::saved, 3072},       {"proj", R::scratch, 1024},  {"out", R::output, 1024},
          {"dout", R::output_grad, 1024}};
}

// Device-dependent sizes, as a GPU would give them.
const kernels::detail::DeviceSizes kSizes{4096, 8192, 1 << 20};

TEST(TrainLayout, ChainsLayersAndSegmentsParameters) {
  TrainConfig c = xftest::tiny(LmKind::masked);
  c.model.layers = 3;
  const kernels::detail::ModelLayout l = kernels::detail::make_layout(c, fake_block(), kSizes);
  // Layer i's input is layer i-1's output; gradients between layers ping-pong.
  const auto t = fake_block();
  EXPECT_EQ(kernels::detail::arena_key(1, 3, false, t[0]),
            kernels::detail::arena_key(0, 3, false, t[8]));
  EXPECT_EQ(kernels::detail::arena_key(1, 3, false, t[1]),
            kernels::detail::arena_key(0, 3, false, t[9]));
  EXPECT_NE(kernels::detail::arena_key(1, 3, false, t[1]),
            kernels::detail::arena_key(1, 3, false, t[9]));
  EXPECT_EQ(kernels::detail::arena_key(2, 3, false, t[9]), "dgrad0");  // the head writes dgrad0
  EXPECT_NE(kernels::detail::arena_key(0, 3, false, t[6]),
            kernels::detail::arena_key(1, 3, false, t[6]));
  EXPECT_EQ(kernels::detail::arena_key(0, 3, true, t[6]),
            kernels::detail::arena_key(1, 3, true, t[6]));
  EXPECT_EQ(kernels::detail::arena_key(0, 3, false, t[7]),
            kernels::detail::arena_key(2, 3, false, t[7]));
  EXPECT_EQ(kernels::detail::arena_key(0, 3, false, t[2]), "");  // parameters: the flat buffers
  // Segments: aligned, disjoint, in order; decay for weights and embeddings only.
  std::size_t end = 0;
  for (const kernels::detail::ParamSlot& p : l.params) {
    EXPECT_EQ(p.offset % 128, 0u) << p.name;
    EXPECT_GE(p.offset, end) << p.name;
    end = p.offset + p.elements;
    const bool no_decay = p.name.find("ln") != std::string::npos || p.name == "decoder_b" ||
                          p.name == "head_b" || p.name.find(".b") != std::string::npos;
    EXPECT_EQ(p.decay, !no_decay) << p.name;
  }
  EXPECT_LE(end, l.param_elements);
  EXPECT_EQ(l.param("word").elements, 512u * 64);
  EXPECT_EQ(l.param("word").used, 512u * 64);
  EXPECT_EQ(l.param("layer2.wqkv").elements, 48u);  // 96 bytes of fp16
  EXPECT_THROW(l.param("layer3.wqkv"), InvalidArgument);
  // Arena slots do not overlap.
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for (const auto& kv : l.arena) spans.push_back({kv.second.offset, kv.second.bytes});
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i)
    EXPECT_GE(spans[i].first, spans[i - 1].first + spans[i - 1].second);
  // The plan: 16 bytes per parameter element (2 weights + 2 gradients + 12 fp32), the arena,
  // the workspaces.
  EXPECT_EQ(l.plan.total(), 16 * l.param_elements + l.arena_bytes + (1u << 20));
  c.checkpointing = true;  // saved activations shared: 2 of the 3 layers' copies go
  const kernels::detail::ModelLayout lc = kernels::detail::make_layout(c, fake_block(), kSizes);
  EXPECT_EQ(l.arena_bytes - lc.arena_bytes, 2 * 3072u);
  c.accum = 4;  // accumulation adds a third 2-byte gradient buffer
  const kernels::detail::ModelLayout la = kernels::detail::make_layout(c, fake_block(), kSizes);
  EXPECT_EQ(la.plan.total() - lc.plan.total(),
            2 * la.param_elements + (la.arena_bytes - lc.arena_bytes));
  // tf32: 4-byte weights that are AdamW's master copy, 4-byte gradients and the two moments: 16
  // bytes per element again, no master part.
  c = xftest::tiny(LmKind::masked, Precision::tf32);
  c.model.layers = 3, c.backend = AttentionBackend::unfused;
  const kernels::detail::ModelLayout lt = kernels::detail::make_layout(c, fake_block(), kSizes);
  EXPECT_EQ(lt.param("layer2.wqkv").elements, 24u);  // 96 bytes of fp32
  EXPECT_EQ(lt.plan.total(), 16 * lt.param_elements + lt.arena_bytes + (1u << 20));
  EXPECT_EQ(lt.plan.describe().find("master"), std::string::npos) << lt.plan.describe();
}

// The reference's gradients against central differences of its own loss, in float64. Llama:
// grouped-query attention (4 heads over 2), RoPE, SwiGLU, RMSNorm, the head tied or not.
void check_reference_gradients(LmKind kind, bool llama = false, bool tied = true) {
  TrainConfig c = llama ? xftest::tiny_llama(Precision::bf16, tied) : xftest::tiny(kind);
  c.model.layers = 1, c.model.hidden = 16, c.model.heads = 2, c.model.intermediate = 32;
  if (llama) c.model.heads = 4, c.model.kv_heads = 2, c.model.head_dim = 8;
  c.model.vocab = 40, c.model.positions = llama ? 131072 : 16, c.batch = 2, c.seq = 8;
  const TokenBatch d = synthetic_batch(c, 5);
  ref::Tensors params = xftest::random_parameters(c.model, 11), grads;
  ref::language_model(c, d, params, &grads);
  for (const std::string& name : ref::language_model_parameters(c.model)) {
    ASSERT_EQ(grads.at(name).size(), params.at(name).size()) << name;
    for (std::size_t i : {std::size_t(0), params.at(name).size() / 2, params.at(name).size() - 1}) {
      const double h = 1e-5, keep = params[name][i];
      params[name][i] = keep + h;
      const double up = ref::language_model(c, d, params, nullptr);
      params[name][i] = keep - h;
      const double down = ref::language_model(c, d, params, nullptr);
      params[name][i] = keep;
      EXPECT_NEAR(grads.at(name)[i], (up - down) / (2 * h), 1e-7) << name << "[" << i << "]";
    }
  }
}

TEST(TrainReference, MaskedLmGradientsMatchFiniteDifferences) {
  check_reference_gradients(LmKind::masked);
}
TEST(TrainReference, CausalLmGradientsMatchFiniteDifferences) {
  check_reference_gradients(LmKind::causal);
}
TEST(TrainReference, LlamaGradientsMatchFiniteDifferences) {
  check_reference_gradients(LmKind::causal, true, true);
  check_reference_gradients(LmKind::causal, true, false);  // llama-3.1-8b's own lm_head
}

TEST(TrainReference, UniformLogitsGiveLnVocab) {
  TrainConfig c = xftest::tiny(LmKind::causal);
  c.model.layers = 1;
  ref::Tensors params = xftest::random_parameters(c.model, 3);
  std::fill(params["word"].begin(), params["word"].end(), 0.0);  // every logit 0
  EXPECT_NEAR(ref::language_model(c, synthetic_batch(c, 1), params, nullptr), std::log(512.0),
              1e-12);
}

TEST(TrainNames, KnobsInTheName) {
  TrainConfig c;
  c.model = lm_model("bert-large");
  c.seq = 128, c.batch = 64;
  EXPECT_EQ(train::case_name(c),
            "TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused");
  c.accum = 4, c.checkpointing = true, c.optimizer = OptimizerKind::unfused;
  c.precision = Precision::fp16, c.backend = AttentionBackend::flash;
  EXPECT_EQ(train::case_name(c, "/layers:2"),
            "TrainStep/flash/bert-large/fp16/seq:128/batch:64/accum:4/ckpt:on/adamw:unfused/"
            "layers:2");
  // Another dropout is another step (the default, HF's 0.1, is not named); Llama has none.
  c.dropout = 0.f;
  EXPECT_EQ(train::case_name(c),
            "TrainStep/flash/bert-large/fp16/seq:128/batch:64/accum:4/ckpt:on/adamw:unfused/"
            "dropout:0");
  c.model = lm_model("llama-3.2-1b");
  EXPECT_EQ(train::case_name(c).find("dropout"), std::string::npos);
}

// Llama's count per token: 3·(L·(2h(h + 2·kv·d) + 2h² + 6hI + 4sh) + 2hV) (issue 38's rule, the
// seeds' extended to grouped-query attention and the gated MLP).
TEST(TrainFlops, LlamaRule) {
  TrainConfig c;
  c.model = lm_model("llama-3.2-1b");
  c.seq = 4096, c.batch = 4, c.dropout = 0.f;
  const double L = 16, h = 2048, kv = 8, d = 64, I = 8192, s = 4096, V = 128256;
  const double per_token =
      3 * (L * (2 * h * (h + 2 * kv * d) + 2 * h * h + 6 * h * I + 4 * s * h) + 2 * h * V);
  EXPECT_NEAR(train_flops_per_sample(c), per_token * s, 1e-9 * per_token * s);
  EXPECT_FALSE(c.model.learned_positions());
  EXPECT_TRUE(c.model.tied_head);
  EXPECT_FALSE(lm_model("llama-3.1-8b").tied_head);
  EXPECT_NO_THROW(check_train_config(c));
  c.dropout = 0.1f;  // Llama has none
  EXPECT_THROW(check_train_config(c), InvalidArgument);
}

// The plugin lists its cases without a GPU: the three headline cases in the default suite, the
// knobs beside them; flags make a cross product; bad flags exit 2.
TEST(TrainPlugin, ListsTheSeedsCases) {
  const auto r = xftest::run_host("--benchmark_list_tests --benchmark_filter=TrainStep");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* name :
       {"TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused",
        "TrainStep/fused/bert-large/bf16/seq:512/batch:16/accum:1/ckpt:off/adamw:fused",
        "TrainStep/fused/gpt2-medium/bf16/seq:1024/batch:8/accum:1/ckpt:off/adamw:fused",
        "TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:unfused",
        "TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:4/ckpt:off/adamw:fused",
        "TrainStep/fused/gpt2-medium/bf16/seq:1024/batch:8/accum:1/ckpt:on/adamw:fused",
        "TrainStep/fused/llama-3.2-1b/bf16/seq:4096/batch:4/accum:1/ckpt:off/adamw:fused",
        "TrainStep/fused/llama-3.2-3b/bf16/seq:4096/batch:2/accum:1/ckpt:on/adamw:fused",
        "TrainStep/unfused/bert-large/tf32/seq:512/batch:16/accum:1/ckpt:off/adamw:fused",
        "TrainStep/flash/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  const auto g = xftest::run_host(
      "--benchmark_list_tests --benchmark_filter=TrainStep --xfbench_train_models=gpt2 "
      "--xfbench_train_batches=2,4 --xfbench_train_ckpt=off,on --xfbench_train_layers=2");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_EQ(std::count(g.out.begin(), g.out.end(), '\n'), 4) << g.out;
  EXPECT_NE(g.out.find("TrainStep/fused/gpt2/bf16/seq:1024/batch:4/accum:1/ckpt:on/adamw:fused/"
                       "layers:2"),
            std::string::npos)
      << g.out;
  EXPECT_EQ(xftest::run_host("--benchmark_list_tests --xfbench_train_models=bert-huge").code, 2);
  EXPECT_EQ(xftest::run_host("--benchmark_list_tests --xfbench_train_seqs=2048").code, 2);
  // Each step one CUDA graph: the one-GPU names end in /graph:on, the multi-GPU ones do not.
  const auto graph = xftest::run_host(
      "--benchmark_list_tests --benchmark_filter=TrainStep --xfbench_train_models=gpt2 "
      "--xfbench_train_dropout_pct=0 --xfbench_train_graph=true --xfbench_train_parallel=dp");
  ASSERT_EQ(graph.code, 0) << graph.err;
  EXPECT_NE(graph.out.find("TrainStep/fused/gpt2/bf16/seq:1024/batch:8/accum:1/ckpt:off/"
                           "adamw:fused/dropout:0/graph:on/"),
            std::string::npos)
      << graph.out;
  EXPECT_NE(graph.out.find("adamw:fused/dropout:0/dp/gpus:"), std::string::npos) << graph.out;
}

// The step-parts line: each part summed over a step's micro-batches, the median over steps (a
// part a step lacks counts 0 there), in the order the parts first ended, and the medians' sum.
TEST(TrainStepParts, LineTakesEachPartsMedianInOrder) {
  using xfbench::train::StepParts;
  const std::vector<StepParts> steps = {
      {{"embeddings", 1.0}, {"blocks forward", 10.0}, {"embeddings", 1.0}, {"optimizer", 3.0}},
      {{"embeddings", 4.0}, {"blocks forward", 12.0}, {"optimizer", 2.0}},
      {{"embeddings", 3.0}, {"blocks forward", 11.0}, {"optimizer", 5.0}, {"late", 1.5}}};
  EXPECT_EQ(xfbench::train::step_parts_line("TrainStep/x", steps),
            "step parts TrainStep/x, median of 3 steps: embeddings 3.00 ms, blocks forward "
            "11.00 ms, optimizer 3.00 ms, late 0.00 ms; sum 17.00 ms");
  EXPECT_EQ(xfbench::train::step_parts_line("one", {{{"optimizer", 2.5}}}),
            "step parts one, median of 1 step: optimizer 2.50 ms; sum 2.50 ms");
}
