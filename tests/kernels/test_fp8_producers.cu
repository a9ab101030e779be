// Producers writing FP8 (issue 34): the norms and the activations whose output an FP8 product reads
// next write it in FP8 in their own pass (fp8.hpp: Fp8Output), and the weight gradient transposes
// those bytes (fp8_transpose) instead of casting a bf16 copy again.
//
// Each producer runs twice, on the same inputs: writing bf16, then writing FP8. The FP8 bytes must
// be those fp8_cast gives the bf16 output with the same scale, up to the double rounding the bf16
// path adds (fp32 -> bf16 -> e4m3 against fp32 -> e4m3): a byte may differ by one code where the
// bf16 rounding crossed an e4m3 rounding boundary (about 2^-9 against e4m3's 2^-4..2^-3 spacing:
// ~1% of the bytes; bound 3%, each at most one code apart); the amax and the scale the recipe
// gives must agree with fp8_cast's on the bf16 output within one bf16 unit.
// Each recipe runs two steps: the delayed one's first measures its amax (two launches), its
// second casts with the history's scale (one launch); the current one measures both times.
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/activation.hpp"
#include "kernels/dropout.hpp"
#include "kernels/fp8.hpp"
#include "kernels/gelu.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/rope.hpp"
#include "test_gpu.hpp"
#include "test_util.hpp"
#include "xfbench/device.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;
using bf16 = __nv_bfloat16;

