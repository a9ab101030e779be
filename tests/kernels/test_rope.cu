// Rotary position embeddings: the inverse frequencies against values computed apart from the code
// (python3, HF's formulas in float64), the float64 reference's algebra (CPU), and the kernels
// against the reference (GPU).
//
// Tolerances (eps = 2^-11 fp16, 2^-8 bf16, 2^-18 fp32, test_util.hpp; inputs exactly
// representable): forward and backward 2 eps relative + 2 eps absolute (one rounding of an fp32
// result; the fp32 table's error, 2^-24, is far below); forward then backward against the input 4
// eps relative + 4 eps absolute (two roundings, the first carried through a rotation).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/reference/rope_ref.hpp"
#include "kernels/rope.hpp"
#include "test_util.hpp"
#include "xfbench/error.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

xk::RopeConfig llama3(double factor) {
  xk::RopeConfig c;
  c.theta = 500000.0;
  c.factor = factor;  // low 1, high 4, original 8192: the defaults
  return c;
}

void expect_rel(double got, double want) { EXPECT_NEAR(got, want, 1e-14 * std::abs(want)); }

// ---- rope_inv_freq (CPU) ----

TEST(RopeInvFreq, DefaultIsThetaPower) {
  const auto f = xk::rope_inv_freq(llama3(0), 128);
  ASSERT_EQ(f.size(), 64u);
  expect_rel(f[0], 1.0);
  expect_rel(f[1], 0.8146172338565447);
  expect_rel(f[20], 0.016560440080994446);
  expect_rel(f[32], 0.001414213562373095);  // theta^-1/2
  expect_rel(f[45], 9.838110942370891e-05);
  expect_rel(f[63], 2.455140791131609e-06);

  xk::RopeConfig gpt;  // theta 10000
  const auto g = xk::rope_inv_freq(gpt, 64);
  ASSERT_EQ(g.size(), 32u);
  expect_rel(g[0], 1.0);
  expect_rel(g[1], 0.7498942093324559);
  expect_rel(g[31], 0.0001333521432163324);
}

// Llama 3.1 (factor 8) and 3.2 (factor 32), D 128: indices 0..28 are high frequencies (kept),
// 29..34 medium (blended), 35..63 low (divided by the factor).
TEST(RopeInvFreq, Llama3Scaling) {
  const auto plain = xk::rope_inv_freq(llama3(0), 128);
  const auto f8 = xk::rope_inv_freq(llama3(8), 128);
  const auto f32 = xk::rope_inv_freq(llama3(32), 128);
  for (int i = 0; i <= 28; ++i) {
    EXPECT_EQ(f8[i], plain[i]) << i;
    EXPECT_EQ(f32[i], plain[i]) << i;
  }
  for (int i = 35; i < 64; ++i) {
    expect_rel(f8[i], plain[i] / 8);
    expect_rel(f32[i], plain[i] / 32);
  }
  expect_rel(f8[1], 0.8146172338565447);  // high
  expect_rel(f8[29], 0.002166570763503359);
  expect_rel(f8[31], 0.0008567514129196321);  // medium
  expect_rel(f8[34], 0.00017850781276799638);
  expect_rel(f8[35], 9.556212353964683e-05);  // low
  expect_rel(f8[50], 4.411534674558404e-06);
  expect_rel(f32[1], 0.8146172338565447);
  expect_rel(f32[29], 0.002118406996779608);
  expect_rel(f32[31], 0.000762541203356357);
  expect_rel(f32[34], 9.70828780262767e-05);
  expect_rel(f32[35], 2.3890530884911708e-05);
  expect_rel(f32[50], 1.102883668639601e-06);
}

