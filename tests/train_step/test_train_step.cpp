// The training step on the GPU (skipped without one): every parameter gradient of the tiny BERT
// and GPT-2 against the float64 reference; checkpointing on and off give the same gradients;
// accumulating 4 micro-batches of b equals one step of 4b; fused and unfused AdamW give the same
// weights after 3 steps; the memory plan against the measured use; the validation rules; fp16's
// skipped steps; out-of-memory skips.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "kernels/cross_entropy.hpp"
#include "kernels/gemm.hpp"
#include "kernels/models/language_model.hpp"
#include "step_parts.hpp"
#include "test_gpu.hpp"
#include "train_case.hpp"
#include "train_test_util.hpp"
#include "train_validate.hpp"
#include "xfbench/xfbench.hpp"

using namespace xfbench;
using namespace xfbench::kernels;
using Values = LanguageModel::Values;

namespace {

double rel_l2(const std::vector<double>& got, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Two models' gradients of every parameter: relative L2 of `got`'s against `ref`'s within `tol`
// (failures name label + parameter); returns the worst.
double worst_gradient_gap(const LanguageModel& got, const LanguageModel& ref, double tol,
                          const std::string& label) {
  double worst = 0;
  for (const std::string& p : ref.parameters()) {
    const double e = rel_l2(got.download(p, Values::gradients, nullptr),
                            ref.download(p, Values::gradients, nullptr));
    EXPECT_LE(e, tol) << label << p;
    worst = std::max(worst, e);
  }
  return worst;
}

// Gradients of every parameter after compute_gradients.
std::map<std::string, std::vector<double>> gradients(const LanguageModel& m) {
  std::map<std::string, std::vector<double>> out;
  for (const std::string& p : m.parameters()) out[p] = m.download(p, Values::gradients, nullptr);
  return out;
}

// The GPU model's gradients against the float64 reference on the GPU model's own weights:
// relative L2 per parameter within `tol`; returns the worst.
double check_gradients(const TrainConfig& c, double tol, double loss_tol = 2e-3) {
  LanguageModel model(c);
  model.init_parameters(17, /*random_all=*/true);
  const TokenBatch data = synthetic_batch(c, 5);
  model.set_data({data});
  model.compute_gradients(nullptr);
  ref::Tensors params, ref_grads;
  for (const std::string& p : model.parameters())
    params[p] = model.download(p, Values::weights, nullptr);
  const double loss = ref::language_model(c, data, params, &ref_grads);
  EXPECT_NEAR(model.loss(nullptr), loss, loss_tol * loss);
  double worst = 0;
  for (const std::string& p : model.parameters()) {
    const double e = rel_l2(model.download(p, Values::gradients, nullptr), ref_grads.at(p));
    EXPECT_LE(e, tol) << c.describe() << ": d" << p;
    worst = std::max(worst, e);
  }
  return worst;
}

}  // namespace

// fp16 within 1e-2, bf16 within 6x that (its mantissa is 8x coarser), relative L2 per parameter.
// Measured on the H100: at most 1.2e-3 (fp16) and 7.1e-3 (bf16), so about 10x margin. tf32 (fp32
// storage, products on fp16's mantissa) takes fp16's limit; fp32 computes in fp32 throughout,
// within 1e-4 (TF32 products would not be). Both on the unfused attention, the one that runs them.
TEST(TrainStepGpu, EveryGradientMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  for (LmKind kind : {LmKind::masked, LmKind::causal})
    for (Precision p : {Precision::fp16, Precision::bf16, Precision::tf32, Precision::fp32})
      for (AttentionBackend be : {AttentionBackend::fused, AttentionBackend::unfused}) {
        const bool fp32_storage = p == Precision::tf32 || p == Precision::fp32;
        if (fp32_storage && be != AttentionBackend::unfused) continue;
        TrainConfig c = xftest::tiny(kind, p);
        c.backend = be;
        const double tol = p == Precision::bf16 ? 6e-2 : p == Precision::fp32 ? 1e-4 : 1e-2;
        std::printf("%-70s worst gradient rel_l2 %.2e\n", c.describe().c_str(),
                    check_gradients(c, tol));
      }
}

// The padding rows of the LM head (vocab 500 -> 512) and xfbench's flash attention (head dim 64).
TEST(TrainStepGpu, PaddedVocabAndFlashBackend) {
  SKIP_WITHOUT_GPU();
  TrainConfig c = xftest::tiny(LmKind::causal);
  c.model.vocab = 500;
  std::printf("vocab 500: worst rel_l2 %.2e\n", check_gradients(c, 1e-2));
  c = xftest::tiny(LmKind::masked);
  c.model.heads = 1, c.seq = 64, c.backend = AttentionBackend::flash;
  std::printf("flash: worst rel_l2 %.2e\n", check_gradients(c, 1e-2));
}

// With dropout on, checkpointing recomputes each layer's forward with the same masks: the same
// gradients, bit for bit.
TEST(TrainStepGpu, CheckpointingGivesTheSameGradients) {
  SKIP_WITHOUT_GPU();
  for (LmKind kind : {LmKind::masked, LmKind::causal}) {
    std::map<std::string, std::vector<double>> g[2];
    for (bool ckpt : {false, true}) {
      TrainConfig c = xftest::tiny(kind, Precision::bf16);
      c.model.layers = 3, c.dropout = 0.1f, c.checkpointing = ckpt;
      LanguageModel model(c);
      model.init_parameters(3, true);
      model.set_data(kernels::step_data(c));
      model.compute_gradients(nullptr);
      g[ckpt] = gradients(model);
    }
    for (const auto& kv : g[0]) EXPECT_EQ(kv.second, g[1].at(kv.first)) << kv.first;
  }
}

// The LM head made in chunks of rows (TrainConfig::max_logits_bytes forcing four): the same loss
// and gradients as one pass, within the rounding of adding the head weight's gradient chunk by
// chunk in the storage type (the other gradients differ only by the products' shapes).
TEST(TrainStepGpu, ChunkedHeadGivesTheSameGradients) {
  SKIP_WITHOUT_GPU();
  for (bool tied : {true, false}) {
    TrainConfig whole = xftest::tiny_llama(Precision::bf16, tied), chunked = whole;
    chunked.max_logits_bytes =
        std::size_t(whole.head_rows() / 4) * whole.model.padded_vocab() * sizeof(std::uint16_t);
    ASSERT_EQ(chunked.head_chunk_rows(), whole.head_rows() / 4);
    LanguageModel a(whole), b(chunked);
    a.init_parameters(4, true), b.init_parameters(4, true);
    a.set_data(kernels::step_data(whole)), b.set_data(kernels::step_data(chunked));
    a.compute_gradients(nullptr), b.compute_gradients(nullptr);
    EXPECT_NEAR(a.loss(nullptr), b.loss(nullptr), 1e-3 * a.loss(nullptr));
    const double worst = worst_gradient_gap(b, a, 1e-2, tied ? "tied: d" : "untied: d");
    EXPECT_GT(a.memory_plan().total(), b.memory_plan().total());
    std::printf("chunked head (%s): worst gradient rel_l2 %.2e\n", tied ? "tied" : "untied", worst);
  }
}

// Accumulation: 4 micro-batches of 2 against one batch of 8 made of the same sequences. The
// gradients agree within the rounding of accumulating in the storage type (measured 5.6e-4);
// so do the weights after one optimizer step and the loss.
TEST(TrainStepGpu, AccumulationEqualsOneLargeBatch) {
  SKIP_WITHOUT_GPU();
  for (LmKind kind : {LmKind::masked, LmKind::causal}) {
    TrainConfig small = xftest::tiny(kind, Precision::fp16), big = small;
    small.accum = 4;
    big.batch = 4 * small.batch;
    const std::vector<TokenBatch> micro = kernels::step_data(small);
    LanguageModel a(small), b(big);
    a.init_parameters(9, true), b.init_parameters(9, true);
    a.set_data(micro), b.set_data({xftest::concatenate(micro)});
    a.compute_gradients(nullptr), b.compute_gradients(nullptr);
    EXPECT_NEAR(a.loss(nullptr), b.loss(nullptr), 1e-3 * b.loss(nullptr));
    const double worst = worst_gradient_gap(a, b, 5e-3, "d");
    a.init_parameters(9, true), b.init_parameters(9, true);
    a.step(nullptr), b.step(nullptr);
    for (const std::string& p : a.parameters())
      EXPECT_LE(
          rel_l2(a.download(p, Values::master, nullptr), b.download(p, Values::master, nullptr)),
          1e-4)
          << p;
    std::printf("accumulation: worst gradient rel_l2 %.2e\n", worst);
  }
}

// Where a step's time goes (XFBENCH_STEP_PARTS): the parts in the step's order, every
// micro-batch's (accumulation repeats them), each time positive, and their sum the step's time
// between the first event and the last; without marks set again the step records nothing.
TEST(TrainStepGpu, StepPartsAreMarkedInOrder) {
  SKIP_WITHOUT_GPU();
  TrainConfig c = xftest::tiny(LmKind::causal, Precision::bf16);
  c.accum = 2;
  LanguageModel m(c);
  m.init_parameters(3);
  m.set_data(kernels::step_data(c));
  const std::vector<xfbench::train::StepParts> steps =
      xfbench::train::profile_step_parts(m, 2, nullptr);
  ASSERT_EQ(steps.size(), 2u);
  const std::vector<std::string> micro = {"embeddings",          "blocks forward",
                                          "head and loss",       "blocks backward",
                                          "embeddings backward", "gradient accumulation"};
  std::vector<std::string> expected = micro;
  expected.insert(expected.end(), micro.begin(), micro.end());
  expected.push_back("optimizer");
  for (const auto& parts : steps) {
    std::vector<std::string> names;
    for (const auto& [part, ms] : parts) {
      names.push_back(part);
      EXPECT_GT(ms, 0.0) << part;
    }
    EXPECT_EQ(names, expected);
  }
  int marks = 0;
  m.set_part_marks([&](const char*, cudaStream_t) { ++marks; });
  m.set_part_marks({});
  m.step(nullptr);
  EXPECT_EQ(marks, 0);
  std::printf("%s\n", xfbench::train::step_parts_line("tiny", steps).c_str());
}

// Fused (one launch) and unfused (a chain per tensor) AdamW: the same weights, master weights
// and loss after 3 steps, bit for bit (dropout on, clipping active); tf32's AdamW updates the fp32
// weights in place, as their own master copy.
class TrainStepAdamW : public ::testing::TestWithParam<Precision> {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }
};

