// T5Encoder / T5Decoder: the preset, FLOP formulas, configuration checks and the plugin's names
// and flags (CPU); the GPU block against the float64 reference (backends, dtypes, encoder and
// decoder, ReLU and gated GELU, heads · d_kv != d_model), causality, dropout masks and the
// bitwise reproducible bias-table gradient (skipped without a GPU).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "block_init.hpp"
#include "block_validate.hpp"
#include "kernels/models/transformer_block.hpp"
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

// A small T5 (head size 64, so every backend's shape rules hold).
BlockConfig small_t5(bool decoder, bool gated = false) {
  return kernels::t5_block(256, 4, 64, 512, decoder, gated);
}

}  // namespace

TEST(T5Config, PresetIsHfT5Block) {
  for (bool decoder : {false, true}) {
    const BlockConfig c = kernels::t5_block(1024, 16, 64, 4096, decoder, false);
    EXPECT_EQ(c.name, decoder ? "T5Decoder" : "T5Encoder");
    EXPECT_EQ(c.placement, kernels::NormPlacement::pre);
    EXPECT_EQ(c.norm, kernels::NormKind::rmsnorm);
    EXPECT_FLOAT_EQ(c.eps, 1e-6f);
    EXPECT_EQ(c.activation, kernels::Activation::relu);
    EXPECT_FALSE(c.linear_bias || c.scale_scores || c.gated_ffn);
    EXPECT_TRUE(c.ffn_dropout && c.relative_bias);
    EXPECT_EQ(c.causal, decoder);
    EXPECT_EQ(c.cross_attention, decoder);
    EXPECT_FLOAT_EQ(c.attention_dropout, 0.1f);
    EXPECT_FLOAT_EQ(c.residual_dropout, 0.1f);
    EXPECT_NO_THROW(kernels::check_block_config(c));
  }
  const BlockConfig v11 = kernels::t5_block(1024, 16, 64, 2816, false, true);
  EXPECT_TRUE(v11.gated_ffn);
  EXPECT_EQ(v11.activation, kernels::Activation::gelu_tanh);  // HF maps gated-gelu to gelu_new
}

// The formulas: encoder 16bsh² + (8bsh² + 4bs²h), decoder 16bsh² + 2·(8bsh² + 4bs²h);
// the gated FFN's three matrices 6·T·h·I; t5-3b's attention width A = heads · d_kv (4096).
TEST(T5Flops, SeedsFormula) {
  const double b = 64, s = 512, h = 1024;
  BlockConfig enc = kernels::t5_block(1024, 16, 64, 4096, false, false);
  enc.batch = 64, enc.seq = 512;
  BlockConfig dec = enc;
  dec.cross_attention = true;
  const double attention = 8 * b * s * h * h + 4 * b * s * s * h;
  EXPECT_DOUBLE_EQ(kernels::block_forward_flops(enc), 16 * b * s * h * h + attention);
  EXPECT_DOUBLE_EQ(kernels::block_forward_flops(dec), 16 * b * s * h * h + 2 * attention);
  BlockConfig gated = kernels::t5_block(1024, 16, 64, 2816, false, true);
  gated.batch = 64, gated.seq = 512;
  EXPECT_DOUBLE_EQ(kernels::block_forward_flops(gated), 6 * b * s * h * 2816 + attention);
  BlockConfig t5_3b = kernels::t5_block(1024, 32, 128, 16384, false, false);
  t5_3b.batch = 64, t5_3b.seq = 512;
  const double A = 4096;
  EXPECT_DOUBLE_EQ(kernels::block_forward_flops(t5_3b),
                   4 * b * s * h * 16384 + 8 * b * s * h * A + 4 * b * s * s * A);
}

