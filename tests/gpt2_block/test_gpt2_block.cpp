// GPT2Block: the model preset, FLOP formula, configuration checks and flags (CPU); the GPU block
// against the float64 reference (three backends, both dtypes, tf32/fp32 on the unfused one,
// forward and every gradient), odd head counts and widths, gpt2-xl, the causal mask, and dropout
// (skipped without a GPU).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
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

// Whether xfbench's flash attention has a causal backward on this machine.
bool flash_causal_backward() {
  kernels::AttentionDesc d =
      kernels::self_attention_desc(Precision::fp16, 1, 1, 64, 64, kernels::QkvLayout::bshd);
  d.causal = true;
  return kernels::FlashAttention(d).has_backward();
}

bool trainable(AttentionBackend be) {
  return be != AttentionBackend::flash || flash_causal_backward();
}

}  // namespace

TEST(Gpt2Config, PresetIsHfGpt2Block) {
  const BlockConfig c = kernels::gpt2_block(1024, 16, 4096);
  EXPECT_EQ(c.placement, kernels::NormPlacement::pre);
  EXPECT_EQ(c.activation, kernels::Activation::gelu_tanh);
  EXPECT_TRUE(c.causal);
  EXPECT_FLOAT_EQ(c.eps, 1e-5f);
  EXPECT_FLOAT_EQ(c.attention_dropout, 0.1f);
  EXPECT_FLOAT_EQ(c.residual_dropout, 0.1f);
  EXPECT_EQ(c.name, "GPT2Block");
}

// The seeds count the full s² attention although it is causal: 24·b·s·h² + 4·b·s²·h.
TEST(Gpt2Flops, SeedsFormula) {
  BlockConfig c = kernels::gpt2_block(1024, 16, 4096);
  c.batch = 64, c.seq = 1024;
  const double b = 64, s = 1024, h = 1024;
  EXPECT_DOUBLE_EQ(kernels::block_forward_flops(c), 24 * b * s * h * h + 4 * b * s * s * h);
}

TEST(Gpt2Config, WhatEachBackendTakes) {
  for (AttentionBackend be : kBackends) {  // gpt2-xl: 25 heads of 64
    BlockConfig c = kernels::gpt2_block(1600, 25, 6400);
    c.seq = 1024, c.backend = be;
    EXPECT_NO_THROW(kernels::check_block_config(c)) << kernels::to_string(be);
  }
  BlockConfig c = kernels::gpt2_block(1200, 15, 4800);  // head dim 80
  c.seq = 512;
  c.backend = AttentionBackend::unfused;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  c.backend = AttentionBackend::fused;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  c.backend = AttentionBackend::flash;
  EXPECT_THROW(kernels::check_block_config(c), Unsupported);
  c = kernels::gpt2_block(2048, 8, 8192);  // head dim 256
  EXPECT_THROW(kernels::check_block_config(c), Unsupported);
  c.backend = AttentionBackend::unfused;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  // A pre-LN block runs whole: BERT's parts are not its breakdown.
  EXPECT_THROW(kernels::check_block_config(c, BlockPart::ffn), InvalidArgument);
}

// FP8 linears take GPT-2's biased pre-LN block up to hidden 4096 and beyond while the QKV bias
// gradient fits the column sums (16384 wide: FP8 has no bias-gradient epilogue); BERT's post-LN
// block too, not tensor parallelism.
TEST(Gpt2Config, Fp8TakesTheBiasedPreNormBlock) {
  BlockConfig c = kernels::gpt2_block(4096, 32, 16384);
  c.seq = 2048, c.batch = 8, c.precision = Precision::fp8, c.backend = AttentionBackend::fused;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  c.precision = Precision::bf16;  // the same widths in bf16: the MLP's bias gradient of 16384
  EXPECT_NO_THROW(kernels::check_block_config(c));
  c = kernels::gpt2_block(5504, 43, 16384);  // QKV 16512 wide: bf16 takes cuBLASLt's epilogue
  c.precision = Precision::bf16;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  c.precision = Precision::fp8;
  EXPECT_THROW(kernels::check_block_config(c), Unsupported);
  BlockConfig bert;  // post-LN
  bert.precision = Precision::fp8;
  EXPECT_NO_THROW(kernels::check_block_config(bert));
  bert.tp_size = 2;
  EXPECT_THROW(kernels::check_block_config(bert), Unsupported);
}

// Names: gpt2-medium untagged, the other named models as /model:<name>, custom sizes spelled out;
// dimensions that cannot be built exit 2 with the reason, before any GPU work.
namespace {
// The GPT2Block names of a host listing.
std::string gpt2_names(const std::string& listing) {
  return xftest::listed_names(listing, {"GPT2Block/"});
}
}  // namespace