TEST(RopeInvFreq, BadConfigsThrow) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(xk::rope_inv_freq(llama3(0), 0), xfbench::InvalidArgument);
  EXPECT_THROW(xk::rope_inv_freq(llama3(0), -8), xfbench::InvalidArgument);
  EXPECT_THROW(xk::rope_inv_freq(llama3(0), 63), xfbench::InvalidArgument);
  for (double theta : {1.0, 0.5, 0.0, -10.0, nan}) {
    xk::RopeConfig c;
    c.theta = theta;
    EXPECT_THROW(xk::rope_inv_freq(c, 64), xfbench::InvalidArgument) << theta;
  }
  for (double factor : {-1.0, nan})
    EXPECT_THROW(xk::rope_inv_freq(llama3(factor), 64), xfbench::InvalidArgument);
  auto c = llama3(8);
  c.high_freq_factor = c.low_freq_factor;
  EXPECT_THROW(xk::rope_inv_freq(c, 64), xfbench::InvalidArgument);
  c.high_freq_factor = 0.5;
  EXPECT_THROW(xk::rope_inv_freq(c, 64), xfbench::InvalidArgument);
  c = llama3(8);
  c.low_freq_factor = 0;
  EXPECT_THROW(xk::rope_inv_freq(c, 64), xfbench::InvalidArgument);
  c = llama3(8);
  c.original_max_position = 0;
  EXPECT_THROW(xk::rope_inv_freq(c, 64), xfbench::InvalidArgument);
  // Without scaling the blend settings are not read.
  c = llama3(0);
  c.high_freq_factor = 0;
  EXPECT_NO_THROW(xk::rope_inv_freq(c, 64));
  EXPECT_NO_THROW(xk::rope_inv_freq(llama3(0), 2));
}

TEST(RotaryEmbedding, BadShapesThrowBeforeAllocating) {
  EXPECT_THROW(xk::RotaryEmbedding(llama3(8), 12, 16), xfbench::InvalidArgument);
  EXPECT_THROW(xk::RotaryEmbedding(llama3(8), 0, 16), xfbench::InvalidArgument);
  EXPECT_THROW(xk::RotaryEmbedding(llama3(8), 64, 0), xfbench::InvalidArgument);
  EXPECT_THROW(xk::RotaryEmbedding(llama3(-1), 64, 16), xfbench::InvalidArgument);
}

// ---- the float64 reference (CPU) ----

struct Shape {
  int B, S, NH, NKV, D;
  int tokens() const { return B * S; }
  int width() const { return (NH + 2 * NKV) * D; }
  std::size_t elements() const { return std::size_t(tokens()) * width(); }
  bool is_v(std::size_t e) const { return int(e % width()) >= (NH + NKV) * D; }
  std::string str() const {
    return "B=" + std::to_string(B) + " S=" + std::to_string(S) + " NH=" + std::to_string(NH) +
           " NKV=" + std::to_string(NKV) + " D=" + std::to_string(D);
  }
};

TEST(RopeReference, ForwardThenBackwardIsIdentity) {
  for (const Shape s : {Shape{2, 16, 4, 2, 64}, Shape{1, 9, 2, 2, 128}, Shape{3, 5, 1, 1, 8}}) {
    SCOPED_TRACE(s.str());
    const auto x = random_values<float>(s.elements(), -1, 1, 7);
    auto y = x;
    xk::ref::rope_forward(y.data(), llama3(8), s.tokens(), s.S, s.NH, s.NKV, s.D);
    double moved = 0;
    for (std::size_t e = 0; e < x.size(); ++e) {
      if (s.is_v(e)) ASSERT_EQ(y[e], x[e]) << e;
      moved = std::max(moved, std::abs(y[e] - x[e]));
    }
    EXPECT_GT(moved, 0.1);  // positions > 0 rotate
    // Each (i, i + D/2) pair keeps its length; position 0 is not rotated.
    for (int r = 0; r < s.tokens(); ++r)
      for (int h = 0; h < s.NH + s.NKV; ++h)
        for (int i = 0; i < s.D / 2; ++i) {
          const std::size_t a = std::size_t(r) * s.width() + h * s.D + i, b = a + s.D / 2;
          EXPECT_NEAR(std::hypot(y[a], y[b]), std::hypot(x[a], x[b]), 1e-14);
          if (r % s.S == 0) ASSERT_EQ(y[a], x[a]);
        }
    xk::ref::rope_backward(y.data(), llama3(8), s.tokens(), s.S, s.NH, s.NKV, s.D);
    for (std::size_t e = 0; e < x.size(); ++e) ASSERT_NEAR(y[e], x[e], 1e-14) << e;
  }
}

