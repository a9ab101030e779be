// LlamaBlock: the model preset, FLOP formula, configuration checks and flags (CPU); the GPU block
// against the float64 reference (three backends, both dtypes, forward and every gradient, grouped-
// query attention at head dims 64 and 128, rotary embeddings past position 4096) and the causal
// mask (skipped without a GPU).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "block_init.hpp"
#include "block_validate.hpp"
#include "kernels/models/transformer_block.hpp"
#include "test_blocks.hpp"
#include "test_gpu.hpp"
#include "test_host.hpp"
#include "xfbench/xfbench.hpp"

using namespace xfbench;
using kernels::AttentionBackend;
using kernels::BlockConfig;
using kernels::BlockPart;
using kernels::Precision;
using kernels::TransformerBlock;

namespace {

constexpr AttentionBackend kBackends[] = {AttentionBackend::unfused, AttentionBackend::fused,
                                          AttentionBackend::flash};

kernels::RopeConfig llama31_rope() {
  kernels::RopeConfig r;
  r.theta = 500000.0, r.factor = 8.0;
  return r;
}

// llama-3.1-8b's layer.
BlockConfig llama8b() { return kernels::llama_block(4096, 32, 8, 128, 14336, llama31_rope()); }

// A small Llama layer with `heads` query heads sharing `kv` key/value heads of `d`.
BlockConfig small(int heads, int kv, int d) {
  return kernels::llama_block(heads * d, heads, kv, d, 2 * heads * d, llama31_rope());
}

// Whether the backend can run this block forward (and backward) here; else the reason.
std::string unsupported(const BlockConfig& c) {
  try {
    kernels::check_block_config(c);
    if (c.backend == AttentionBackend::flash || c.precision == Precision::fp8) {
      TransformerBlock probe(c);  // the flash backward and FP8 products are facts of the machine
    }
  } catch (const Unsupported& e) {
    return e.message();
  }
  return "";
}

}  // namespace

TEST(LlamaConfig, PresetIsHfLlamaDecoderLayer) {
  const BlockConfig c = llama8b();
  EXPECT_EQ(c.name, "LlamaBlock");
  EXPECT_EQ(c.placement, kernels::NormPlacement::pre);
  EXPECT_EQ(c.norm, kernels::NormKind::rmsnorm);
  EXPECT_FLOAT_EQ(c.eps, 1e-5f);
  EXPECT_EQ(c.activation, kernels::Activation::silu);
  EXPECT_TRUE(c.gated_ffn && c.causal && c.rotary && c.scale_scores);
  EXPECT_FALSE(c.linear_bias || c.ffn_dropout || c.relative_bias || c.cross_attention);
  EXPECT_EQ(c.attention_dropout, 0.f);
  EXPECT_EQ(c.residual_dropout, 0.f);
  EXPECT_EQ(c.head_dim(), 128);
  EXPECT_EQ(c.kv_head_count(), 8);
  EXPECT_EQ(c.qkv_width(), 4096 + 2 * 8 * 128);
}

// forward 2·b·s·h·(A + 2·kv·d) + 2·b·s·A·h + 6·b·s·h·I + 4·b·s²·A; TFLOPS_causal halves the s²
// term.
TEST(LlamaFlops, GroupedQueryRule) {
  BlockConfig c = llama8b();
  c.batch = 2, c.seq = 4096;
  const double b = 2, s = 4096, h = 4096, A = 4096, kv = 8 * 128, I = 14336;
  const double linear = 2 * b * s * h * (A + 2 * kv) + 2 * b * s * A * h + 6 * b * s * h * I;
  EXPECT_DOUBLE_EQ(kernels::block_forward_flops(c), linear + 4 * b * s * s * A);
  EXPECT_DOUBLE_EQ(kernels::block_forward_flops(c, BlockPart::layer, true),
                   linear + 2 * b * s * s * A);
  // Without grouped-query attention the attention terms are the seeds' 8bshA + 4bs²A.
  BlockConfig m = kernels::llama_block(1024, 16, 16, 64, 4096, llama31_rope());
  m.batch = 4, m.seq = 512;
  const double T = 4 * 512.0;
  EXPECT_DOUBLE_EQ(kernels::block_forward_flops(m),
                   8 * T * 1024 * 1024 + 4 * 4 * 512.0 * 512 * 1024 + 6 * T * 1024 * 4096);
}