TEST(Gpt2Flags, NamesModelsAndErrors) {
  const std::string env = "CUDA_VISIBLE_DEVICES=";
  xftest::HostResult r =
      xftest::run_host("--benchmark_list_tests --benchmark_filter=GPT2Block/", env);
  ASSERT_EQ(r.code, 0) << r.err;
  std::size_t lines = 0;
  for (char ch : gpt2_names(r.out)) lines += ch == '\n';
  EXPECT_EQ(lines, 2u * 3 * 2 * 2 * 6);  // dtypes, backends, passes, seqs, batches
  for (const char* name : {"GPT2Block/unfused/fp16/fwd/seq:512/batch:2\n",
                           "GPT2Block/fused/fp16/fwdbwd/seq:1024/batch:64\n",
                           "GPT2Block/flash/bf16/fwd/seq:1024/batch:32\n"})
    EXPECT_NE(gpt2_names(r.out).find(name), std::string::npos) << name << r.out;
  EXPECT_EQ(xftest::listing("--xfbench_gpt2_model=gpt2-xl --benchmark_list_tests "
                            "--benchmark_filter=GPT2Block/flash/fp16/fwdbwd/seq:1024/batch:64/",
                            "GPT2Block/"),
            "GPT2Block/flash/fp16/fwdbwd/seq:1024/batch:64/model:gpt2-xl\n");
  EXPECT_EQ(xftest::listing(
                "--xfbench_gpt2_hidden=768 --xfbench_gpt2_heads=12 --xfbench_gpt2_seqs=128 "
                "--xfbench_gpt2_batches=4 --xfbench_gpt2_dtypes=bf16 --xfbench_gpt2_backends=fused "
                "--benchmark_list_tests --benchmark_filter=GPT2Block/",
                "GPT2Block/"),
            "GPT2Block/fused/bf16/fwd/seq:128/batch:4/model:gpt2\n"
            "GPT2Block/fused/bf16/fwdbwd/seq:128/batch:4/model:gpt2\n");
  EXPECT_EQ(
      xftest::listing("--xfbench_gpt2_hidden=1200 --xfbench_gpt2_heads=15 --benchmark_list_tests "
                      "--benchmark_filter=GPT2Block/unfused/fp16/fwd/seq:512/batch:8/",
                      "GPT2Block/"),
      "GPT2Block/unfused/fp16/fwd/seq:512/batch:8/hidden:1200/heads:15/inner:4800\n");

  // FP8 linears name their recipe; the GPT layer of hidden 4096 (MLP 16384: its bias gradient
  // is within the column sums' width) in both recipes.
  EXPECT_EQ(xftest::listing(
                "--xfbench_gpt2_hidden=4096 --xfbench_gpt2_heads=32 --xfbench_gpt2_seqs=2048 "
                "--xfbench_gpt2_batches=8 --xfbench_gpt2_dtypes=bf16,fp8 "
                "--xfbench_gpt2_fp8_recipe=current "
                "--xfbench_gpt2_backends=fused --benchmark_list_tests --benchmark_filter=fwdbwd",
                "GPT2Block/"),
            "GPT2Block/fused/bf16/fwdbwd/seq:2048/batch:8/hidden:4096/heads:32/inner:16384\n"
            "GPT2Block/fused/fp8/recipe:current/fwdbwd/seq:2048/batch:8/hidden:4096/heads:32/"
            "inner:16384\n");

  // Another dropout computes something else: the names say so (HF's 0.1 is not named).
  EXPECT_EQ(xftest::listing("--xfbench_gpt2_dropout_pct=0 --benchmark_list_tests "
                            "--benchmark_filter=GPT2Block/fused/fp16/fwd/seq:1024/batch:64",
                            "GPT2Block/"),
            "GPT2Block/fused/fp16/fwd/seq:1024/batch:64/dropout:0\n");

  r = xftest::run_host("--xfbench_gpt2_heads=15 --benchmark_list_tests", env);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("hidden is not divisible by heads"), std::string::npos) << r.err;
  r = xftest::run_host("--xfbench_gpt2_model=gpt3 --benchmark_list_tests", env);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--xfbench_gpt2_model: unknown model 'gpt3'"), std::string::npos) << r.err;
  r = xftest::run_host("--xfbench_gpt2_backends=eager --benchmark_list_tests", env);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--xfbench_gpt2_backends: unknown value 'eager'"), std::string::npos)
      << r.err;
}

namespace {
// Why this GPU cannot build the FP8 block (no FP8 products before sm_89), or "".
std::string fp8_unsupported(const BlockConfig& c) {
  try {
    TransformerBlock probe(c);
  } catch (const Unsupported& e) {
    return e.message();
  }
  return "";
}
}  // namespace