// One element by hand: position 5, frequency index 3 of k head 0 (HF's rotate_half convention).
TEST(RopeReference, RotatesByPositionTimesFrequency) {
  const Shape s{1, 8, 1, 1, 16};
  std::vector<double> x(s.elements(), 0.0);
  const std::size_t a = 5 * std::size_t(s.width()) + s.D + 3, b = a + s.D / 2;
  x[a] = 0.25, x[b] = -0.75;
  xk::ref::rope_forward(x.data(), llama3(0), s.tokens(), s.S, s.NH, s.NKV, s.D);
  const double angle = 5 * std::pow(500000.0, -6.0 / 16);
  EXPECT_NEAR(x[a], 0.25 * std::cos(angle) + 0.75 * std::sin(angle), 1e-15);
  EXPECT_NEAR(x[b], -0.75 * std::cos(angle) + 0.25 * std::sin(angle), 1e-15);
}

TEST(RopeReference, BadShapesThrow) {
  std::vector<double> x(10 * 4 * 64);
  EXPECT_THROW(xk::ref::rope_forward(x.data(), llama3(8), 10, 4, 2, 1, 64),
               xfbench::InvalidArgument);  // tokens % seq
  EXPECT_THROW(xk::ref::rope_forward(x.data(), llama3(8), 8, 4, 0, 1, 64),
               xfbench::InvalidArgument);
  EXPECT_THROW(xk::ref::rope_backward(x.data(), llama3(8), 8, 4, 1, 0, 64),
               xfbench::InvalidArgument);
  EXPECT_THROW(xk::ref::rope_backward(x.data(), llama3(8), 8, 4, 1, 1, 63),
               xfbench::InvalidArgument);
}

// ---- the kernels against the reference (GPU) ----

template <class T>
class Rope : public GpuTest {};
using Types = ::testing::Types<__half, __nv_bfloat16, float>;
TYPED_TEST_SUITE(Rope, Types);

template <class T>
std::vector<T> raw(const Dev<T>& d) {
  std::vector<T> h(d.buf.size());
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  XF_CUDA_CHECK(cudaMemcpy(h.data(), d.get(), d.buf.bytes(), cudaMemcpyDeviceToHost));
  return h;
}

// The v heads' bytes after a kernel are those before it.
template <class T>
::testing::AssertionResult v_untouched(const Shape& s, const std::vector<T>& before,
                                       const std::vector<T>& after) {
  const std::size_t q_k = std::size_t(s.NH + s.NKV) * s.D, v = std::size_t(s.NKV) * s.D;
  for (int r = 0; r < s.tokens(); ++r) {
    const std::size_t off = std::size_t(r) * s.width() + q_k;
    if (std::memcmp(&before[off], &after[off], v * sizeof(T)) != 0)
      return ::testing::AssertionFailure() << "v heads of row " << r << " changed";
  }
  return ::testing::AssertionSuccess();
}

