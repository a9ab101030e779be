// LayerNorm / RMSNorm forward and backward (plain and fused with bias, dropout and residual)
// against the float64 reference.
//
// Tolerances (per tensor; eps = 2^-11 for fp16, 2^-8 for bf16, 2^-18 for fp32 (its arithmetic,
// test_util.hpp); inputs are exactly representable):
//   out, z            2 eps relative + 2 eps absolute   (one rounding of an fp32 result)
//   mean, rstd (fp32) 1e-5 relative + 1e-6 absolute
//   dz, dx            4 eps relative + 4 eps · max|ref| absolute (cancelling sums)
//   dweight, dbias    4 eps relative + 4 eps · max|ref| absolute
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/layernorm.hpp"
#include "kernels/reference/reference.hpp"
#include "test_util.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

template <class T>
class Norm : public GpuTest {};
using Types = ::testing::Types<__half, __nv_bfloat16, float>;  // float: tf32/fp32 steps
TYPED_TEST_SUITE(Norm, Types);

// Row lengths reaching every (warps per row, vectors per thread) variant of both kernels.
const int kWidths[] = {64, 200, 512, 768, 1000, 1024, 1536, 2048, 3072, 4096, 5120, 8192};
constexpr int kRows = 37;  // not a multiple of any rows-per-block
constexpr float kEps = 1e-5f;

std::vector<double> fetch(const xfbench::DeviceBuffer<float>& b) {
  std::vector<float> f(b.size());
  XF_CUDA_CHECK(cudaMemcpy(f.data(), b.data(), b.bytes(), cudaMemcpyDeviceToHost));
  return std::vector<double>(f.begin(), f.end());
}

template <class T>
void check_forward(int C, bool fused, bool rms, xk::Dropout drop) {
  SCOPED_TRACE("C=" + std::to_string(C) + " fused=" + std::to_string(fused) +
               " rms=" + std::to_string(rms) + " p=" + std::to_string(drop.p));
  const int N = kRows;
  const std::size_t n = std::size_t(N) * C;
  auto x = random_values<T>(n, -2, 2, 1), res = random_values<T>(n, -1, 1, 2);
  auto xb = random_values<T>(C, -0.5, 0.5, 3), w = random_values<T>(C, 0.5, 1.5, 4),
       b = random_values<T>(C, -0.5, 0.5, 5);
  Dev<T> dx(x), dres(res), dxb(xb), dw(w), db(b), out(n), z(n);
  xfbench::DeviceBuffer<float> mean(N), rstd(N);
  if (rms) {
    if (fused)
      xk::dropout_residual_rmsnorm_forward<T>(out.get(), z.get(), rstd.data(), dx.get(), dres.get(),
                                              dw.get(), drop, N, C, kEps, nullptr);
    else
      xk::rmsnorm_forward<T>(out.get(), rstd.data(), dx.get(), dw.get(), N, C, kEps, nullptr);
  } else {
    if (fused)
      xk::bias_dropout_residual_layernorm_forward<T>(out.get(), z.get(), mean.data(), rstd.data(),
                                                     dx.get(), dxb.get(), dres.get(), dw.get(),
                                                     db.get(), drop, N, C, kEps, nullptr);
    else
      xk::layernorm_forward<T>(out.get(), mean.data(), rstd.data(), dx.get(), dw.get(), db.get(), N,
                               C, kEps, nullptr);
  }
  std::vector<double> r_out(n), r_z(n), r_mean(N), r_rstd(N);
  xk::ref::norm_forward(r_out.data(), r_z.data(), r_mean.data(), r_rstd.data(), x.data(),
                        fused && !rms ? xb.data() : nullptr, fused ? res.data() : nullptr, w.data(),
                        rms ? nullptr : b.data(), fused ? drop : xk::Dropout{}, N, C, kEps, rms);
  EXPECT_TRUE(close("out", out.host(), r_out, storage_tol<T>()));
  if (fused) EXPECT_TRUE(close("z", z.host(), r_z, storage_tol<T>()));
  if (!rms) EXPECT_TRUE(close("mean", fetch(mean), r_mean, {1e-6, 1e-5}));
  EXPECT_TRUE(close("rstd", fetch(rstd), r_rstd, {1e-6, 1e-5}));
}