class Gpt2Gpu : public ::testing::TestWithParam<std::tuple<AttentionBackend, Precision, bool>> {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }
};

// Small dims (head dim 64, so every backend takes them) keep the float64 reference quick; the
// plugin validates each model itself before timing.
TEST_P(Gpt2Gpu, MatchesFloat64Reference) {
  auto [backend, precision, backward] = GetParam();
  if (backward && !trainable(backend))
    GTEST_SKIP() << "xfbench's flash attention has no causal backward here";
  BlockConfig c = kernels::gpt2_block(256, 4, 1024);
  c.precision = precision, c.backend = backend;
  if (precision == Precision::fp8) {
    const std::string why = fp8_unsupported(c);
    if (!why.empty()) GTEST_SKIP() << why;
  }
  std::string worst;
  ASSERT_NO_THROW(worst = block::validate_block(c, BlockPart::layer, backward));
  std::printf("  worst: %s\n", worst.c_str());
}

INSTANTIATE_TEST_SUITE_P(Backends, Gpt2Gpu,
                         ::testing::Combine(::testing::ValuesIn(kBackends),
                                            ::testing::Values(Precision::fp16, Precision::bf16,
                                                              Precision::fp8),
                                            ::testing::Bool()));

// fp8's other recipe (the instantiation above runs the default, delayed), with the linear biases
// (forward through cuBLASLt's FP8 bias epilogue, gradients as column sums) and GELU of GPT-2.
TEST(Gpt2GpuFp8, CurrentScalingMatchesFloat64Reference) {
  SKIP_WITHOUT_GPU();
  BlockConfig c = kernels::gpt2_block(256, 4, 1024);
  c.precision = Precision::fp8, c.backend = AttentionBackend::fused;
  c.fp8.recipe = kernels::Fp8Recipe::current;
  const std::string why = fp8_unsupported(c);
  if (!why.empty()) GTEST_SKIP() << why;
  std::string worst;
  ASSERT_NO_THROW(worst = block::validate_block(c, BlockPart::layer, true));
  std::printf("  current scaling: %s\n", worst.c_str());
}

// fp32 storage (the training step's tf32 and fp32) on the backend that takes it.
INSTANTIATE_TEST_SUITE_P(Fp32Storage, Gpt2Gpu,
                         ::testing::Combine(::testing::Values(AttentionBackend::unfused),
                                            ::testing::Values(Precision::tf32, Precision::fp32),
                                            ::testing::Bool()));

// Five heads of 64 in a 320-wide block, and head dim 80 (flash takes only 64: Unsupported).
TEST(Gpt2GpuShapes, OddHeadCountsAndWidths) {
  SKIP_WITHOUT_GPU();
  for (AttentionBackend be : kBackends) {
    BlockConfig c = kernels::gpt2_block(320, 5, 1280);
    c.backend = be;
    std::string worst;
    ASSERT_NO_THROW(worst = block::validate_block(c, BlockPart::layer, trainable(be)))
        << kernels::to_string(be);
    std::printf("  320/5 %s: %s\n", kernels::to_string(be), worst.c_str());
    c = kernels::gpt2_block(400, 5, 1600);
    c.backend = be;
    if (be == AttentionBackend::flash) {
      EXPECT_THROW(block::validate_block(c, BlockPart::layer, false), Unsupported);
      continue;
    }
    ASSERT_NO_THROW(worst = block::validate_block(c, BlockPart::layer, true))
        << kernels::to_string(be);
    std::printf("  400/5 %s: %s\n", kernels::to_string(be), worst.c_str());
  }
}

// gpt2-xl's widths (1600 = 25 heads of 64, MLP 6400) in the backend whose reference is shared
// with the unfused one, forward and every gradient.
TEST(Gpt2GpuShapes, Gpt2XlWidths) {
  SKIP_WITHOUT_GPU();
  BlockConfig c = kernels::gpt2_block(1600, 25, 6400);
  std::string worst;
  ASSERT_NO_THROW(worst = block::validate_block(c, BlockPart::layer, true));
  std::printf("  gpt2-xl fused: %s\n", worst.c_str());
}

namespace {

using xftest::rows;

// New random values in rows [from, to) of every sequence of a [batch · seq, hidden] tensor.
void refill_rows(TransformerBlock& blk, const char* name, int from, int to, std::uint64_t seed,
                 cudaStream_t s) {
  const BlockConfig& c = blk.config();
  for (int b = 0; b < c.batch; ++b)
    fill_uniform(
        static_cast<char*>(blk.tensor(name)) + (std::size_t(b) * c.seq + from) * c.hidden * 2,
        std::size_t(to - from) * c.hidden, Dtype::fp16, seed + b, -1.0, 1.0, s);
}

}  // namespace

