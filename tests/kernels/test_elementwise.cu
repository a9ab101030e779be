// GELU, dropout, bias and residual kernels against the float64 reference, and the dropout
// contract: keep rate, 1/(1-p) scaling, the backward reusing the forward's mask, seeds.
//
// Tolerances (eps = 2^-11 fp16, 2^-8 bf16, 2^-18 fp32): element-wise outputs 2 eps relative + 2 eps
// absolute (one rounding of an fp32 result); gelu backward 4 eps; column sums (bias gradients) 4
// eps relative + 4 eps · max|ref| absolute.
#include <gtest/gtest.h>

#include "kernels/detail/elementwise.cuh"
#include "kernels/dropout.hpp"
#include "kernels/gelu.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/reference/reference.hpp"
#include "test_util.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

template <class T>
class Elementwise : public GpuTest {};
using Types = ::testing::Types<__half, __nv_bfloat16, float>;  // float: tf32/fp32 steps
TYPED_TEST_SUITE(Elementwise, Types);

const int kWidths[] = {8, 200, 1024, 3072, 4096, 8192, 12288, 16384};
constexpr int kRows = 29;

float* scratch_for(xfbench::DeviceBuffer<char>& b) { return reinterpret_cast<float*>(b.data()); }

TYPED_TEST(Elementwise, BiasGeluForwardBackward) {
  using T = TypeParam;
  for (xk::Gelu kind : {xk::Gelu::erf, xk::Gelu::tanh})
    for (int C : kWidths)
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE("C=" + std::to_string(C) + " tanh=" + std::to_string(kind == xk::Gelu::tanh) +
                     " bias=" + std::to_string(with_bias));
        const int N = kRows;
        const std::size_t n = std::size_t(N) * C;
        auto x = random_values<T>(n, -4, 4, 1), bias = random_values<T>(C, -1, 1, 2),
             dy = random_values<T>(n, -1, 1, 3);
        Dev<T> d_x(x), d_b(bias), d_dy(dy), out(n), dx(n), dbias(C);
        xfbench::DeviceBuffer<char> scratch(xk::norm_backward_scratch_bytes(C));
        const T* bp = with_bias ? d_b.get() : nullptr;
        xk::bias_gelu_forward<T>(out.get(), d_x.get(), bp, N, C, kind, nullptr);
        xk::bias_gelu_backward<T>(dx.get(), with_bias ? dbias.get() : nullptr, scratch_for(scratch),
                                  d_dy.get(), d_x.get(), bp, N, C, kind, nullptr);
        std::vector<double> r_out(n), r_dx(n), r_db(C, 0.0);
        for (std::size_t i = 0; i < n; ++i) {
          const double xi = x[i] + (with_bias ? bias[i % C] : 0.0);
          r_out[i] = xk::ref::gelu(xi, kind);
          r_dx[i] = dy[i] * xk::ref::gelu_grad(xi, kind);
          r_db[i % C] += r_dx[i];
        }
        EXPECT_TRUE(close("gelu", out.host(), r_out, storage_tol<T>()));
        EXPECT_TRUE(close("dgelu", dx.host(), r_dx, storage_tol<T>(4)));
        if (with_bias) EXPECT_TRUE(close_scaled<T>("dbias", dbias.host(), r_db, 4));
      }
}

TYPED_TEST(Elementwise, BiasDropoutResidual) {
  using T = TypeParam;
  for (int C : kWidths) {
    SCOPED_TRACE("C=" + std::to_string(C));
    const int N = kRows;
    const std::size_t n = std::size_t(N) * C;
    const xk::Dropout drop{0.1f, 99, 5};
    auto x = random_values<T>(n, -2, 2, 1), res = random_values<T>(n, -1, 1, 2),
         bias = random_values<T>(C, -1, 1, 3), dy = random_values<T>(n, -1, 1, 4);
    Dev<T> d_x(x), d_res(res), d_b(bias), d_dy(dy), out(n), dx(n), dbias(C), dbias2(C);
    xfbench::DeviceBuffer<char> scratch(xk::norm_backward_scratch_bytes(C));
    xk::bias_dropout_residual_forward<T>(out.get(), d_x.get(), d_b.get(), d_res.get(), drop, N, C,
                                         nullptr);
    xk::dropout_bias_backward<T>(dx.get(), dbias.get(), scratch_for(scratch), d_dy.get(), drop, N,
                                 C, nullptr);
    xk::bias_backward<T>(dbias2.get(), scratch_for(scratch), d_dy.get(), N, C, nullptr);
    std::vector<double> r_out(n), r_dx(n), r_db(C), r_db2(C);
    xk::ref::bias_dropout_residual(r_out.data(), x.data(), bias.data(), res.data(), drop, N, C);
    xk::ref::dropout_bias_backward(r_dx.data(), r_db.data(), dy.data(), drop, N, C);
    xk::ref::dropout_bias_backward(nullptr, r_db2.data(), dy.data(), xk::Dropout{}, N, C);
    EXPECT_TRUE(close("out", out.host(), r_out, storage_tol<T>()));
    EXPECT_TRUE(close("dx", dx.host(), r_dx, storage_tol<T>()));
    EXPECT_TRUE(close_scaled<T>("dbias", dbias.host(), r_db, 4));
    EXPECT_TRUE(close_scaled<T>("bias_backward", dbias2.host(), r_db2, 4));
  }
}