TEST_P(TrainStepAdamW, FusedAndUnfusedAgree) {
  std::map<std::string, std::vector<double>> w[2], master[2];
  float loss[2];
  for (OptimizerKind o : {OptimizerKind::fused, OptimizerKind::unfused}) {
    TrainConfig c = xftest::tiny(LmKind::masked, GetParam());
    c.dropout = 0.1f, c.optimizer = o, c.max_grad_norm = 0.5f;
    if (GetParam() == Precision::tf32) c.backend = AttentionBackend::unfused;
    LanguageModel model(c);
    model.init_parameters(4);
    model.set_data(kernels::step_data(c));
    const std::vector<double> before = model.download("layer0.wqkv", Values::weights, nullptr);
    for (int i = 0; i < 3; ++i) model.step(nullptr);
    EXPECT_NE(model.download("layer0.wqkv", Values::weights, nullptr), before);  // written
    const int k = o == OptimizerKind::unfused;
    loss[k] = model.loss(nullptr);
    EXPECT_EQ(model.scalars(nullptr).step, 3);
    for (const std::string& p : model.parameters()) {
      w[k][p] = model.download(p, Values::weights, nullptr);
      master[k][p] = model.download(p, Values::master, nullptr);
    }
  }
  EXPECT_EQ(loss[0], loss[1]);
  for (const auto& kv : w[0]) {
    EXPECT_EQ(kv.second, w[1].at(kv.first)) << kv.first;
    EXPECT_EQ(master[0].at(kv.first), master[1].at(kv.first)) << kv.first;
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, TrainStepAdamW,
                         ::testing::Values(Precision::bf16, Precision::tf32),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// The plan made before allocating against the device memory the model and two steps took
// (cudaMemGetInfo, GEMM plans cleared first so their workspaces count): within 10%. The whole
// 24-layer bert-large and gpt2-medium, checkpointing off and on, and tf32's fp32 weights (their
// own master copy) on 6 layers.
TEST(TrainStepGpu, MemoryPlanWithinTenPercent) {
  SKIP_WITHOUT_GPU();
  std::vector<TrainConfig> configs;
  for (const char* name : {"bert-large", "gpt2-medium"})
    for (bool ckpt : {false, true}) {
      TrainConfig c;
      c.model = lm_model(name);
      c.seq = c.model.kind == LmKind::masked ? 128 : 1024;
      c.batch = c.model.kind == LmKind::masked ? 32 : 8;
      c.checkpointing = ckpt;
      configs.push_back(c);
    }
  TrainConfig t = configs.front();
  t.model.layers = 6, t.precision = Precision::tf32, t.backend = AttentionBackend::unfused;
  configs.push_back(t);
  for (const TrainConfig& c : configs) {
    clear_gemm_plans();
    XF_CUDA_CHECK(cudaDeviceSynchronize());
    const std::size_t before = train::device_memory_used();
    const double planned = double(LanguageModel::plan_memory(c).total());
    LanguageModel model(c);
    model.init_parameters(1);
    model.set_data(kernels::step_data(c));
    model.step(nullptr), model.step(nullptr);
    XF_CUDA_CHECK(cudaDeviceSynchronize());
    const double used = double(train::device_memory_used()) - double(before);
    std::printf("%s: planned %.3f GB, used %.3f GB\n", c.describe().c_str(), planned / 1e9,
                used / 1e9);
    EXPECT_NEAR(planned / used, 1.0, 0.1) << model.memory_plan().describe();
  }
}

// The first loss the validation expects (ln V + hidden·0.02²/2) against cross-entropies of random
// logits as a normalised hidden state (rms 1) and normal(0, 0.02) weights make them: normal with
// variance hidden·0.02². Llama 3.2 3B starts at 12.37, 5.2% above ln V: ln V alone failed it.
TEST(TrainValidate, InitialLossIsLnVPlusHalfTheLogitVariance) {
  std::mt19937_64 rng(7);
  for (auto [vocab, hidden] : {std::pair{128256, 3072}, {128256, 2048}, {50257, 1024}}) {
    std::normal_distribution<double> logit(0.0, std::sqrt(hidden * 0.02 * 0.02));
    std::vector<double> z(vocab);
    double mean = 0;
    const int samples = 8;
    for (int i = 0; i < samples; ++i) {
      double mx = -1e300, sum = 0, label = 0;
      for (double& v : z) mx = std::max(mx, v = logit(rng));
      for (double v : z) sum += std::exp(v - mx), label += v / vocab;  // every token as the label
      mean += (mx + std::log(sum) - label) / samples;
    }
    EXPECT_NEAR(mean / train::initial_loss(vocab, hidden), 1.0, 0.01) << vocab << " " << hidden;
    EXPECT_GT(train::initial_loss(vocab, hidden), std::log(double(vocab)));
  }
}

// The plugin's validation on the tiny models: the first loss is as expected within 5%, and it
// falls.
TEST(TrainStepGpu, LossStartsAtLnVocabAndFalls) {
  SKIP_WITHOUT_GPU();
  for (LmKind kind : {LmKind::masked, LmKind::causal})
    for (Precision p : {Precision::bf16, Precision::tf32}) {
      TrainConfig c = xftest::tiny(kind, p);
      c.dropout = 0.1f, c.adamw.lr = 1e-3f;
      if (p == Precision::tf32) c.backend = AttentionBackend::unfused;
      LanguageModel model(c);
      model.init_parameters(2);
      model.set_data(kernels::step_data(c));
      std::printf("%s\n", train::validate_training(model, nullptr).c_str());
    }
}

// Llama (issue 38): every gradient of the tiny Llama (GQA 2:1, head dim 64, RoPE, SwiGLU,
// RMSNorm) against the float64 reference, the head tied (3.2) or its own (3.1-8b), on the three
// attention backends; and the plugin's training check (first loss ln V, then lower).
TEST(TrainStepGpu, LlamaGradientsMatchTheReference) {
  SKIP_WITHOUT_GPU();
  for (bool tied : {true, false})
    for (Precision p : {Precision::fp16, Precision::bf16})
      for (AttentionBackend be :
           {AttentionBackend::fused, AttentionBackend::unfused, AttentionBackend::flash}) {
        TrainConfig c = xftest::tiny_llama(p, tied);
        c.backend = be;
        if (be == AttentionBackend::flash) c.seq = 64;  // flash takes multiples of 64
        const double tol = p == Precision::bf16 ? 6e-2 : 1e-2;
        std::printf("%-70s worst gradient rel_l2 %.2e\n", c.describe().c_str(),
                    check_gradients(c, tol));
      }
  TrainConfig c = xftest::tiny_llama(Precision::bf16, false);
  c.adamw.lr = 1e-3f;
  LanguageModel model(c);
  model.init_parameters(2);
  model.set_data(kernels::step_data(c));
  std::printf("%s\n", train::validate_training(model, nullptr).c_str());
}

// FP8 (issue 34): the tiny Llama's gradients against the float64 reference within FP8's limits —
// one step with current scaling (the scales from this step's amaxes), 25% relative L2 (a gradient
// crosses up to eight FP8 products over two layers, each ~5.7%: test_fp8_linear; measured 12%),
// the loss within 2% — and the plugin's checks on both recipes: the loss starts where random
// weights put it and falls on one batch; then, trained afresh on the synthetic language's stream
// beside the bf16 step from the same initialisation, its loss after 30 and 200 steps within the
// plugin's 1% of bf16's (the label's numbers are printed). The check cannot pass by accident: a
// wrong scale stalls the loss by far more (the bf16 curve falls from 6.9 towards 1.11).
TEST(TrainStepGpu, Fp8LlamaTrainsAsBf16Does) {
  SKIP_WITHOUT_GPU();
  if (xfbench::device_info().cc() < 89) GTEST_SKIP() << "no fp8 tensor cores";
  TrainConfig c = xftest::tiny_llama(Precision::fp8, false);
  c.fp8.recipe = kernels::Fp8Recipe::current;
  std::printf("%-70s worst gradient rel_l2 %.2e\n", c.describe().c_str(),
              check_gradients(c, 0.25, 0.02));
  c.model.vocab = kernels::kLanguageWords;  // the language's words, each its own id
  c.adamw.lr = 1e-3f;
  const int steps = train::kFp8Checkpoints[1];
  TrainConfig b = c;
  b.precision = Precision::bf16;
  LanguageModel bf16(b);
  bf16.init_parameters(2);
  const std::vector<float> bf16_losses = train::language_losses(bf16, steps, nullptr);
  EXPECT_LT(train::loss_after(bf16_losses, steps), 0.8 * train::loss_after(bf16_losses, 5))
      << "the bf16 step learns the language";
  for (kernels::Fp8Recipe r : {kernels::Fp8Recipe::delayed, kernels::Fp8Recipe::current}) {
    c.fp8.recipe = r;
    LanguageModel model(c);
    model.init_parameters(2);
    model.set_data(kernels::step_data(c));
    std::printf("%s: %s\n", kernels::to_string(r),
                train::validate_training(model, nullptr).c_str());
    model.init_parameters(2);
    const std::vector<float> losses = train::language_losses(model, steps, nullptr);
    std::string label;
    EXPECT_NO_THROW(label = train::fp8_against_bf16(losses, bf16_losses)) << kernels::to_string(r);
    std::printf("  %s\n", label.c_str());
  }
}

// GPT-2's biased pre-LN layers and BERT's post-LN ones in FP8 (the QKV bias through the FP8 bias
// epilogue, the bias gradients as column sums; post-LN: each data gradient added to the norm's
// residual gradient by the product), every gradient against the float64 reference with the FP8
// limits of the Llama test above.
TEST(TrainStepGpu, Fp8Gpt2AndBertGradientsMatchTheReference) {
  SKIP_WITHOUT_GPU();
  if (xfbench::device_info().cc() < 89) GTEST_SKIP() << "no fp8 tensor cores";
  for (LmKind kind : {LmKind::causal, LmKind::masked})
    for (kernels::Fp8Recipe r : {kernels::Fp8Recipe::delayed, kernels::Fp8Recipe::current}) {
      TrainConfig c = xftest::tiny(kind, Precision::fp8);
      c.fp8.recipe = r;
      std::printf("%-70s worst gradient rel_l2 %.2e\n", c.describe().c_str(),
                  check_gradients(c, 0.25, 0.02));
    }
}

// The FP8 accuracy rule on its own: the loss after each checkpoint (the median of the five steps
// ending there) within 1% of bf16's, both ways; a spike on one or two steps of the window does
// not decide; what cannot compare fails.
TEST(TrainValidate, Fp8LossAfter30And200StepsWithinOnePercentOfBf16) {
  std::vector<float> bf16(200, 4.f);
  for (int i = 25; i < 30; ++i) bf16[std::size_t(i)] = 6.f;  // after 30: 6, after 200: 4
  EXPECT_EQ(train::loss_after(bf16, 30), 6.0);
  EXPECT_EQ(train::loss_after(bf16, 200), 4.0);
  EXPECT_TRUE(std::isnan(train::loss_after(bf16, 201)));
  EXPECT_TRUE(std::isnan(train::loss_after(bf16, 4)));
  auto with = [](std::vector<float> f, int step, float v) {
    f[std::size_t(step)] = v;
    return f;
  };
  auto shifted = [](std::vector<float> f, int end, float v) {  // the window ending at `end`
    for (int i = end - 5; i < end; ++i) f[std::size_t(i)] = v;
    return f;
  };
  // The median: 6, 6, 6.1, 6.2, 12 -> 6.1; a spike of one step moves it no more than its neighbour.
  EXPECT_FLOAT_EQ(train::loss_after(with(with(with(bf16, 29, 12.f), 28, 6.2f), 27, 6.1f), 30), 6.1);
  EXPECT_NO_THROW(train::fp8_against_bf16(bf16, bf16));
  EXPECT_NO_THROW(train::fp8_against_bf16(shifted(bf16, 30, 6.05f), bf16));                // +0.83%
  EXPECT_THROW(train::fp8_against_bf16(shifted(bf16, 30, 6.07f), bf16), ValidationError);  // +1.17%
  EXPECT_THROW(train::fp8_against_bf16(shifted(bf16, 200, 3.95f), bf16),
               ValidationError);                                         // -1.25%
  EXPECT_NO_THROW(train::fp8_against_bf16(with(bf16, 100, 9.f), bf16));  // between the checkpoints
  EXPECT_NO_THROW(train::fp8_against_bf16(with(with(bf16, 27, 12.f), 28, 11.f), bf16));  // 2 spikes
  EXPECT_NO_THROW(train::fp8_against_bf16(bf16, with(bf16, 26, 12.f)));  // bf16's spike
  EXPECT_THROW(train::fp8_against_bf16(with(with(with(bf16, 26, 12.f), 27, 12.f), 28, 12.f), bf16),
               ValidationError);  // three of five: the trend
  EXPECT_THROW(train::fp8_against_bf16(with(bf16, 197, NAN), bf16), ValidationError);
  EXPECT_THROW(train::fp8_against_bf16(std::vector<float>(150, 4.f), bf16), ValidationError);
  const std::string label = train::fp8_against_bf16(shifted(bf16, 30, 6.05f), bf16);
  EXPECT_NE(label.find("fp8 loss after 30 steps 6.0500 (bf16 6.0000, +0.83%), after 200 4.0000 "
                       "(4.0000, +0.00%)"),
            std::string::npos)
      << label;
  try {
    train::fp8_against_bf16(shifted(bf16, 200, 3.95f), bf16);
  } catch (const ValidationError& e) {
    EXPECT_NE(e.message().find("more than 1% from bf16's after 200 steps"), std::string::npos)
        << e.message();
  }
  // A second bf16 run: within 1% of the range the two span (after 30: 6.0 and 6.5).
  const std::vector<float> again = shifted(bf16, 30, 6.5f);
  EXPECT_NO_THROW(train::fp8_against_bf16(shifted(bf16, 30, 6.2f), bf16, again));   // inside
  EXPECT_NO_THROW(train::fp8_against_bf16(bf16, bf16, again));                      // its lower end
  EXPECT_NO_THROW(train::fp8_against_bf16(shifted(bf16, 30, 6.52f), bf16, again));  // +0.31%
  EXPECT_THROW(train::fp8_against_bf16(shifted(bf16, 30, 6.58f), bf16, again), ValidationError);
  EXPECT_THROW(train::fp8_against_bf16(shifted(bf16, 30, 5.4f), bf16, again), ValidationError);
  EXPECT_NE(train::fp8_against_bf16(shifted(bf16, 30, 6.2f), bf16, again)
                .find("fp8 loss after 30 steps 6.2000 (bf16 6.0000/6.5000, +0.00%)"),
            std::string::npos);
  std::vector<float> short_again(150, 4.f);  // cannot compare after 200
  EXPECT_THROW(train::fp8_against_bf16(bf16, bf16, short_again), ValidationError);
}

// The FP8 check's warm-up: linear to the configured rate over kFp8WarmupSteps steps, then flat.
TEST(TrainValidate, Fp8CheckWarmsTheLearningRateUp) {
  EXPECT_FLOAT_EQ(train::fp8_check_lr(3e-4f, 0), 3e-4f / train::kFp8WarmupSteps);
  EXPECT_FLOAT_EQ(train::fp8_check_lr(3e-4f, 14), 3e-4f * 15 / train::kFp8WarmupSteps);
  EXPECT_FLOAT_EQ(train::fp8_check_lr(3e-4f, train::kFp8WarmupSteps - 1), 3e-4f);
  EXPECT_FLOAT_EQ(train::fp8_check_lr(3e-4f, 199), 3e-4f);
}

// The synthetic language: next-token labels, the words' ids only, at most four successors per
// word, and the next token's conditional entropy measured on 262,144 tokens (the plug-in estimate,
// ~256 transitions per word: biased low by ~0.006) equal to the entropy the loss can fall to.
TEST(TrainData, LanguageBatchFollowsItsChain) {
  TrainConfig c = xftest::tiny_llama();
  c.model.vocab = 4096, c.batch = 256, c.seq = 1024;
  EXPECT_NEAR(kernels::language_entropy(), 1.1097, 1e-4);
  const kernels::TokenBatch d = kernels::language_batch(c, 1);
  EXPECT_EQ(d.ids, kernels::language_batch(c, 1).ids);
  EXPECT_NE(d.ids, kernels::language_batch(c, 2).ids);
  std::map<int, std::map<int, int>> next;  // id -> successor id -> count
  for (int t = 0; t < c.tokens(); ++t) {
    ASSERT_EQ(d.ids[std::size_t(t)] % (c.model.vocab / kernels::kLanguageWords), 0);
    if ((t + 1) % c.seq == 0) {
      ASSERT_EQ(d.labels[std::size_t(t)], kernels::kIgnoreIndex);
    } else {
      ASSERT_EQ(d.labels[std::size_t(t)], d.ids[std::size_t(t) + 1]);
      ++next[d.ids[std::size_t(t)]][d.ids[std::size_t(t) + 1]];
    }
  }
  double h = 0, all = 0;
  for (const auto& [id, succ] : next) {
    EXPECT_LE(succ.size(), 4u) << "word " << id;
    double n = 0;
    for (const auto& [s, k] : succ) n += k;
    for (const auto& [s, k] : succ) h -= k * std::log(k / n);
    all += n;
  }
  EXPECT_NEAR(h / all, kernels::language_entropy(), 0.02);
  c.model = kernels::lm_model("bert-large");
  EXPECT_THROW(kernels::language_batch(c, 1), xfbench::InvalidArgument);
}

// fp16: an overflowing loss scale skips the step (weights unchanged, counted) and halves.
TEST(TrainStepGpu, Fp16OverflowSkipsTheStep) {
  SKIP_WITHOUT_GPU();
  TrainConfig c = xftest::tiny(LmKind::causal, Precision::fp16);
  c.initial_loss_scale = 1e30f;  // dlogits overflow fp16
  LanguageModel model(c);
  model.init_parameters(6);
  model.set_data(kernels::step_data(c));
  const std::vector<double> before = model.download("layer0.wqkv", Values::weights, nullptr);
  model.step(nullptr);
  const TrainScalars s = model.scalars(nullptr);
  EXPECT_EQ(s.skipped, 1);
  EXPECT_EQ(s.step, 0);
  EXPECT_FLOAT_EQ(s.loss_scale, 0.5e30f);
  EXPECT_EQ(model.download("layer0.wqkv", Values::weights, nullptr), before);
}

TEST(TrainStepGpu, TooLargeIsSkippedWithTheNeed) {
  SKIP_WITHOUT_GPU();
  TrainConfig c;
  c.model = lm_model("gpt2-xl");
  c.seq = 1024, c.batch = 512;
  try {
    LanguageModel model(c);
    ADD_FAILURE() << "gpt2-xl batch 512 fitted";
  } catch (const Unsupported& e) {
    EXPECT_NE(e.message().find("out of memory: needs ~"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("GB free"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("checkpointing"), std::string::npos) << e.message();
  }
}