TYPED_TEST(Norm, LayerNormForward) {
  for (int C : kWidths) check_forward<TypeParam>(C, false, false, {});
}

TYPED_TEST(Norm, FusedLayerNormForward) {
  for (int C : kWidths) check_forward<TypeParam>(C, true, false, {0.1f, 1234, 56});
  check_forward<TypeParam>(1024, true, false, {});  // dropout off
}

TYPED_TEST(Norm, RmsNormForward) {
  for (int C : kWidths) {
    check_forward<TypeParam>(C, false, true, {});
    check_forward<TypeParam>(C, true, true, {0.2f, 9, 1});
  }
}

// Backward from z and the forward's statistics; every optional input and output in play.
template <class T>
void check_backward(int C, bool rms, bool extras, xk::Dropout drop) {
  SCOPED_TRACE("C=" + std::to_string(C) + " rms=" + std::to_string(rms) +
               " extras=" + std::to_string(extras) + " p=" + std::to_string(drop.p));
  const int N = kRows;
  const std::size_t n = std::size_t(N) * C;
  auto z = random_values<T>(n, -2, 2, 11), dy = random_values<T>(n, -1, 1, 12),
       dy2 = random_values<T>(n, -1, 1, 13), dres = random_values<T>(n, -1, 1, 14);
  auto w = random_values<T>(C, 0.5, 1.5, 15), b = random_values<T>(C, -0.5, 0.5, 16);
  Dev<T> d_z(z), d_dy(dy), d_dy2(dy2), d_dres(dres), d_w(w), d_b(b), d_out(n);
  Dev<T> g_dz(n), g_dx(n), g_dxb(C), g_dw(C), g_db(C);
  xfbench::DeviceBuffer<float> mean(N), rstd(N);
  xfbench::DeviceBuffer<char> scratch(xk::norm_backward_scratch_bytes(C));
  float* sc = reinterpret_cast<float*>(scratch.data());
  auto run = [&] {
    if (rms) {
      xk::rmsnorm_forward<T>(d_out.get(), rstd.data(), d_z.get(), d_w.get(), N, C, kEps, nullptr);
      xk::rmsnorm_backward<T>(g_dz.get(), g_dw.get(), sc, d_dy.get(),
                              extras ? d_dres.get() : nullptr, d_z.get(), d_w.get(), rstd.data(), N,
                              C, nullptr);
    } else {
      xk::layernorm_forward<T>(d_out.get(), mean.data(), rstd.data(), d_z.get(), d_w.get(),
                               d_b.get(), N, C, kEps, nullptr);
      if (extras)
        xk::bias_dropout_residual_layernorm_backward<T>(
            g_dz.get(), g_dx.get(), g_dxb.get(), g_dw.get(), g_db.get(), sc, d_dy.get(),
            d_dy2.get(), d_dres.get(), d_z.get(), d_w.get(), mean.data(), rstd.data(), drop, N, C,
            nullptr);
      else
        xk::layernorm_backward<T>(g_dz.get(), g_dw.get(), g_db.get(), sc, d_dy.get(), nullptr,
                                  d_z.get(), d_w.get(), mean.data(), rstd.data(), N, C, nullptr);
    }
  };
  run();
  std::vector<double> r_dz(n), r_dx(n), r_dxb(C), r_dw(C), r_db(C);
  const bool fused = extras && !rms;
  xk::ref::norm_backward(r_dz.data(), r_dx.data(), r_dxb.data(), r_dw.data(), r_db.data(),
                         dy.data(), fused ? dy2.data() : nullptr, extras ? dres.data() : nullptr,
                         z.data(), w.data(), fused ? drop : xk::Dropout{}, N, C, kEps, rms);
  EXPECT_TRUE(close_scaled<T>("dz", g_dz.host(), r_dz, 4));
  EXPECT_TRUE(close_scaled<T>("dweight", g_dw.host(), r_dw, 4));
  if (!rms) EXPECT_TRUE(close_scaled<T>("dbias", g_db.host(), r_db, 4));
  if (fused) {
    EXPECT_TRUE(close_scaled<T>("dx", g_dx.host(), r_dx, 4));
    EXPECT_TRUE(close_scaled<T>("dxbias", g_dxb.host(), r_dxb, 4));
  }
  // Deterministic reductions: a second run gives the same bits.
  const auto first = g_dw.host();
  run();
  const auto second = g_dw.host();
  EXPECT_EQ(0, std::memcmp(first.data(), second.data(), first.size() * sizeof(double)));
}