TEST(T5Config, T5KnobsComeTogether) {
  auto rejects = [](void (*change)(BlockConfig&)) {
    BlockConfig c;  // BertLayer
    change(c);
    try {
      kernels::check_block_config(c);
    } catch (const InvalidArgument&) {
      return true;
    }
    return false;
  };
  EXPECT_TRUE(rejects([](BlockConfig& c) { c.norm = kernels::NormKind::rmsnorm; }));  // post-LN
  EXPECT_TRUE(rejects([](BlockConfig& c) { c.activation = kernels::Activation::relu; }));
  EXPECT_TRUE(rejects([](BlockConfig& c) { c.linear_bias = false; }));
  EXPECT_TRUE(rejects([](BlockConfig& c) { c.relative_bias = true; }));
  EXPECT_TRUE(rejects([](BlockConfig& c) { c.cross_attention = true; }));
  EXPECT_FALSE(rejects([](BlockConfig& c) { c.scale_scores = false; }));
  BlockConfig c = small_t5(false, true);
  c.activation = kernels::Activation::relu;  // gated ReLU: not built
  EXPECT_THROW(kernels::check_block_config(c), InvalidArgument);
  c = small_t5(false);
  c.linear_bias = true;
  EXPECT_THROW(kernels::check_block_config(c), InvalidArgument);
  c = kernels::t5_block(1024, 32, 128, 16384, true, false);  // t5-3b: heads · d_kv != d_model
  c.backend = AttentionBackend::fused;
  EXPECT_NO_THROW(kernels::check_block_config(c));
  c.backend = AttentionBackend::flash;  // head size 128
  EXPECT_THROW(kernels::check_block_config(c), Unsupported);
  c = kernels::t5_block(1000, 16, 0, 4096, false, false);  // d_kv 0: d_model / heads, not whole
  EXPECT_THROW(kernels::check_block_config(c), InvalidArgument);
}

// Names: t5-large with ReLU untagged, other named models as /model:<name>, custom sizes spelled
// out, /ffn:gated-gelu last; bad flags exit 2 with the reason, before any GPU work.
namespace {
std::string t5_names(const std::string& listing) {
  return xftest::listed_names(listing, {"T5Encoder/", "T5Decoder/"});
}
}  // namespace

TEST(T5Flags, NamesModelsAndErrors) {
  const std::string env = "CUDA_VISIBLE_DEVICES=";
  xftest::HostResult r = xftest::run_host("--benchmark_list_tests --benchmark_filter=^T5", env);
  ASSERT_EQ(r.code, 0) << r.err;
  std::size_t lines = 0;
  for (char ch : t5_names(r.out)) lines += ch == '\n';
  EXPECT_EQ(lines, 2u * 2 * 3 * 2 * 2 * 7);  // families, dtypes, backends, passes, seqs, batches
  for (const char* name : {"T5Encoder/unfused/fp16/fwd/seq:512/batch:2\n",
                           "T5Decoder/fused/fp16/fwdbwd/seq:512/batch:64\n",
                           "T5Encoder/flash/bf16/fwd/seq:128/batch:128\n"})
    EXPECT_NE(t5_names(r.out).find(name), std::string::npos) << name << r.out;
  EXPECT_EQ(
      xftest::listing("--xfbench_t5_model=t5-3b --xfbench_t5_ffn=gated-gelu --benchmark_list_tests "
                      "--benchmark_filter=T5Decoder/fused/fp16/fwdbwd/seq:512/batch:64/",
                      "T5"),
      "T5Decoder/fused/fp16/fwdbwd/seq:512/batch:64/model:t5-3b/ffn:gated-gelu\n");
  EXPECT_EQ(xftest::listing(
                "--xfbench_t5_d_model=768 --xfbench_t5_heads=12 --xfbench_t5_d_ff=3072 "
                "--xfbench_t5_seqs=128 --xfbench_t5_batches=4 --xfbench_t5_dtypes=bf16 "
                "--xfbench_t5_backends=fused --benchmark_list_tests --benchmark_filter=T5Encoder/",
                "T5"),
            "T5Encoder/fused/bf16/fwd/seq:128/batch:4/model:t5-base\n"
            "T5Encoder/fused/bf16/fwdbwd/seq:128/batch:4/model:t5-base\n");
  // FP8 linears (the cross-attention's too) name their recipe.
  EXPECT_EQ(xftest::listing(
                "--xfbench_t5_seqs=512 --xfbench_t5_batches=64 --xfbench_t5_dtypes=fp8 "
                "--xfbench_t5_backends=fused --benchmark_list_tests --benchmark_filter=fwdbwd",
                "T5"),
            "T5Encoder/fused/fp8/recipe:delayed/fwdbwd/seq:512/batch:64\n"
            "T5Decoder/fused/fp8/recipe:delayed/fwdbwd/seq:512/batch:64\n");
  EXPECT_EQ(xftest::listing("--xfbench_t5_d_kv=32 --benchmark_list_tests "
                            "--benchmark_filter=T5Encoder/unfused/fp16/fwd/seq:512/batch:8/",
                            "T5"),
            "T5Encoder/unfused/fp16/fwd/seq:512/batch:8/d_model:1024/heads:16/d_kv:32/"
            "d_ff:4096\n");

  r = xftest::run_host("--xfbench_t5_d_kv=60 --benchmark_list_tests", env);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("head dim 60 is not a multiple of 8"), std::string::npos) << r.err;
  r = xftest::run_host("--xfbench_t5_model=t5-11b --benchmark_list_tests", env);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--xfbench_t5_model: unknown model 't5-11b'"), std::string::npos) << r.err;
  r = xftest::run_host("--xfbench_t5_ffn=gated-relu --benchmark_list_tests", env);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--xfbench_t5_ffn: unknown FFN 'gated-relu'"), std::string::npos) << r.err;
}