// Causality, exactly: new tokens after position p leave the outputs before p bit for bit
// unchanged (masked scores give probabilities of exactly 0, and every other kernel works per
// token); and new output gradients before p leave the input gradients from p on unchanged (out_j
// depends on x_i only for i <= j). cuDNN's backward accumulates dQ with atomics, whose order may
// vary, so its input gradients are compared to 1e-3 instead of bit for bit. Dropout is on.
TEST(Gpt2GpuCausal, LaterTokensDoNotReachEarlierPositions) {
  SKIP_WITHOUT_GPU();
  for (AttentionBackend be : kBackends) {
    SCOPED_TRACE(kernels::to_string(be));
    BlockConfig c = kernels::gpt2_block(256, 4, 1024);
    c.batch = 2, c.seq = 128, c.backend = be, c.backward = trainable(be);
    const int p = 80;  // inside the second 64-key tile: flash's diagonal tile is partly masked
    Stream s;
    TransformerBlock blk(c);
    block::init_block(blk, 21, s);
    auto run = [&] {
      blk.forward(s, 3);
      if (c.backward) blk.backward(s, 3);
      s.sync();
    };
    run();
    const std::vector<double> out0 = block::download(blk, "out", Dtype::fp16, s);
    std::vector<std::uint16_t> x0(blk.elements("x"));
    ASSERT_EQ(cudaMemcpy(x0.data(), blk.tensor("x"), x0.size() * 2, cudaMemcpyDeviceToHost),
              cudaSuccess);

    refill_rows(blk, "x", p, c.seq, 77, s);
    run();
    const std::vector<double> out1 = block::download(blk, "out", Dtype::fp16, s);
    EXPECT_TRUE(rows(out1, c, 0, p) == rows(out0, c, 0, p));
    EXPECT_GT(compare(rows(out1, c, p, c.seq), rows(out0, c, p, c.seq)).rel_l2_error, 0.1);
    if (!c.backward) {
      std::printf("  %s: forward only (no causal backward here)\n", kernels::to_string(be));
      continue;
    }

    ASSERT_EQ(cudaMemcpy(blk.tensor("x"), x0.data(), x0.size() * 2, cudaMemcpyHostToDevice),
              cudaSuccess);
    run();
    const std::vector<double> dx0 = block::download(blk, "dx", Dtype::fp16, s);
    refill_rows(blk, "dout", 0, p, 91, s);
    run();
    const std::vector<double> dx1 = block::download(blk, "dx", Dtype::fp16, s);
    const Comparison later = compare(rows(dx1, c, p, c.seq), rows(dx0, c, p, c.seq));
    if (be == AttentionBackend::fused)
      EXPECT_LT(later.rel_l2_error, 1e-3) << later.describe();
    else
      EXPECT_TRUE(rows(dx1, c, p, c.seq) == rows(dx0, c, p, c.seq)) << later.describe();
    EXPECT_GT(compare(rows(dx1, c, 0, p), rows(dx0, c, 0, p)).rel_l2_error, 0.1);
    std::printf("  %s: later dx rel_l2 %.1e\n", kernels::to_string(be), later.rel_l2_error);
  }
}

// Dropout is active in the timed cases: the same step gives the same output, a new step another;
// and a forward-only block (no_grad) computes what a training one does.
TEST(Gpt2GpuDropout, MasksDependOnTheStepOnly) {
  SKIP_WITHOUT_GPU();
  for (AttentionBackend be : kBackends) {
    SCOPED_TRACE(kernels::to_string(be));
    BlockConfig c = kernels::gpt2_block(256, 4, 1024);
    c.batch = 2, c.seq = 64, c.backend = be, c.backward = trainable(be);
    Stream s;
    TransformerBlock blk(c);
    block::init_block(blk, 3, s);
    auto out = [&](std::uint64_t step) {
      blk.forward(s, step);
      if (c.backward) blk.backward(s, step);
      return block::download(blk, "out", Dtype::fp16, s);
    };
    const std::vector<double> first = out(1);
    EXPECT_TRUE(first == out(1));
    EXPECT_GT(compare(out(2), first).rel_l2_error, 1e-2);
    // cuDNN draws its masks per graph (see BertGpuForwardOnly); without a backward there is no
    // training block to compare with.
    if (be == AttentionBackend::fused || !c.backward) continue;
    BlockConfig f = c;
    f.backward = false;
    TransformerBlock infer(f);
    block::init_block(infer, 3, s);
    EXPECT_LT(infer.device_bytes(), blk.device_bytes());
    infer.forward(s, 1);
    EXPECT_TRUE(block::download(infer, "out", Dtype::fp16, s) == first);
  }
}