TYPED_TEST(Norm, LayerNormBackward) {
  for (int C : kWidths) check_backward<TypeParam>(C, false, false, {});
}

TYPED_TEST(Norm, FusedLayerNormBackward) {
  for (int C : kWidths) check_backward<TypeParam>(C, false, true, {0.1f, 77, 3});
}

TYPED_TEST(Norm, RmsNormBackward) {
  for (int C : kWidths) {
    check_backward<TypeParam>(C, true, false, {});
    check_backward<TypeParam>(C, true, true, {});
  }
}

// The backward's dropout mask is the forward's: dx is zero exactly where the forward dropped.
TYPED_TEST(Norm, BackwardReusesForwardMask) {
  using T = TypeParam;
  const int N = 64, C = 1024;
  const std::size_t n = std::size_t(N) * C;
  const xk::Dropout drop{0.25f, 2024, 11};
  auto x = random_values<T>(n, 0.5, 1.5, 21);  // never zero, so zeros in z - residual are drops
  std::vector<double> zeros(n, 0.0), ones(C, 1.0), dyv = random_values<T>(n, 0.5, 1, 22);
  Dev<T> dx(x), dres(zeros), dw(ones), db(zeros), out(n), z(n), dy(dyv), g_dz(n), g_dx(n);
  xfbench::DeviceBuffer<float> mean(N), rstd(N);
  xfbench::DeviceBuffer<char> scratch(xk::norm_backward_scratch_bytes(C));
  xk::bias_dropout_residual_layernorm_forward<T>(out.get(), z.get(), mean.data(), rstd.data(),
                                                 dx.get(), nullptr, dres.get(), dw.get(), db.get(),
                                                 drop, N, C, kEps, nullptr);
  xk::bias_dropout_residual_layernorm_backward<T>(
      g_dz.get(), g_dx.get(), nullptr, nullptr, nullptr, reinterpret_cast<float*>(scratch.data()),
      dy.get(), nullptr, nullptr, z.get(), dw.get(), mean.data(), rstd.data(), drop, N, C, nullptr);
  const auto zh = z.host(), dxh = g_dx.host(), dzh = g_dz.host();
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool was_dropped = zh[i] == 0.0;
    dropped += was_dropped;
    if (was_dropped)
      ASSERT_EQ(dxh[i], 0.0) << i;
    else if (dzh[i] != 0.0)
      ASSERT_NE(dxh[i], 0.0) << i;
  }
  EXPECT_NEAR(double(dropped) / n, 0.25, 0.01);
}

TEST(NormArgs, RejectsBadShapes) {
  EXPECT_THROW(xk::layernorm_forward<__half>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             4, 100, 1e-5f, nullptr),
               xfbench::InvalidArgument);  // C % 8 != 0
  EXPECT_THROW(xk::layernorm_forward<__half>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             4, 8200, 1e-5f, nullptr),
               xfbench::InvalidArgument);  // wider than 8192
}

}  // namespace