// Every backend against the one float64 reference, forward and every gradient (the encoder
// states' and the bias table's included). A backend that cannot run here (flash without its
// Hopper kernels) is skipped with its reason.
class T5Gpu : public ::testing::TestWithParam<std::tuple<AttentionBackend, Precision, bool, bool>> {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }
};

TEST_P(T5Gpu, MatchesFloat64Reference) {
  auto [backend, precision, decoder, backward] = GetParam();
  BlockConfig c = small_t5(decoder);
  c.precision = precision, c.backend = backend;
  std::string worst;
  try {
    worst = block::validate_block(c, BlockPart::layer, backward);
  } catch (const Unsupported& e) {
    GTEST_SKIP() << e.what();
  }
  std::printf("  worst: %s\n", worst.c_str());
}

INSTANTIATE_TEST_SUITE_P(Backends, T5Gpu,
                         ::testing::Combine(::testing::ValuesIn(kBackends),
                                            ::testing::Values(Precision::fp16, Precision::bf16,
                                                              Precision::fp8),
                                            ::testing::Bool(), ::testing::Bool()));

// The gated-GELU FFN, and t5-3b's shape rule (8 heads of 64 over d_model 256: A = 512).
TEST(T5GpuShapes, GatedGeluAndWideAttention) {
  SKIP_WITHOUT_GPU();
  for (AttentionBackend be : kBackends) {
    for (bool decoder : {false, true}) {
      BlockConfig c = small_t5(decoder, true);
      c.backend = be;
      std::string worst;
      ASSERT_NO_THROW(worst = block::validate_block(c, BlockPart::layer, true));
      std::printf("  gated %s %s: %s\n", c.name.c_str(), kernels::to_string(be), worst.c_str());
      c = kernels::t5_block(256, 8, 64, 512, decoder, false);
      c.backend = be;
      ASSERT_NO_THROW(worst = block::validate_block(c, BlockPart::layer, true));
      std::printf("  A=512 %s %s: %s\n", c.name.c_str(), kernels::to_string(be), worst.c_str());
    }
  }
}

namespace {

// Rows [from, to) of every sequence of a [batch · seq, hidden] tensor, flattened.
std::vector<double> rows(const std::vector<double>& t, const BlockConfig& c, int from, int to) {
  std::vector<double> out;
  for (int b = 0; b < c.batch; ++b)
    out.insert(out.end(), t.begin() + (std::size_t(b) * c.seq + from) * c.hidden,
               t.begin() + (std::size_t(b) * c.seq + to) * c.hidden);
  return out;
}

std::vector<std::uint16_t> raw(const TransformerBlock& blk, const char* name) {
  std::vector<std::uint16_t> v(blk.elements(name));
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  XF_CUDA_CHECK(cudaMemcpy(v.data(), blk.tensor(name), v.size() * 2, cudaMemcpyDeviceToHost));
  return v;
}

}  // namespace