TEST(LlamaConfig, WhatEachBackendTakes) {
  BlockConfig c = llama8b();
  c.seq = 4096, c.batch = 2;
  c.backend = AttentionBackend::fused;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  c.backend = AttentionBackend::unfused;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  c.seq = 8192;  // the unfused softmax's widest row is 4096: that backend skips, the others run
  EXPECT_THROW(kernels::check_block_config(c), Unsupported);
  c.backend = AttentionBackend::fused;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  BlockConfig bad = c;
  bad.kv_heads = 5;  // 32 query heads do not split over 5
  EXPECT_THROW(kernels::check_block_config(bad), InvalidArgument);
  bad = c;
  bad.rope.theta = 0;
  EXPECT_THROW(kernels::check_block_config(bad), InvalidArgument);
  bad = c;
  bad.tp_size = 16;  // 32 query heads split over 16 ranks, 8 key/value heads do not
  EXPECT_THROW(kernels::check_block_config(bad), InvalidArgument);
  bad.tp_size = 8;
  EXPECT_NO_THROW(kernels::check_block_config(bad));
  bad = c;
  bad.backend = AttentionBackend::flash, bad.seq = 4100;
  EXPECT_THROW(kernels::check_block_config(bad), Unsupported);
  // HF's modules alone (LlamaAttention, LlamaMLP, the first norm and the projection), forward
  // only; GPT-2's biased block has no such parts.
  c.seq = 4096, c.backward = false;
  for (BlockPart p : {BlockPart::attention, BlockPart::ffn, BlockPart::norm_qkv})
    EXPECT_NO_THROW(kernels::check_block_config(c, p)) << kernels::to_string(p);
  c.backward = true;
  EXPECT_THROW(kernels::check_block_config(c, BlockPart::ffn), InvalidArgument);
  c.backward = false;
  EXPECT_THROW(kernels::check_block_config(c, BlockPart::dense), InvalidArgument);
  BlockConfig gpt2 = kernels::gpt2_block(1024, 16, 4096);
  gpt2.backward = false;
  EXPECT_THROW(kernels::check_block_config(gpt2, BlockPart::attention), InvalidArgument);
  // llama-3.1-70b's hidden 8192 is within the norms' width.
  BlockConfig big = kernels::llama_block(8192, 64, 8, 128, 28672, llama31_rope());
  big.backend = AttentionBackend::fused;
  EXPECT_NO_THROW(kernels::check_block_config(big));
}

namespace {
std::string llama_names(const std::string& listing) {
  return xftest::listed_names(listing, {"LlamaBlock/"});
}
}  // namespace

