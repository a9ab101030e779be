// BertLayer: FLOP formulas and configuration checks (CPU); the GPU layer and its parts against the
// float64 reference, forward and every gradient, each backend and dtype (tf32/fp32 on the unfused
// one), skipped without a GPU.
#include <gtest/gtest.h>

#include <cuda_fp16.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "block_init.hpp"
#include "block_validate.hpp"
#include "kernels/gemm_fused.hpp"
#include "kernels/models/transformer_block.hpp"
#include "test_host.hpp"
#include "xfbench/xfbench.hpp"

using namespace xfbench;
using kernels::AttentionBackend;
using kernels::BlockConfig;
using kernels::BlockPart;

TEST(BertFlops, SeedsFormula) {
  BlockConfig c;  // bert-large
  c.batch = 64, c.seq = 512;
  const double b = 64, s = 512, h = 1024;
  EXPECT_DOUBLE_EQ(kernels::block_forward_flops(c, BlockPart::layer),
                   24 * b * s * h * h + 4 * b * s * s * h);
  EXPECT_DOUBLE_EQ(kernels::block_forward_flops(c, BlockPart::ffn), 16 * b * s * h * h);
  EXPECT_DOUBLE_EQ(kernels::block_forward_flops(c, BlockPart::dense), 8 * b * s * h * h);
  EXPECT_DOUBLE_EQ(kernels::block_forward_flops(c, BlockPart::attention),
                   8 * b * s * h * h + 4 * b * s * s * h);
}

TEST(BlockConfigCheck, RejectsWhatCannotBeBuilt) {
  BlockConfig c;
  c.heads = 15;  // 1024 % 15 != 0
  EXPECT_THROW(kernels::check_block_config(c), InvalidArgument);
  c = BlockConfig{};
  c.hidden = 1040, c.heads = 16;  // head dim 65
  EXPECT_THROW(kernels::check_block_config(c), InvalidArgument);
  c = BlockConfig{};
  c.hidden = 4096, c.heads = 16, c.intermediate = 8192;  // head dim 256: not for cuDNN SDPA
  EXPECT_THROW(kernels::check_block_config(c), Unsupported);
  c.backend = AttentionBackend::unfused;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  c = BlockConfig{};  // fp8 runs every block on one GPU: not tensor-parallel, with the reason
  c.precision = kernels::Precision::fp8;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  c.tp_size = 2;
  EXPECT_THROW(kernels::check_block_config(c), Unsupported);
  c = kernels::llama_block(256, 4, 2, 64, 512, {});
  c.precision = kernels::Precision::fp8;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  c.seq = 36;  // 36 tokens: FP8 products take multiples of 16
  EXPECT_THROW(kernels::check_block_config(c), InvalidArgument);
  // fp32 storage (tf32, fp32): the unfused attention alone takes it, the others say why.
  for (kernels::Precision p : {kernels::Precision::tf32, kernels::Precision::fp32}) {
    for (AttentionBackend be : {AttentionBackend::fused, AttentionBackend::flash}) {
      c = BlockConfig{};
      c.precision = p, c.backend = be;
      try {
        kernels::check_block_config(c);
        ADD_FAILURE() << kernels::to_string(p) << " on " << kernels::to_string(be);
      } catch (const Unsupported& e) {
        EXPECT_NE(e.message().find("take fp16 and bf16 only"), std::string::npos) << e.message();
      }
    }
    c.backend = AttentionBackend::unfused;
    EXPECT_NO_THROW(kernels::check_block_config(c));
  }
}

// T5's knobs outside a T5 block (RMSNorm, pre-norm, no linear biases) are rejected: tests/t5.

class BertGpu
    : public ::testing::TestWithParam<std::tuple<BlockPart, AttentionBackend, kernels::Precision>> {
 protected:
  void SetUp() override {
    if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << gpu_unavailable_reason();
    select_device(0);
  }
};