namespace {

bool has_fp8() { return xfbench::device_info().cc() >= 89; }

std::vector<std::uint8_t> bytes_of(const xfbench::DeviceBuffer<std::uint8_t>& q) {
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint8_t> h(q.size());
  XF_CUDA_CHECK(cudaMemcpy(h.data(), q.data(), h.size(), cudaMemcpyDeviceToHost));
  return h;
}

// An e4m3 byte as an ordered code: sign-magnitude to a signed integer, so neighbours differ by 1.
int code(std::uint8_t b) { return (b & 0x80) ? -int(b & 0x7f) : int(b & 0x7f); }

// A producer: writes [rows, cols] either as bf16 into out or, with fp8 given, as FP8.
using Producer = std::function<void(bf16* out, const xk::Fp8Output* fp8)>;

// The bytes a cast of the bf16 output gives with exactly `scale` (a one-step history, past its
// first step, so the cast keeps the scale it is given).
std::vector<std::uint8_t> cast_with(const bf16* out, std::size_t n, float scale, xk::Fp8Format f) {
  xk::Fp8Scales same({f}, xk::Fp8RecipeConfig{xk::Fp8Recipe::delayed, 1, 0});
  same.update(nullptr);  // amax 0: the scale stays, and the first step is over
  const float inv = 1.f / scale;
  XF_CUDA_CHECK(cudaMemcpy(same.scale(0), &scale, 4, cudaMemcpyHostToDevice));
  XF_CUDA_CHECK(cudaMemcpy(const_cast<float*>(same.scale_inv(0)), &inv, 4, cudaMemcpyHostToDevice));
  xfbench::DeviceBuffer<std::uint8_t> q(n);
  xk::fp8_cast(q.data(), out, n, same, 0, nullptr);
  return bytes_of(q);
}

void expect_like_a_cast(const Producer& produce, int rows, int cols, xk::Fp8Recipe recipe,
                        xk::Fp8Format format = xk::Fp8Format::e4m3) {
  const std::size_t n = std::size_t(rows) * cols;
  xk::Fp8RecipeConfig rc;
  rc.recipe = recipe;
  xk::Fp8Scales fused({format}, rc), cast({format}, rc);
  Dev<bf16> out(n);
  xfbench::DeviceBuffer<std::uint8_t> q_fused(n), q_cast(n);
  for (int step = 0; step < 2; ++step) {
    const std::string at = std::string(xk::to_string(recipe)) + " " + xk::to_string(format) +
                           " step " + std::to_string(step);
    produce(out.get(), nullptr);
    xk::fp8_cast(q_cast.data(), out.get(), n, cast, 0, nullptr);  // the recipe on the bf16 output
    const xk::Fp8Output fp8{q_fused.data(), &fused, 0};
    produce(nullptr, &fp8);
    // The recipe's bookkeeping: the amax (of fp32 values against their bf16 roundings) and the
    // scale agree within a bf16 unit.
    const float amax_f = fused.amaxes()[0], amax_c = cast.amaxes()[0];
    const float scale_f = fused.scales()[0], scale_c = cast.scales()[0];
    EXPECT_NEAR(amax_f, amax_c, amax_c / 128) << at;
    EXPECT_NEAR(scale_f, scale_c, scale_c / 128) << at;
    EXPECT_GT(amax_f, 0.f) << at;
    EXPECT_NE(scale_f, 1.f) << at << ": the scale was never set";
    EXPECT_EQ(fused.overflow_count(), 0u) << at;
    // The bytes: those of a cast of the bf16 output with the fused pass's own scale, but for the
    // double rounding.
    const std::vector<std::uint8_t> a = bytes_of(q_fused),
                                    b = cast_with(out.get(), n, scale_f, format);
    std::size_t differ = 0, far = 0;
    for (std::size_t i = 0; i < n; ++i) {
      differ += a[i] != b[i];
      far += std::abs(code(a[i]) - code(b[i])) > 1;
    }
    EXPECT_EQ(far, 0u) << at << ": bytes more than one code from the cast's";
    EXPECT_LE(differ, n * 3 / 100) << at << ": " << differ << " of " << n << " bytes differ";
    EXPECT_GT(n - differ, n * 9 / 10) << at;
    if (recipe == xk::Fp8Recipe::delayed) fused.update(nullptr), cast.update(nullptr);
  }
}

// A producer writing FP8 (with Fp8Output::qt, the tile pass) writes the flat pass's bytes, their
// transpose [cols, rows] into qt, and the same amax and scale, over a recipe's two steps.
using Fp8Producer = std::function<void(const xk::Fp8Output*)>;
void expect_transposed_like_flat(const Fp8Producer& produce, int rows, int cols,
                                 xk::Fp8Recipe recipe, xk::Fp8Format format,
                                 const std::string& what) {
  xk::Fp8RecipeConfig rc;
  rc.recipe = recipe;
  xk::Fp8Scales flat({format}, rc), tiles({format}, rc);
  const std::size_t n = std::size_t(rows) * cols;
  xfbench::DeviceBuffer<std::uint8_t> q_flat(n), q(n), qt(n), q_t(n);
  for (int step = 0; step < 2; ++step) {
    const std::string at = what + ", step " + std::to_string(step);
    const xk::Fp8Output a{q_flat.data(), &flat, 0}, b{q.data(), &tiles, 0, qt.data()};
    produce(&a);
    produce(&b);
    xk::fp8_transpose(q_t.data(), q.data(), rows, cols, nullptr);
    EXPECT_EQ(bytes_of(q), bytes_of(q_flat)) << at;
    EXPECT_EQ(bytes_of(qt), bytes_of(q_t)) << at << ": qt is not q's transpose";
    EXPECT_EQ(tiles.amaxes()[0], flat.amaxes()[0]) << at;
    EXPECT_EQ(tiles.scales()[0], flat.scales()[0]) << at;
    EXPECT_NE(tiles.scales()[0], 1.f) << at << ": the scale was never set";
    if (recipe == xk::Fp8Recipe::delayed) flat.update(nullptr), tiles.update(nullptr);
  }
}

class Fp8ProducersGpu : public ::testing::TestWithParam<xk::Fp8Recipe> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    if (!has_fp8()) GTEST_SKIP() << "no fp8 (compute capability below 8.9)";
  }
  static constexpr int N = 96, C = 640, I = 1216;  // rows, hidden, intermediate
  static constexpr float kEps = 1e-5f;
};