// The dropout contract on a large tensor of ones.
TYPED_TEST(Elementwise, DropoutContract) {
  using T = TypeParam;
  const std::size_t n = std::size_t(1) << 22;
  std::vector<double> ones(n, 1.0);
  Dev<T> x(ones), y(n), y_same(n), y_seed(n), y_offset(n), dx(n);
  for (float p : {0.1f, 0.5f}) {
    SCOPED_TRACE("p=" + std::to_string(p));
    const xk::Dropout d{p, 1234, 0};
    xk::dropout_forward<T>(y.get(), x.get(), n, d, nullptr);
    xk::dropout_forward<T>(y_same.get(), x.get(), n, d, nullptr);
    xk::dropout_forward<T>(y_seed.get(), x.get(), n, {p, 1235, 0}, nullptr);
    xk::dropout_forward<T>(y_offset.get(), x.get(), n, {p, 1234, 1}, nullptr);
    xk::dropout_backward<T>(dx.get(), x.get(), n, d, nullptr);  // gradient of ones
    const auto a = y.host(), same = y_same.host(), seed = y_seed.host(), off = y_offset.host(),
               g = dx.host();
    const double scale = to_double(from_double<T>(1.0 / (1.0 - p)));
    std::size_t kept = 0, diff_seed = 0, diff_offset = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(a[i] == 0.0 || a[i] == scale) << i << ": " << a[i];
      kept += a[i] != 0.0;
      ASSERT_EQ(a[i], same[i]) << i;  // same seed, same mask
      ASSERT_EQ(g[i], a[i]) << i;     // backward: the forward's mask and scale
      diff_seed += (a[i] != 0.0) != (seed[i] != 0.0);
      diff_offset += (a[i] != 0.0) != (off[i] != 0.0);
    }
    const double q = 1.0 - p, sd = std::sqrt(n * q * (1 - q));
    EXPECT_NEAR(double(kept), n * q, 5 * sd);
    const double disagree = 2 * p * q;  // independent masks disagree this often
    EXPECT_NEAR(double(diff_seed) / n, disagree, 0.01);
    EXPECT_NEAR(double(diff_offset) / n, disagree, 0.01);
  }
}

// The flat grid's column (vector index mod vectors per row) by multiply and shift equals the
// modulo for every row width, up to the largest 32-bit index.
TEST(ElementwiseColumn, MultiplyShiftEqualsModulo) {
  for (unsigned V : {1u, 2u, 3u, 7u, 96u, 128u, 129u, 384u, 512u, 1000u, 65535u, 1u << 20,
                     (1u << 31) - 1, 1u << 31}) {
    const xk::detail::ColumnOf column(V);
    for (unsigned long long i = 0; i < (1ull << 32); i = i * 3 + 1 + (i >> 5)) {
      for (unsigned long long j : {i, (1ull << 32) - 1 - i}) {
        ASSERT_EQ(column(unsigned(j)), unsigned(j % V)) << "V " << V << " i " << j;
      }
    }
    for (unsigned q : {1u, 2u, 1000u}) {  // both sides of row boundaries
      const unsigned long long b = 1ull * q * V;
      if (b >= (1ull << 32)) continue;
      EXPECT_EQ(column(unsigned(b)), 0u);
      EXPECT_EQ(column(unsigned(b - 1)), V - 1);
    }
  }
}

TEST(ElementwiseArgs, RejectsBadInput) {
  EXPECT_THROW(xk::dropout_forward<__half>(nullptr, nullptr, 12, {0.1f, 1, 0}, nullptr),
               xfbench::InvalidArgument);  // n % 8 != 0
  EXPECT_THROW(xk::dropout_forward<__half>(nullptr, nullptr, 16, {1.0f, 1, 0}, nullptr),
               xfbench::InvalidArgument);  // p = 1
  EXPECT_THROW(xk::bias_backward<__half>(nullptr, nullptr, nullptr, 4, 8, nullptr),
               xfbench::InvalidArgument);
}

}  // namespace