// The decoder's self-attention is causal (new tokens after p leave every output before p bit for
// bit unchanged) while its cross-attention sees every encoder position; the encoder is
// bidirectional. Dropout is on.
TEST(T5GpuCausal, DecoderHidesLaterTokens) {
  SKIP_WITHOUT_GPU();
  for (AttentionBackend be : kBackends) {
    for (bool decoder : {false, true}) {
      SCOPED_TRACE(std::string(kernels::to_string(be)) + (decoder ? " decoder" : " encoder"));
      BlockConfig c = small_t5(decoder);
      c.batch = 2, c.seq = 128, c.backend = be, c.backward = false;
      const int p = 80;
      Stream s;
      TransformerBlock blk(c);
      block::init_block(blk, 21, s);
      blk.forward(s, 3);
      const std::vector<double> out0 = block::download(blk, "out", Dtype::fp16, s);
      for (int b = 0; b < c.batch; ++b)
        fill_uniform(
            static_cast<char*>(blk.tensor("x")) + (std::size_t(b) * c.seq + p) * c.hidden * 2,
            std::size_t(c.seq - p) * c.hidden, Dtype::fp16, 77 + b, -1.0, 1.0, s);
      blk.forward(s, 3);
      const std::vector<double> out1 = block::download(blk, "out", Dtype::fp16, s);
      const double earlier = compare(rows(out1, c, 0, p), rows(out0, c, 0, p)).rel_l2_error;
      if (decoder)
        EXPECT_EQ(earlier, 0.0);
      else
        EXPECT_GT(earlier, 1e-3);
      if (!decoder) continue;
      // The encoder states reach every decoder position (no mask on the cross-attention).
      fill_uniform(static_cast<char*>(blk.tensor("enc")) + std::size_t(c.seq - 1) * c.hidden * 2,
                   c.hidden, Dtype::fp16, 5, -1.0, 1.0, s);
      blk.forward(s, 3);
      const std::vector<double> out2 = block::download(blk, "out", Dtype::fp16, s);
      EXPECT_GT(compare(rows(out2, c, 0, 1), rows(out1, c, 0, 1)).rel_l2_error, 1e-4);
    }
  }
}

// Training mode: the same step gives the same output and the same gradients bit for bit (the
// bias table's gradient is reduced without atomics, flash's diagonal sums too; cuDNN's own dQ and
// dBias may differ in their last bits, so its run-to-run difference is printed), a new step draws
// new masks.
TEST(T5GpuDropout, MasksDependOnTheStepOnly) {
  SKIP_WITHOUT_GPU();
  for (AttentionBackend be : kBackends) {
    for (bool decoder : {false, true}) {
      SCOPED_TRACE(std::string(kernels::to_string(be)) + (decoder ? " decoder" : " encoder"));
      BlockConfig c = small_t5(decoder);
      c.batch = 2, c.seq = 64, c.backend = be;
      Stream s;
      TransformerBlock blk(c);
      block::init_block(blk, 3, s);
      auto run = [&](std::uint64_t step) {
        blk.forward(s, step);
        blk.backward(s, step);
        s.sync();
      };
      run(1);
      const auto out = raw(blk, "out"), dtable = raw(blk, "drel_bias"), dx = raw(blk, "dx");
      run(1);
      EXPECT_EQ(raw(blk, "out"), out);
      if (be != AttentionBackend::fused) {
        EXPECT_EQ(raw(blk, "drel_bias"), dtable);
        EXPECT_EQ(raw(blk, "dx"), dx);
      } else {
        std::printf("  cuDNN: drel_bias %s, dx %s from run to run\n",
                    raw(blk, "drel_bias") == dtable ? "identical" : "differs",
                    raw(blk, "dx") == dx ? "identical" : "differs");
      }
      run(2);
      EXPECT_NE(raw(blk, "out"), out);
    }
  }
}

// A forward-only block (no_grad) computes what a training one does (unfused: the same masks).
TEST(T5GpuForwardOnly, SameOutputAsTraining) {
  SKIP_WITHOUT_GPU();
  for (bool gated : {false, true}) {
    for (bool decoder : {false, true}) {
      BlockConfig c = small_t5(decoder, gated);
      c.batch = 2, c.seq = 64, c.backend = AttentionBackend::unfused;
      Stream s;
      TransformerBlock train(c);
      block::init_block(train, 9, s);
      train.forward(s, 4);
      BlockConfig f = c;
      f.backward = false;
      TransformerBlock infer(f);
      block::init_block(infer, 9, s);
      EXPECT_LT(infer.device_bytes(), train.device_bytes());
      infer.forward(s, 4);
      EXPECT_EQ(raw(infer, "out"), raw(train, "out")) << gated << decoder;
    }
  }
}