TEST_P(Fp8ProducersGpu, RmsNormAndItsResidualForm) {
  Dev<bf16> x(random_values<bf16>(std::size_t(N) * C, -3, 3, 11));
  Dev<bf16> res(random_values<bf16>(std::size_t(N) * C, -1, 1, 12));
  Dev<bf16> w(random_values<bf16>(C, 0.5, 1.5, 13)), z(std::size_t(N) * C);
  xfbench::DeviceBuffer<float> rstd(N), rstd_fp8(N);
  expect_like_a_cast(
      [&](bf16* out, const xk::Fp8Output* fp8) {
        xk::rmsnorm_forward<bf16>(out, rstd.data(), x.get(), w.get(), N, C, kEps, nullptr, fp8);
      },
      N, C, GetParam());
  expect_like_a_cast(
      [&](bf16* out, const xk::Fp8Output* fp8) {
        xk::dropout_residual_rmsnorm_forward<bf16>(
            out, z.get(), fp8 ? rstd_fp8.data() : rstd.data(), x.get(), res.get(), w.get(),
            xk::Dropout{0.1f, 7, 3}, N, C, kEps, nullptr, fp8);
      },
      N, C, GetParam());
  // The FP8 path saves the same statistics and residual sum as the bf16 one.
  std::vector<float> a(N), b(N);
  XF_CUDA_CHECK(cudaMemcpy(a.data(), rstd.data(), N * 4, cudaMemcpyDeviceToHost));
  XF_CUDA_CHECK(cudaMemcpy(b.data(), rstd_fp8.data(), N * 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(a, b);
}

TEST_P(Fp8ProducersGpu, LayerNormAndItsResidualForm) {
  Dev<bf16> x(random_values<bf16>(std::size_t(N) * C, -3, 3, 21));
  Dev<bf16> xb(random_values<bf16>(C, -0.5, 0.5, 22));
  Dev<bf16> res(random_values<bf16>(std::size_t(N) * C, -1, 1, 23));
  Dev<bf16> w(random_values<bf16>(C, 0.5, 1.5, 24)), b(random_values<bf16>(C, -0.2, 0.2, 25));
  Dev<bf16> z(std::size_t(N) * C);
  xfbench::DeviceBuffer<float> mean(N), rstd(N);
  expect_like_a_cast(
      [&](bf16* out, const xk::Fp8Output* fp8) {
        xk::layernorm_forward<bf16>(out, mean.data(), rstd.data(), x.get(), w.get(), b.get(), N, C,
                                    kEps, nullptr, fp8);
      },
      N, C, GetParam());
  expect_like_a_cast(
      [&](bf16* out, const xk::Fp8Output* fp8) {
        xk::bias_dropout_residual_layernorm_forward<bf16>(
            out, z.get(), mean.data(), rstd.data(), x.get(), xb.get(), res.get(), w.get(), b.get(),
            xk::Dropout{0.1f, 9, 4}, N, C, kEps, nullptr, fp8);
      },
      N, C, GetParam());
}

TEST_P(Fp8ProducersGpu, GeluAndGatedActivations) {
  Dev<bf16> pre(random_values<bf16>(std::size_t(N) * 2 * I, -4, 4, 31));
  Dev<bf16> bias(random_values<bf16>(I, -0.5, 0.5, 32));
  for (xk::Gelu kind : {xk::Gelu::erf, xk::Gelu::tanh}) {
    expect_like_a_cast(
        [&](bf16* out, const xk::Fp8Output* fp8) {
          xk::bias_gelu_forward<bf16>(out, pre.get(), bias.get(), N, I, kind, nullptr, fp8);
        },
        N, I, GetParam());
  }
  for (xk::GateAct gate : {xk::GateAct::silu, xk::GateAct::gelu_tanh}) {
    expect_like_a_cast(
        [&](bf16* out, const xk::Fp8Output* fp8) {
          xk::gated_dropout_forward<bf16>(out, pre.get(), N, I, gate, xk::Dropout{0.1f, 5, 2},
                                          nullptr, fp8);
        },
        N, I, GetParam());
  }
}

// The GELU's and the gated FFN's forward in a training block write their FP8 output and the
// transpose at once (the tile pass): the same bytes as the flat pass, qt their transpose, the same
// amax and scale.
TEST_P(Fp8ProducersGpu, ActivationForwardsWriteTheirTransposeToo) {
  Dev<bf16> pre(random_values<bf16>(std::size_t(N) * 2 * I, -4, 4, 61));
  Dev<bf16> bias(random_values<bf16>(I, -0.5, 0.5, 62));
  const std::vector<std::pair<std::string, Fp8Producer>> forwards = {
      {"gelu erf",
       [&](const xk::Fp8Output* o) {
         xk::bias_gelu_forward<bf16>(nullptr, pre.get(), bias.get(), N, I, xk::Gelu::erf, nullptr,
                                     o);
       }},
      {"gelu tanh",
       [&](const xk::Fp8Output* o) {
         xk::bias_gelu_forward<bf16>(nullptr, pre.get(), bias.get(), N, I, xk::Gelu::tanh, nullptr,
                                     o);
       }},
      {"gated silu, dropout",
       [&](const xk::Fp8Output* o) {
         xk::gated_dropout_forward<bf16>(nullptr, pre.get(), N, I, xk::GateAct::silu,
                                         xk::Dropout{0.1f, 5, 2}, nullptr, o);
       }},
      {"gated gelu tanh", [&](const xk::Fp8Output* o) {
         xk::gated_dropout_forward<bf16>(nullptr, pre.get(), N, I, xk::GateAct::gelu_tanh,
                                         xk::Dropout{}, nullptr, o);
       }}};
  for (const auto& [name, forward] : forwards)
    expect_transposed_like_flat(forward, N, I, GetParam(), xk::Fp8Format::e4m3, name);
}

// A pre-norm block's last residual in reverse writes the down projection's gradient do2 [N, H]
// (dropout's backward of dout) in e5m2, its transpose and the bias gradient, in one pass.
TEST_P(Fp8ProducersGpu, DropoutBackwardWritesItsGradientTransposeAndBiasGradient) {
  Dev<bf16> dout(random_values<bf16>(std::size_t(N) * C, -1e-3, 1e-3, 71));
  xfbench::DeviceBuffer<float> scratch(xk::norm_backward_scratch_bytes(C) / 4);
  const xk::Dropout drop{0.1f, 5, 2};
  expect_like_a_cast(
      [&](bf16* dx, const xk::Fp8Output* fp8) {
        xk::dropout_bias_backward<bf16>(dx, nullptr, scratch.data(), dout.get(), drop, N, C,
                                        nullptr, fp8);
      },
      N, C, GetParam(), xk::Fp8Format::e5m2);
  xk::Fp8Scales scales({xk::Fp8Format::e5m2}, xk::Fp8RecipeConfig{GetParam(), 16, 0});
  const std::size_t n = std::size_t(N) * C;
  xfbench::DeviceBuffer<std::uint8_t> q(n), qt(n), q_t(n);
  Dev<bf16> dbias8(C), dbias(C), dx(n);
  const xk::Fp8Output out{q.data(), &scales, 0, qt.data()};
  xk::dropout_bias_backward<bf16>(nullptr, dbias8.get(), scratch.data(), dout.get(), drop, N, C,
                                  nullptr, &out);
  xk::dropout_bias_backward<bf16>(dx.get(), dbias.get(), scratch.data(), dout.get(), drop, N, C,
                                  nullptr);
  xk::fp8_transpose(q_t.data(), q.data(), N, C, nullptr);
  EXPECT_EQ(bytes_of(qt), bytes_of(q_t)) << "qt is not q's transpose";
  const std::vector<double> a = dbias8.host(), b = dbias.host(), d = dx.host();
  std::vector<double> size(std::size_t(C), 0.0);
  std::size_t zeros = 0;
  for (std::size_t i = 0; i < n; ++i) size[i % C] += std::abs(d[i]), zeros += d[i] == 0;
  EXPECT_GT(zeros, n / 20) << "no dropout applied";
  std::size_t far = 0;
  for (int c = 0; c < C; ++c)
    far += !(std::abs(a[std::size_t(c)] - b[std::size_t(c)]) <= size[std::size_t(c)] * 0x1p-7);
  EXPECT_EQ(far, 0u) << "dbias from the FP8 pass off the bf16 path's";
}

// The gated FFN's backward writes the up projection's gradient dpre [N, 2I] (dgate, dlinear) in
// e5m2 where only FP8 products read it (a block without linear biases), and, in a training block,
// its transpose [2I, N] in the same pass (the tile pass, two parts): the flat pass's bytes, qt
// their transpose, the same amax and scale.
TEST_P(Fp8ProducersGpu, GatedBackwardWritesItsGradientAndTranspose) {
  Dev<bf16> pre(random_values<bf16>(std::size_t(N) * 2 * I, -4, 4, 41));
  Dev<bf16> dact(random_values<bf16>(std::size_t(N) * I, -1e-3, 1e-3, 42));
  for (xk::GateAct gate : {xk::GateAct::silu, xk::GateAct::gelu_erf}) {
    const xk::Dropout drop{0.1f, 5, 2};
    expect_like_a_cast(
        [&](bf16* dpre, const xk::Fp8Output* fp8) {
          xk::gated_dropout_backward<bf16>(dpre, dact.get(), pre.get(), N, I, gate, drop, nullptr,
                                           fp8);
        },
        N, 2 * I, GetParam(), xk::Fp8Format::e5m2);
    expect_transposed_like_flat(
        [&](const xk::Fp8Output* o) {
          xk::gated_dropout_backward<bf16>(nullptr, dact.get(), pre.get(), N, I, gate, drop,
                                           nullptr, o);
        },
        N, 2 * I, GetParam(), xk::Fp8Format::e5m2, "gated backward");
  }
}

// The GELU's backward writes the up projection's gradient dpre [N, I] in e5m2 where only FP8
// products read it (GPT-2, BERT: with the bias gradient from the same pass), and its transpose.
TEST_P(Fp8ProducersGpu, GeluBackwardWritesItsGradientTransposeAndBiasGradient) {
  Dev<bf16> pre(random_values<bf16>(std::size_t(N) * I, -4, 4, 51));
  Dev<bf16> bias(random_values<bf16>(I, -0.5, 0.5, 52));
  Dev<bf16> dact(random_values<bf16>(std::size_t(N) * I, -1e-3, 1e-3, 53));
  xfbench::DeviceBuffer<float> scratch(xk::norm_backward_scratch_bytes(I) / 4);
  for (xk::Gelu kind : {xk::Gelu::erf, xk::Gelu::tanh}) {
    expect_like_a_cast(
        [&](bf16* dpre, const xk::Fp8Output* fp8) {
          xk::bias_gelu_backward<bf16>(dpre, nullptr, scratch.data(), dact.get(), pre.get(),
                                       bias.get(), N, I, kind, nullptr, fp8);
        },
        N, I, GetParam(), xk::Fp8Format::e5m2);
    // qt is q's transpose, byte for byte; dbias is the bf16 path's within a bf16 unit of the
    // column's size (both sum fp32 values, in other orders).
    xk::Fp8Scales scales({xk::Fp8Format::e5m2}, xk::Fp8RecipeConfig{GetParam(), 16, 0});
    xfbench::DeviceBuffer<std::uint8_t> q(std::size_t(N) * I), qt(std::size_t(N) * I),
        q_t(std::size_t(N) * I);
    Dev<bf16> dbias8(I), dbias(I), dpre(std::size_t(N) * I);
    xk::Fp8Output out{q.data(), &scales, 0, qt.data()};
    xk::bias_gelu_backward<bf16>(nullptr, dbias8.get(), scratch.data(), dact.get(), pre.get(),
                                 bias.get(), N, I, kind, nullptr, &out);
    xk::bias_gelu_backward<bf16>(dpre.get(), dbias.get(), scratch.data(), dact.get(), pre.get(),
                                 bias.get(), N, I, kind, nullptr);
    xk::fp8_transpose(q_t.data(), q.data(), N, I, nullptr);
    EXPECT_EQ(bytes_of(qt), bytes_of(q_t)) << "qt is not q's transpose";
    const std::vector<double> a = dbias8.host(), b = dbias.host(), d = dpre.host();
    std::vector<double> size(std::size_t(I), 0.0);
    for (int r = 0; r < N; ++r)
      for (int c = 0; c < I; ++c) size[std::size_t(c)] += std::abs(d[std::size_t(r) * I + c]);
    std::size_t far = 0;
    for (int c = 0; c < I; ++c)
      far += !(std::abs(a[std::size_t(c)] - b[std::size_t(c)]) <= size[std::size_t(c)] * 0x1p-7);
    EXPECT_EQ(far, 0u) << "dbias from the FP8 pass off the bf16 path's";
  }
}

// A Llama block's attention backward in FP8: RoPE's backward writes the QKV projection's gradient
// [N, (NH + 2·NKV)·D] in e5m2 and its transpose from the rotated heads' gradient, in one pass
// (q and k heads rotated back, v's columns as they are): like a cast of the bf16 backward's output.
TEST_P(Fp8ProducersGpu, RopeBackwardWritesTheQkvGradientAndTranspose) {
  constexpr int kSeq = 32, kNH = 4, kNKV = 2, kD = 128, kW = (kNH + 2 * kNKV) * kD;
  xk::RopeConfig rc;
  rc.theta = 500000.0, rc.factor = 8.0;
  const xk::RotaryEmbedding rope(rc, kD, kSeq);
  const std::size_t n = std::size_t(N) * kW;
  Dev<bf16> dqkv(random_values<bf16>(n, -1e-3, 1e-3, 81));
  expect_like_a_cast(
      [&](bf16* out, const xk::Fp8Output* fp8) {
        if (fp8) return rope.backward_fp8<bf16>(dqkv.get(), N, kSeq, kNH, kNKV, *fp8, nullptr);
        XF_CUDA_CHECK(cudaMemcpy(out, dqkv.get(), n * sizeof(bf16), cudaMemcpyDeviceToDevice));
        rope.backward<bf16>(out, N, kSeq, kNH, kNKV, nullptr);
      },
      N, kW, GetParam(), xk::Fp8Format::e5m2);
  expect_transposed_like_flat(
      [&](const xk::Fp8Output* o) {
        rope.backward_fp8<bf16>(dqkv.get(), N, kSeq, kNH, kNKV, *o, nullptr);
      },
      N, kW, GetParam(), xk::Fp8Format::e5m2, "rope backward");
}

INSTANTIATE_TEST_SUITE_P(Recipes, Fp8ProducersGpu,
                         ::testing::Values(xk::Fp8Recipe::delayed, xk::Fp8Recipe::current),
                         [](const auto& info) { return std::string(xk::to_string(info.param)); });

TEST(Fp8Producers, RejectWhatTheyCannotWrite) {
  SKIP_WITHOUT_GPU();  // Fp8Scales allocates on the device
  xk::Fp8Scales scales({xk::Fp8Format::e4m3}, {});
  Dev<bf16> x(std::size_t(16) * 64), w(64);
  xfbench::DeviceBuffer<float> rstd(16);
  xfbench::DeviceBuffer<std::uint8_t> q(16 * 64 + 16);
  const xk::Fp8Output bad_index{q.data(), &scales, 1}, no_scales{q.data(), nullptr, 0},
      misaligned{q.data() + 1, &scales, 0};
  for (const xk::Fp8Output* o : {&bad_index, &no_scales, &misaligned})
    EXPECT_THROW(xk::rmsnorm_forward<bf16>(nullptr, rstd.data(), x.get(), w.get(), 16, 64, 1e-5f,
                                           nullptr, o),
                 xfbench::InvalidArgument);
  EXPECT_THROW(xk::rmsnorm_forward<bf16>(nullptr, rstd.data(), x.get(), w.get(), 16, 64, 1e-5f,
                                         nullptr, nullptr),
               xfbench::InvalidArgument);  // no output at all
  Dev<float> xf(std::size_t(16) * 64), wf(64);
  const xk::Fp8Output ok{q.data(), &scales, 0};
  EXPECT_THROW(xk::rmsnorm_forward<float>(nullptr, rstd.data(), xf.get(), wf.get(), 16, 64, 1e-5f,
                                          nullptr, &ok),
               xfbench::InvalidArgument);
}

TEST(Fp8Transpose, MovesEveryByteAtEdgesOfTiles) {
  SKIP_WITHOUT_GPU();
  for (auto [rows, cols] : {std::pair{16, 16}, {96, 208}, {208, 80}, {128, 64}}) {
    const std::size_t n = std::size_t(rows) * cols;
    std::vector<std::uint8_t> h(n);
    for (std::size_t i = 0; i < n; ++i) h[i] = std::uint8_t((i * 2654435761u) >> 13);
    xfbench::DeviceBuffer<std::uint8_t> q(n), qt(n);
    XF_CUDA_CHECK(cudaMemcpy(q.data(), h.data(), n, cudaMemcpyHostToDevice));
    xfbench::poison(qt.data(), n, nullptr);
    xk::fp8_transpose(qt.data(), q.data(), rows, cols, nullptr);
    const std::vector<std::uint8_t> t = bytes_of(qt);
    std::size_t wrong = 0;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        wrong += t[std::size_t(c) * rows + r] != h[std::size_t(r) * cols + c];
    EXPECT_EQ(wrong, 0u) << rows << " x " << cols;
  }
  xfbench::DeviceBuffer<std::uint8_t> q(64 * 64), qt(64 * 64);
  EXPECT_THROW(xk::fp8_transpose(qt.data(), q.data(), 24, 64, nullptr), xfbench::InvalidArgument);
}

}  // namespace