// Names: llama-3.1-8b untagged, the other named models as /model:<name>, custom sizes spelled
// out; the default suite holds the bf16 headline; sizes that cannot be built exit 2.
TEST(LlamaFlags, NamesModelsAndErrors) {
  const std::string env = "CUDA_VISIBLE_DEVICES=";
  xftest::HostResult r = xftest::run_host(
      "--xfbench_suite=all --benchmark_list_tests --benchmark_filter=LlamaBlock/", env);
  ASSERT_EQ(r.code, 0) << r.err;
  std::size_t lines = 0;
  for (char ch : llama_names(r.out)) lines += ch == '\n';
  // dtypes x (backends, passes, seqs, batches; and the parts: attention per backend, mlp,
  // rmsnorm_qkv)
  EXPECT_EQ(lines, 2u * (3 * 2 * 3 * 5 + 5));
  for (const char* name : {"LlamaBlock/unfused/bf16/fwd/seq:2048/batch:1\n",
                           "LlamaBlock/fused/bf16/fwdbwd/seq:4096/batch:2\n",
                           "LlamaBlock/flash/fp16/fwd/seq:8192/batch:16\n",
                           "LlamaBlock/part:attention_fused/bf16/fwd/seq:4096/batch:2\n",
                           "LlamaBlock/part:mlp/bf16/fwd/seq:4096/batch:2\n",
                           "LlamaBlock/part:rmsnorm_qkv/fp16/fwd/seq:4096/batch:2\n"})
    EXPECT_NE(llama_names(r.out).find(name), std::string::npos) << name << r.out;
  r = xftest::run_host("--benchmark_list_tests",
                       env);  // the default suite (a filter picks from all)
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(llama_names(r.out),
            "LlamaBlock/fused/bf16/fwd/seq:4096/batch:2\n"
            "LlamaBlock/fused/bf16/fwdbwd/seq:4096/batch:2\n");
  EXPECT_EQ(xftest::listing("--xfbench_llama_model=llama-3.2-1b --benchmark_list_tests "
                            "--benchmark_filter=LlamaBlock/flash/bf16/fwdbwd/seq:4096/batch:4/",
                            "LlamaBlock/"),
            "LlamaBlock/flash/bf16/fwdbwd/seq:4096/batch:4/model:llama-3.2-1b\n");
  EXPECT_EQ(xftest::listing(
                "--xfbench_llama_hidden=1024 --xfbench_llama_heads=8 --xfbench_llama_kv_heads=2 "
                "--xfbench_llama_inter=2816 --xfbench_llama_seqs=512 --xfbench_llama_batches=4 "
                "--xfbench_llama_dtypes=bf16 --xfbench_llama_backends=fused --benchmark_list_tests "
                "--benchmark_filter=LlamaBlock/fused/",
                "LlamaBlock/"),
            "LlamaBlock/fused/bf16/fwd/seq:512/batch:4/hidden:1024/heads:8/kv_heads:2/"
            "head_dim:128/inter:2816\n"
            "LlamaBlock/fused/bf16/fwdbwd/seq:512/batch:4/hidden:1024/heads:8/kv_heads:2/"
            "head_dim:128/inter:2816\n");

  // The parts follow the seqs and batches given, and fp8 names its recipe.
  EXPECT_EQ(
      xftest::listing(
          "--xfbench_llama_seqs=2048 --xfbench_llama_batches=1 --xfbench_llama_dtypes=fp8 "
          "--xfbench_llama_fp8_recipe=current --benchmark_list_tests --benchmark_filter=part:mlp",
          "LlamaBlock/"),
      "LlamaBlock/part:mlp/fp8/recipe:current/fwd/seq:2048/batch:1\n");

  // A model that cannot be built: the message names the first case's run (seq 2048, batch 1).
  r = xftest::run_host("--xfbench_llama_kv_heads=5 --benchmark_list_tests", env);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("key/value heads"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("batch 1, seq 2048"), std::string::npos) << r.err;
  // A head dim one backend cannot take (cuDNN's SDPA: up to 128) is no bad input: that backend's
  // cases skip with the reason when run, the others run.
  r = xftest::run_host("--xfbench_llama_head_dim=256 --xfbench_suite=all --benchmark_list_tests",
                       env);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("LlamaBlock/unfused/bf16/fwd/seq:2048/batch:1/hidden:4096/heads:32/"
                       "kv_heads:8/head_dim:256/inter:14336"),
            std::string::npos)
      << r.out;
  r = xftest::run_host("--xfbench_llama_model=llama-2-7b --benchmark_list_tests", env);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--xfbench_llama_model: unknown model 'llama-2-7b'"), std::string::npos)
      << r.err;
}

class LlamaGpu : public ::testing::TestWithParam<std::tuple<AttentionBackend, Precision, bool>> {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }
};