template <class T>
void check_against_reference(const xk::RopeConfig& config, const Shape& s, int max_seq) {
  SCOPED_TRACE(s.str() + " max_seq=" + std::to_string(max_seq) +
               " factor=" + std::to_string(config.factor));
  const xk::RotaryEmbedding rope(config, s.D, max_seq);
  ASSERT_EQ(rope.head_dim(), s.D);
  ASSERT_EQ(rope.max_seq(), max_seq);
  const std::size_t n = s.elements();
  const auto x = random_values<T>(n, -1, 1, 11), g = random_values<T>(n, -1, 1, 12);

  // Forward, and the round trip back.
  Dev<T> d_x(x);
  const auto x_raw = raw(d_x);
  rope.forward<T>(d_x.get(), s.tokens(), s.S, s.NH, s.NKV, nullptr);
  auto r_y = x;
  xk::ref::rope_forward(r_y.data(), config, s.tokens(), s.S, s.NH, s.NKV, s.D);
  EXPECT_TRUE(close("forward", d_x.host(), r_y, storage_tol<T>()));
  EXPECT_TRUE(v_untouched(s, x_raw, raw(d_x)));
  rope.backward<T>(d_x.get(), s.tokens(), s.S, s.NH, s.NKV, nullptr);
  EXPECT_TRUE(close("forward+backward", d_x.host(), x, storage_tol<T>(4)));
  EXPECT_TRUE(v_untouched(s, x_raw, raw(d_x)));

  // Backward of an independent gradient.
  Dev<T> d_g(g);
  const auto g_raw = raw(d_g);
  rope.backward<T>(d_g.get(), s.tokens(), s.S, s.NH, s.NKV, nullptr);
  auto r_dx = g;
  xk::ref::rope_backward(r_dx.data(), config, s.tokens(), s.S, s.NH, s.NKV, s.D);
  EXPECT_TRUE(close("backward", d_g.host(), r_dx, storage_tol<T>()));
  EXPECT_TRUE(v_untouched(s, g_raw, raw(d_g)));
}

TYPED_TEST(Rope, MatchesReference) {
  for (int D : {64, 128})
    for (auto [NH, NKV] : {std::pair{4, 2}, std::pair{2, 2}})
      for (double factor : {0.0, 8.0}) {
        auto config = llama3(factor);
        if (factor == 0) config.theta = 10000;
        check_against_reference<TypeParam>(config, Shape{2, 64, NH, NKV, D}, 64);
        check_against_reference<TypeParam>(config, Shape{2, 64, NH, NKV, D}, 100);  // seq < max
      }
}

// D/2 not a multiple of 8: the 4-element path.
TYPED_TEST(Rope, HeadDimNotMultipleOf16) {
  for (int D : {8, 40, 72})
    check_against_reference<TypeParam>(llama3(8), Shape{3, 17, 3, 1, D}, 17);
}

// Positions past 4096 (angles up to 8191 rad at f_0 = 1), Llama 3.1 and 3.2 scaling.
TYPED_TEST(Rope, LongSequence) {
  for (double factor : {8.0, 32.0})
    check_against_reference<TypeParam>(llama3(factor), Shape{1, 8192, 2, 1, 128}, 8192);
}

TYPED_TEST(Rope, BadArgumentsThrow) {
  using T = TypeParam;
  const xk::RotaryEmbedding rope(llama3(8), 64, 32);
  Dev<T> buf(std::size_t(64) * 4 * 64 + 8);
  T* p = buf.get();
  const auto bad = [&](T* ptr, int tokens, int seq, int NH, int NKV) {
    EXPECT_THROW(rope.forward<T>(ptr, tokens, seq, NH, NKV, nullptr), xfbench::InvalidArgument);
    EXPECT_THROW(rope.backward<T>(ptr, tokens, seq, NH, NKV, nullptr), xfbench::InvalidArgument);
  };
  bad(p, 64, 64, 2, 1);      // seq > max_seq
  bad(p, 60, 32, 2, 1);      // tokens % seq
  bad(p, 64, 32, 0, 1);      // no q head
  bad(p, 64, 32, 2, 0);      // no k head
  bad(p, 64, 0, 2, 1);       // empty sequence
  bad(p + 1, 64, 32, 2, 1);  // not 16-byte aligned
  bad(nullptr, 64, 32, 2, 1);
  EXPECT_NO_THROW(rope.forward<T>(p, 0, 32, 2, 1, nullptr));  // no tokens: nothing to do
  XF_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