// BERT-base-sized dims keep the float64 reference quick; the plugin validates bert-large itself.
TEST_P(BertGpu, MatchesFloat64Reference) {
  auto [part, backend, precision] = GetParam();
  BlockConfig c;
  c.hidden = 256, c.heads = 4, c.intermediate = 1024;
  c.precision = precision, c.backend = backend;
  const bool backward =
      part == BlockPart::layer || part == BlockPart::ffn || part == BlockPart::attention;
  if (backend == AttentionBackend::flash && backward &&
      !kernels::FlashAttention(kernels::self_attention_desc(kernels::storage_precision(precision),
                                                            1, 1, 64, 64, kernels::QkvLayout::bshd))
           .has_backward())
    GTEST_SKIP() << "xfbench's flash attention backward needs a Hopper GPU";
  std::string worst;
  try {
    worst = block::validate_block(c, part, backward);
  } catch (const Unsupported& e) {  // fp8 before sm_89
    if (precision != kernels::Precision::fp8) throw;
    GTEST_SKIP() << e.message();
  }
  std::printf("  worst: %s\n", worst.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    Parts, BertGpu,
    ::testing::Combine(::testing::Values(BlockPart::layer, BlockPart::attention, BlockPart::ffn,
                                         BlockPart::dense, BlockPart::dense_gelu),
                       ::testing::Values(AttentionBackend::unfused, AttentionBackend::fused,
                                         AttentionBackend::flash),
                       ::testing::Values(kernels::Precision::fp16, kernels::Precision::bf16,
                                         kernels::Precision::fp8)));

// fp32 storage (the training step's tf32 and fp32) on the backend that takes it: every part.
INSTANTIATE_TEST_SUITE_P(
    Fp32Storage, BertGpu,
    ::testing::Combine(::testing::Values(BlockPart::layer, BlockPart::attention, BlockPart::ffn,
                                         BlockPart::dense, BlockPart::dense_gelu),
                       ::testing::Values(AttentionBackend::unfused),
                       ::testing::Values(kernels::Precision::tf32, kernels::Precision::fp32)));

// Bias gradients are column sums on the side stream up to 16384 columns; the QKV projection's
// 3·hidden above that takes cuBLASLt's bias-gradient epilogue: that path against float64 too.
TEST(BertGpuWide, QkvBiasGradientThroughTheEpilogue) {
  if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << gpu_unavailable_reason();
  select_device(0);
  BlockConfig c;
  c.hidden = 5504, c.heads = 86, c.intermediate = 512;  // 3 · 5504 = 16512 QKV columns
  std::string worst;
  ASSERT_NO_THROW(worst = block::validate_block(c, BlockPart::attention, true));
  std::printf("  worst: %s\n", worst.c_str());
}

// The FFN's fused products: which configurations can fuse them (the rest say why, anywhere), and
// on a GPU that can, tune() times both ways and every block of the shape keeps its choice.
TEST(BertFfnProducts, FusableOnlyForPlainGeluFfnsInHalfPrecision) {
  BlockConfig c;
  std::string why;
  c.precision = kernels::Precision::fp32;
  EXPECT_FALSE(kernels::ffn_products_fusable(c, BlockPart::layer, &why));
  EXPECT_EQ(why, "fused FFN products take bf16 and fp16");
  c.precision = kernels::Precision::bf16;
  EXPECT_FALSE(kernels::ffn_products_fusable(c, BlockPart::attention, &why));
  EXPECT_EQ(why, "this part has no activation after its up projection");
  BlockConfig t5 = kernels::t5_block(1024, 16, 64, 4096, false, false);  // ReLU
  EXPECT_FALSE(kernels::ffn_products_fusable(t5, BlockPart::layer, &why));
  EXPECT_EQ(why, "the fused FFN products take GELU or a gated activation, not ReLU");
  BlockConfig geglu = kernels::t5_block(1024, 16, 64, 2816, false, true);  // T5 v1.1's FFN
  geglu.set_dropout(0.1f);
  EXPECT_FALSE(kernels::ffn_products_fusable(geglu, BlockPart::layer, &why));
  EXPECT_EQ(why, "the fused FFN products have no dropout inside the FFN");
  geglu.set_dropout(0.f);  // dropout off: the gated products take it (where the GPU can)
  EXPECT_EQ(kernels::ffn_products_fusable(geglu, BlockPart::layer, &why),
            kernels::fused_gemm_available());
  geglu.linear_bias = true;
  EXPECT_FALSE(kernels::ffn_products_fusable(geglu, BlockPart::ffn, &why));
  EXPECT_EQ(why, "the fused gated products take no bias");
  const bool here = kernels::ffn_products_fusable(c, BlockPart::layer, &why);
  if (!gpu_unavailable_reason().empty()) EXPECT_FALSE(here);
  // Asked for where they cannot run, the block says why instead of running unfused.
  c.ffn_products = kernels::FfnProducts::fused;
  c.precision = kernels::Precision::fp32;
  c.backend = AttentionBackend::unfused;  // the backend that takes fp32
  try {
    kernels::TransformerBlock b(c);
    ADD_FAILURE() << "fp32 block built with fused GELU products";
  } catch (const Unsupported& e) {
    EXPECT_NE(e.message().find("ffn_products=fused: fused FFN products take bf16 and fp16"),
              std::string::npos)
        << e.message();
  }
}

TEST(BertGpuFfnProducts, TuneChoosesOnceForEveryBlockOfTheShape) {
  if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << gpu_unavailable_reason();
  select_device(0);
  BlockConfig c;
  c.hidden = 512, c.heads = 8, c.intermediate = 2048, c.batch = 4, c.seq = 128;
  std::string why;
  if (!kernels::ffn_products_fusable(c, BlockPart::layer, &why)) GTEST_SKIP() << why;
  Stream s;
  kernels::TransformerBlock a(c), b(c);
  EXPECT_EQ(a.ffn_products(), "ffn gelu unfused (not searched)");
  block::init_block(a, 5, s);
  a.tune(s);
  const std::string chosen = a.ffn_products();
  EXPECT_TRUE(chosen.rfind("ffn gelu fused: fused ", 0) == 0 ||
              chosen.rfind("ffn gelu unfused: fused ", 0) == 0)
      << chosen;
  EXPECT_EQ(b.ffn_products(), chosen);  // b never tuned: the shape's choice
  c.ffn_products = kernels::FfnProducts::unfused;
  EXPECT_EQ(kernels::TransformerBlock(c).ffn_products(), "ffn gelu unfused (as configured)");
  std::printf("  %s\n", chosen.c_str());
}

// XFBENCH_GEMM_PLANS=file keeps the FFN's choice too: the first run times fused against unfused
// and writes its choice; the second finds it, times nothing and runs the same way (a case alone
// after a suite ran what the suite chose: the 2.3% of GPT2Block's forward in one H100's suite).
TEST(BertGpuFfnProducts, PlansFileCarriesTheChoiceToTheNextRun) {
  if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << gpu_unavailable_reason();
  BlockConfig c;
  c.hidden = 512, c.heads = 8, c.intermediate = 2048, c.batch = 2, c.seq = 128;
  std::string why;
  if (!kernels::ffn_products_fusable(c, BlockPart::layer, &why)) GTEST_SKIP() << why;
  const std::string path = "/tmp/xftest_ffn_plans_" + std::to_string(::getpid()) + ".tsv";
  std::remove(path.c_str());
  const std::string args =
      "--xfbench_bert_hidden=512 --xfbench_bert_heads=8 --xfbench_bert_intermediate=2048 "
      "--xfbench_bert_seqs=128 --xfbench_bert_batches=2 --benchmark_min_time=0.01 "
      "--benchmark_filter='^BertLayer/fused/fp16/fwdbwd/seq:128/batch:2/'";
  const std::string env = "XFBENCH_GEMM_LOG=1 XFBENCH_GEMM_PLANS=" + path;
  const std::string product = "ffn gelu products bias_gelu_aux fp16 gelu:erf m=256 n=2048 k=512";
  xftest::HostResult first = xftest::run_host(args, env);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  const std::size_t timed = first.err.find("xfbench choice: " + product + " -> ");
  ASSERT_NE(timed, std::string::npos) << first.err;
  const std::string line = first.err.substr(timed, first.err.find('\n', timed) - timed);
  const std::string chosen = line.substr(line.find(" -> ") + 4);
  ASSERT_TRUE(chosen == "fused" || chosen == "unfused") << chosen;
  EXPECT_NE(first.out.find("ffn gelu " + chosen + ": fused "), std::string::npos) << first.out;
  EXPECT_NE(xftest::slurp(path).find("\tchoice:" + product + "\t" + product + "\t"),
            std::string::npos)
      << xftest::slurp(path);
  xftest::HostResult second = xftest::run_host(args, env);
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  EXPECT_NE(
      second.err.find("xfbench choice from " + path + ": " + product + " -> " + chosen + "\n"),
      std::string::npos)
      << second.err;
  EXPECT_EQ(second.err.find("xfbench choice: "), std::string::npos) << second.err;
  EXPECT_NE(second.out.find("ffn gelu " + chosen + ": as XFBENCH_GEMM_PLANS recorded"),
            std::string::npos)
      << second.out;
  std::remove(path.c_str());
}

// A wrong layer must fail validation: corrupt one weight after init and compare again.
TEST(BertGpuNegative, CorruptedWeightFailsValidation) {
  if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << gpu_unavailable_reason();
  select_device(0);
  BlockConfig c;
  c.hidden = 256, c.heads = 4, c.intermediate = 1024, c.batch = 2, c.seq = 32, c.set_dropout(0.f);
  Stream s;
  kernels::TransformerBlock a(c), b(c);
  block::init_block(a, 7, s);
  block::init_block(b, 7, s);
  // Same seed, same output; then one changed weight changes it.
  a.forward(s);
  b.forward(s);
  std::vector<std::uint16_t> oa(a.elements("out")), ob(b.elements("out"));
  // The layer runs on a non-blocking stream: wait for it before reading back.
  auto fetch = [&](kernels::TransformerBlock& l, std::vector<std::uint16_t>& v) {
    s.sync();
    ASSERT_EQ(cudaMemcpy(v.data(), l.tensor("out"), v.size() * 2, cudaMemcpyDeviceToHost),
              cudaSuccess);
  };
  fetch(a, oa);
  fetch(b, ob);
  EXPECT_EQ(oa, ob);
  ASSERT_EQ(cudaMemset(b.tensor("wi"), 0x3c, 64), cudaSuccess);  // a few weights become 1.05
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  b.forward(s);
  fetch(b, ob);
  EXPECT_NE(oa, ob);
}

// Dropout is active in the timed cases: the same step gives the same output, a new step another.
TEST(BertGpuDropout, MasksDependOnTheStepOnly) {
  if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << gpu_unavailable_reason();
  select_device(0);
  for (AttentionBackend be :
       {AttentionBackend::unfused, AttentionBackend::fused, AttentionBackend::flash}) {
    BlockConfig c;
    c.hidden = 256, c.heads = 4, c.intermediate = 1024, c.batch = 2, c.seq = 64,
    c.set_dropout(0.1f);
    c.backend = be;
    Stream s;
    kernels::TransformerBlock l(c);
    block::init_block(l, 3, s);
    std::vector<std::uint16_t> first(l.elements("out")), again(first.size()), other(first.size());
    auto run = [&](std::uint64_t step, std::vector<std::uint16_t>& v) {
      l.forward(s, step);
      l.backward(s, step);
      s.sync();
      ASSERT_EQ(cudaMemcpy(v.data(), l.tensor("out"), v.size() * 2, cudaMemcpyDeviceToHost),
                cudaSuccess);
    };
    run(1, first);
    run(1, again);
    run(2, other);
    EXPECT_EQ(first, again) << kernels::to_string(be);
    EXPECT_NE(first, other) << kernels::to_string(be);
  }
}

// A forward-only layer (no_grad) computes the same output as a training one, with less memory.
TEST(BertGpuForwardOnly, SameOutputLessMemory) {
  if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << gpu_unavailable_reason();
  select_device(0);
  for (AttentionBackend be : {AttentionBackend::unfused, AttentionBackend::fused}) {
    BlockConfig c;
    c.hidden = 256, c.heads = 4, c.intermediate = 1024, c.batch = 2, c.seq = 64;
    c.backend = be;
    c.set_dropout(be == AttentionBackend::unfused ? 0.1f : 0.f);  // cuDNN draws masks per graph
    BlockConfig fwd = c;
    fwd.backward = false;
    Stream s;
    kernels::TransformerBlock train(c), infer(fwd);
    block::init_block(train, 9, s);
    block::init_block(infer, 9, s);
    EXPECT_EQ(infer.tensor("dout"), nullptr);
    EXPECT_LT(infer.device_bytes(), train.device_bytes());
    train.forward(s, 4);
    infer.forward(s, 4);
    s.sync();
    std::vector<std::uint16_t> a(train.elements("out")), b(infer.elements("out"));
    ASSERT_EQ(cudaMemcpy(a.data(), train.tensor("out"), a.size() * 2, cudaMemcpyDeviceToHost),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(b.data(), infer.tensor("out"), b.size() * 2, cudaMemcpyDeviceToHost),
              cudaSuccess);
    if (be == AttentionBackend::unfused) {
      EXPECT_EQ(a, b);
    } else {
      std::vector<double> da(a.size()), db(b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        __half ha, hb;
        std::memcpy(&ha, &a[i], 2);
        std::memcpy(&hb, &b[i], 2);
        da[i] = __half2float(ha), db[i] = __half2float(hb);
      }
      EXPECT_LT(compare(da, db).rel_l2_error, 2e-3);
    }
    EXPECT_THROW(infer.backward(s), InvalidArgument);
  }
}

// xfbench's flash backend in forward-only layers: against float64 with dropout off, and against
// the unfused backend with dropout on (both draw the attention mask from the same Philox stream).
// Training layers with flash are covered by BertGpu.MatchesFloat64Reference.
TEST(BertFlash, ForwardMatchesReferenceAndUnfused) {
  if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << gpu_unavailable_reason();
  select_device(0);
  for (auto precision : {kernels::Precision::fp16, kernels::Precision::bf16}) {
    for (BlockPart part : {BlockPart::layer, BlockPart::attention}) {
      BlockConfig c;
      c.hidden = 256, c.heads = 4, c.intermediate = 1024;
      c.precision = precision, c.backend = AttentionBackend::flash, c.backward = false;
      std::string worst;
      ASSERT_NO_THROW(worst = block::validate_block(c, part, false)) << kernels::to_string(part);
      std::printf("  %s %s worst: %s\n", kernels::to_string(precision), kernels::to_string(part),
                  worst.c_str());
    }
  }
  BlockConfig c;
  c.hidden = 512, c.heads = 8, c.intermediate = 2048, c.batch = 2, c.seq = 128;
  c.set_dropout(0.1f), c.backward = false;
  BlockConfig u = c;
  c.backend = AttentionBackend::flash, u.backend = AttentionBackend::unfused;
  Stream s;
  kernels::TransformerBlock flash(c), unfused(u);
  block::init_block(flash, 5, s);
  block::init_block(unfused, 5, s);
  flash.forward(s, 3);
  unfused.forward(s, 3);
  const std::vector<double> a = block::download(flash, "out", Dtype::fp16, s),
                            b = block::download(unfused, "out", Dtype::fp16, s);
  EXPECT_LT(compare(a, b).rel_l2_error, 2e-3);
  flash.forward(s, 4);  // another step, another mask
  EXPECT_GT(compare(block::download(flash, "out", Dtype::fp16, s), b).rel_l2_error, 1e-2);
}

TEST(BertFlash, RejectsWhatItCannotRun) {
  BlockConfig c;
  c.backend = AttentionBackend::flash;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  c.seq = 96;
  EXPECT_THROW(kernels::check_block_config(c), Unsupported);
  c.seq = 128, c.hidden = 1536;  // head dim 96
  EXPECT_THROW(kernels::check_block_config(c), Unsupported);
  c.hidden = 2048;  // head dim 128: the Hopper kernels' (checked where it runs)
  EXPECT_NO_THROW(kernels::check_block_config(c));
}

// Model dimensions that cannot be built are rejected at registration, before any GPU work.
TEST(BertFlags, BadDimensionsExitWithTheReason) {
  xftest::HostResult r =
      xftest::run_host("--xfbench_bert_heads=15 --benchmark_list_tests", "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("hidden is not divisible by heads"), std::string::npos) << r.err;
  r = xftest::run_host("--xfbench_bert_dtypes=fp64 --benchmark_list_tests",
                       "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--xfbench_bert_dtypes: unknown value 'fp64'"), std::string::npos) << r.err;
  // fp8 names its recipe.
  r = xftest::run_host(
      "--xfbench_bert_dtypes=fp8 --xfbench_bert_fp8_recipe=current --benchmark_list_tests "
      "--benchmark_filter=BertLayer/fused/fp8/recipe:current/fwdbwd/seq:512/batch:64/",
      "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(xftest::listed_names(r.out, {"BertLayer/"}),
            "BertLayer/fused/fp8/recipe:current/fwdbwd/seq:512/batch:64\n");
  // BERT-base is fine, and its names say so.
  r = xftest::run_host(
      "--xfbench_bert_hidden=768 --xfbench_bert_heads=12 --xfbench_bert_intermediate=3072 "
      "--benchmark_list_tests --benchmark_filter=BertLayer/fused/fp16/fwd/seq:128/batch:8/",
      "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("BertLayer/fused/fp16/fwd/seq:128/batch:8/hidden:768/heads:12/inter:3072/"),
            std::string::npos)
      << r.out;
}