// Grouped-query attention with 2 query heads per key/value head at head dims 64 and 128 (4 heads
// over 2, and 2 over 1), forward and every gradient; a backend that cannot take a shape skips it
// with its reason.
TEST_P(LlamaGpu, MatchesFloat64Reference) {
  auto [backend, precision, backward] = GetParam();
  for (int d : {64, 128}) {
    BlockConfig c = d == 64 ? small(4, 2, 64) : small(2, 1, 128);
    c.precision = precision, c.backend = backend;
    const std::string why = unsupported(c);
    if (!why.empty()) {
      std::printf("  head dim %d: skipped: %s\n", d, why.c_str());
      continue;
    }
    std::string worst;
    ASSERT_NO_THROW(worst = block::validate_block(c, BlockPart::layer, backward)) << d;
    std::printf("  head dim %d: %s\n", d, worst.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, LlamaGpu,
                         ::testing::Combine(::testing::ValuesIn(kBackends),
                                            ::testing::Values(Precision::fp16, Precision::bf16,
                                                              Precision::fp8),
                                            ::testing::Bool()));

// fp8's other recipe (the instantiation above runs the default, delayed): scales from each cast's
// own amax, the whole layer forward and backward on cuDNN's attention.
TEST(LlamaGpuFp8, CurrentScalingMatchesFloat64Reference) {
  SKIP_WITHOUT_GPU();
  BlockConfig c = small(4, 2, 64);
  c.precision = Precision::fp8, c.backend = AttentionBackend::fused;
  c.fp8.recipe = kernels::Fp8Recipe::current;
  const std::string why = unsupported(c);
  if (!why.empty()) GTEST_SKIP() << why;
  std::string worst;
  ASSERT_NO_THROW(worst = block::validate_block(c, BlockPart::layer, true));
  std::printf("  current scaling: %s\n", worst.c_str());
}

// fp8 at a head dim whose half is no multiple of 8 (24): RoPE's backward cannot write wqkv's FP8
// gradient in its tile pass there, so the block rotates in bf16 and casts after, and the layer
// still matches the reference (before that fallback the backward threw).
TEST(LlamaGpuFp8, HeadDimWhoseHalfIsNoMultipleOf8) {
  SKIP_WITHOUT_GPU();
  BlockConfig c = small(2, 1, 24);
  c.precision = Precision::fp8, c.backend = AttentionBackend::unfused;
  const std::string why = unsupported(c);
  if (!why.empty()) GTEST_SKIP() << why;
  std::string worst;
  ASSERT_NO_THROW(worst = block::validate_block(c, BlockPart::layer, true));
  std::printf("  head dim 24: %s\n", worst.c_str());
}

// SwiGLU in the products' epilogues (ffn_products=fused, gemm_fused.hpp: the gate's product into
// pre's first half, then the up projection's with silu(gate)·up in its epilogue; the down
// projection's data gradient writing both halves of dpre): the layer forward and every gradient,
// and the MLP part forward (a pre-norm block's parts run forward only), against float64, both
// dtypes.
TEST(LlamaGpuFfnProducts, FusedMatchFloat64Reference) {
  SKIP_WITHOUT_GPU();
  for (Precision precision : {Precision::fp16, Precision::bf16}) {
    BlockConfig c = small(4, 2, 64);
    c.precision = precision, c.backend = AttentionBackend::fused;
    c.ffn_products = kernels::FfnProducts::fused;
    std::string why;
    if (!kernels::ffn_products_fusable(c, BlockPart::layer, &why)) GTEST_SKIP() << why;
    for (auto [part, backward] : {std::pair{BlockPart::layer, true}, {BlockPart::ffn, false}}) {
      std::string worst;
      ASSERT_NO_THROW(worst = block::validate_block(c, part, backward))
          << kernels::to_string(part) << " " << kernels::to_string(precision);
      std::printf("  %s %s%s: %s\n", kernels::to_string(part), kernels::to_string(precision),
                  backward ? " fwd+bwd" : " fwd", worst.c_str());
    }
    EXPECT_EQ(TransformerBlock(c).ffn_products(), "ffn swiglu fused (as configured)");
  }
}

// tune() times the SwiGLU products fused against unfused on the block's tensors, the forward's and
// the backward's apart (both write and read the same pre), and every block of the shape keeps the
// choices, named in the label.
TEST(LlamaGpuFfnProducts, TuneChoosesOnceForEveryBlockOfTheShape) {
  SKIP_WITHOUT_GPU();
  BlockConfig c = small(8, 2, 64);
  c.precision = Precision::bf16, c.backend = AttentionBackend::fused;
  c.batch = 4, c.seq = 256;
  std::string why;
  if (!kernels::ffn_products_fusable(c, BlockPart::layer, &why)) GTEST_SKIP() << why;
  Stream s;
  TransformerBlock a(c), b(c);
  EXPECT_EQ(a.ffn_products(), "ffn swiglu unfused (not searched)");
  block::init_block(a, 5, s);
  a.tune(s);
  const std::string chosen = a.ffn_products();  // forward and backward chosen apart
  EXPECT_TRUE(chosen.rfind("ffn swiglu fwd fused, bwd ", 0) == 0 ||
              chosen.rfind("ffn swiglu fwd unfused, bwd ", 0) == 0)
      << chosen;
  EXPECT_NE(chosen.find(": fwd: fused "), std::string::npos) << chosen;
  EXPECT_NE(chosen.find("; bwd: fused "), std::string::npos) << chosen;
  EXPECT_EQ(b.ffn_products(), chosen);  // b never tuned: the shape's choice
  std::printf("  %s\n", chosen.c_str());
}

// The parts forward (LlamaAttention per backend, LlamaMLP, RMSNorm + QKV projection) against the
// float64 reference, both dtypes.
TEST(LlamaGpuParts, MatchFloat64Reference) {
  SKIP_WITHOUT_GPU();
  for (Precision precision : {Precision::fp16, Precision::bf16, Precision::fp8})
    for (BlockPart part : {BlockPart::attention, BlockPart::ffn, BlockPart::norm_qkv})
      for (AttentionBackend be : kBackends) {
        if (part != BlockPart::attention && be != AttentionBackend::fused) continue;
        BlockConfig c = small(4, 2, 64);
        c.precision = precision, c.backend = be, c.backward = false;
        std::string worst;
        ASSERT_NO_THROW(worst = block::validate_block(c, part, false))
            << kernels::to_string(part) << " " << kernels::to_string(be);
        std::printf("  %s %s %s: %s\n", kernels::to_string(part), kernels::to_string(be),
                    kernels::to_string(precision), worst.c_str());
      }
}

// Rotary embeddings at positions past 4096 (Llama-3.1's scaled frequencies): one sequence of
// 4,160 tokens through a narrow layer, forward and every gradient, on cuDNN's attention.
TEST(LlamaGpuShapes, LongSequenceRotaryPositions) {
  SKIP_WITHOUT_GPU();
  BlockConfig c = small(2, 1, 64);
  c.precision = Precision::bf16, c.backend = AttentionBackend::fused;
  c.batch = 1, c.seq = 4160;
  std::string worst;
  ASSERT_NO_THROW(worst = block::validate_block_as_given(c, BlockPart::layer, true));
  std::printf("  seq 4160: %s\n", worst.c_str());
}

using xftest::rows;

// Causality, exactly: new tokens after position p leave the outputs before p bit for bit
// unchanged; and new output gradients before p leave the input gradients from p on unchanged
// (cuDNN's backward accumulates dQ with atomics: 1e-3 there).
TEST(LlamaGpuCausal, LaterTokensDoNotReachEarlierPositions) {
  SKIP_WITHOUT_GPU();
  for (AttentionBackend be : kBackends) {
    SCOPED_TRACE(kernels::to_string(be));
    BlockConfig c = small(4, 2, 64);
    c.precision = Precision::bf16;
    c.batch = 2, c.seq = 128, c.backend = be;
    if (!unsupported(c).empty()) {
      std::printf("  %s: skipped: %s\n", kernels::to_string(be), unsupported(c).c_str());
      continue;
    }
    const int p = 80;  // inside the second 64-key tile
    Stream s;
    TransformerBlock blk(c);
    block::init_block(blk, 21, s);
    auto run = [&] {
      blk.forward(s);
      blk.backward(s);
      s.sync();
    };
    run();
    const std::vector<double> out0 = block::download(blk, "out", Dtype::bf16, s),
                              dx0 = block::download(blk, "dx", Dtype::bf16, s);
    std::vector<std::uint16_t> x0(blk.elements("x"));
    ASSERT_EQ(cudaMemcpy(x0.data(), blk.tensor("x"), x0.size() * 2, cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (int b = 0; b < c.batch; ++b)  // new tokens from p on
      fill_uniform(
          static_cast<char*>(blk.tensor("x")) + (std::size_t(b) * c.seq + p) * c.hidden * 2,
          std::size_t(c.seq - p) * c.hidden, Dtype::bf16, 77 + b, -1.0, 1.0, s);
    run();
    const std::vector<double> out1 = block::download(blk, "out", Dtype::bf16, s);
    EXPECT_TRUE(rows(out1, c, 0, p) == rows(out0, c, 0, p));
    EXPECT_GT(compare(rows(out1, c, p, c.seq), rows(out0, c, p, c.seq)).rel_l2_error, 0.1);

    ASSERT_EQ(cudaMemcpy(blk.tensor("x"), x0.data(), x0.size() * 2, cudaMemcpyHostToDevice),
              cudaSuccess);
    for (int b = 0; b < c.batch; ++b)  // new output gradients before p
      fill_uniform(static_cast<char*>(blk.tensor("dout")) + std::size_t(b) * c.seq * c.hidden * 2,
                   std::size_t(p) * c.hidden, Dtype::bf16, 91 + b, -1.0, 1.0, s);
    run();
    const std::vector<double> dx1 = block::download(blk, "dx", Dtype::bf16, s);
    const Comparison later = compare(rows(dx1, c, p, c.seq), rows(dx0, c, p, c.seq));
    if (be == AttentionBackend::fused)
      EXPECT_LT(later.rel_l2_error, 1e-3) << later.describe();
    else
      EXPECT_TRUE(rows(dx1, c, p, c.seq) == rows(dx0, c, p, c.seq)) << later.describe();
    EXPECT_GT(compare(rows(dx1, c, 0, p), rows(dx0, c, 0, p)).rel_l2_error, 0.1);
  }
}
