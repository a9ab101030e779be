// The FP8 cast kernels against the CPU reference (GPU, compute capability 8.9 and up): delayed and
// current scaling, the cast-transpose and a backward's recast, the delayed recipe's history ring,
// and the argument checks.
//
// Tolerances: none. The GPU computes y = float(x) · scale in fp32 and converts y with
// round-to-nearest-even and saturation; the reference converts the same fp32 product, so every
// output byte must match, amax (a max of stored values) and the scales (fp8_scale_from_amax in
// fp32, scale_inv = 1.0f / scale) must be equal as floats, and the overflow count equals the
// number of |y| > fp8_clip (max plus half its ulp: the values saturation changes) exactly; the
// current recipe's amax · (fp8_max / amax) may round an fp32 ulp above fp8_max (448.00003 for amax
// 1.2109375) and converts to fp8_max: not an overflow.
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fp8_test_util.hpp"
#include "kernels/fp8.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/reference/fp8_ref.hpp"
#include "test_util.hpp"
#include "xfbench/error.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;
using xk::Fp8Format;

namespace {

// n bf16 values ±2^u, u uniform in [lo, hi), rounded to bf16 (never zero).
std::vector<double> random_magnitudes(std::size_t n, double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::bernoulli_distribution negative(0.5);
  std::vector<double> v(n);
  for (auto& x : v)
    x = to_double(from_double<__nv_bfloat16>((negative(gen) ? -1 : 1) * std::exp2(u(gen))));
  return v;
}

// n bf16 values in [-a, a] whose largest magnitude is a (a exact in bf16).
std::vector<double> values_with_amax(std::size_t n, double a, std::uint64_t seed) {
  auto v = random_values<__nv_bfloat16>(n, -a, a, seed);
  v[n / 3] = a;
  v[2 * n / 3] = -a;
  return v;
}

// What a cast of x with `scale` writes and records.
struct Cast {
  std::vector<std::uint8_t> q;
  float amax = 0.f;
  unsigned long long overflow = 0;
  std::size_t zeros = 0;  // outputs ±0 (underflow)
};
Cast expected_cast(const std::vector<double>& x, float scale, Fp8Format f) {
  Cast c;
  c.q.resize(x.size());
  const float clip = xk::fp8_clip(f);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float v = float(x[i]), y = v * scale;  // fp32, as the kernel
    c.q[i] = xk::ref::fp8_bits(y, f);
    c.amax = std::max(c.amax, std::abs(v));
    c.overflow += std::abs(y) > clip;
    c.zeros += (c.q[i] & 0x7F) == 0;
  }
  return c;
}

std::vector<std::uint8_t> transposed(const std::vector<std::uint8_t>& q, int rows, int cols) {
  std::vector<std::uint8_t> t(q.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) t[std::size_t(c) * rows + r] = q[std::size_t(r) * cols + c];
  return t;
}

::testing::AssertionResult same_bytes(const std::string& name, const std::vector<std::uint8_t>& got,
                                      const std::vector<std::uint8_t>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << name << ": size " << got.size() << " vs " << want.size();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && bad++ == 0) first = i;
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << name << ": " << bad << " of " << got.size() << " bytes differ; first at " << first
         << ": got " << hex(got[first]) << ", want " << hex(want[first]);
}

// log2 of the input magnitudes: some underflow to 0 and some saturate at scale 1.
double lo_exp(Fp8Format f) { return f == Fp8Format::e4m3 ? -14 : -20; }
double hi_exp(Fp8Format f) { return f == Fp8Format::e4m3 ? 10 : 17; }

// Delayed: the first step measures its own amax (no overflow, as current scaling), update()
// keeps that scale (the history holds that amax), the next step casts with it and records amax
// in the cast; a second cast within that step keeps the larger amax. The inputs span more than
// the format: some underflow, and at a tenth of the scale some saturate (counted). n = 2056 is
// not a multiple of a block's 2048 elements (fp8.cu: 256 threads x 8); 3000008 is more than the
// grid covers in one pass (1056 blocks).
TEST_F(Fp8Gpu, CastDelayedMatchesReference) {
  for (Fp8Format f : kFormats)
    for (std::size_t n :
         {std::size_t(8), std::size_t(1000), std::size_t(2056), std::size_t(3000008)}) {
      SCOPED_TRACE(std::string(xk::to_string(f)) + " n=" + std::to_string(n));
      const auto x = random_magnitudes(n, lo_exp(f), hi_exp(f), 100 + n);
      Dev<__nv_bfloat16> d_x(x);
      xk::Fp8Scales s({f}, {});
      ASSERT_EQ(s.count(), 1);
      ASSERT_EQ(s.format(0), f);
      EXPECT_EQ(s.scales(), std::vector<float>{1.f});
      EXPECT_EQ(device_float(s.scale_inv(0)), 1.f);
      EXPECT_EQ(s.amaxes(), std::vector<float>{0.f});
      EXPECT_EQ(s.overflow_count(), 0u);

      EXPECT_TRUE(s.measures_own_amax());
      Bytes q1(n);
      xk::fp8_cast(q1.get(), d_x.get(), n, s, 0, nullptr);
      const float amax = expected_cast(x, 1.f, f).amax;
      const float scale = xk::fp8_scale_from_amax(amax, 1.f, xk::fp8_max(f), 0);
      const Cast one = expected_cast(x, scale, f);
      EXPECT_TRUE(same_bytes("the first step: its own amax", q1.host(), one.q));
      EXPECT_EQ(s.scales()[0], scale);
      EXPECT_EQ(s.amaxes()[0], amax);
      EXPECT_EQ(one.overflow, 0u);
      EXPECT_EQ(s.overflow_count(), 0u);
      if (n >= 1000) EXPECT_GT(one.zeros, 0u);  // the inputs span more than the format

      s.update(nullptr);
      EXPECT_FALSE(s.measures_own_amax());
      EXPECT_EQ(s.scales()[0], scale);
      EXPECT_EQ(device_float(s.scale_inv(0)), 1.f / scale);
      EXPECT_EQ(s.amaxes()[0], 0.f);

      // The next step's input ten times larger: cast with the held scale, amax recorded.
      std::vector<double> big(x);
      for (double& v : big) v = double(__nv_bfloat16(float(v * 10)));
      Dev<__nv_bfloat16> d_big(big);
      Bytes q2(n);
      xk::fp8_cast(q2.get(), d_big.get(), n, s, 0, nullptr);
      const Cast two = expected_cast(big, scale, f);
      EXPECT_TRUE(same_bytes("the held scale", q2.host(), two.q));
      EXPECT_EQ(s.amaxes()[0], two.amax);
      EXPECT_EQ(s.overflow_count(), two.overflow);
      if (n >= 1000) EXPECT_GT(two.overflow, 0u);

      // The first 8 elements again in the same step: amax stays the step's max.
      const std::vector<double> head(x.begin(), x.begin() + 8);
      const Cast h = expected_cast(head, scale, f);
      Bytes q3(8);
      xk::fp8_cast(q3.get(), d_x.get(), 8, s, 0, nullptr);
      EXPECT_TRUE(same_bytes("first 8", q3.host(), h.q));
      EXPECT_EQ(s.amaxes()[0], std::max(two.amax, h.amax));
      EXPECT_EQ(s.overflow_count(), two.overflow + h.overflow);
      s.reset(nullptr);
      EXPECT_TRUE(s.measures_own_amax());
    }
}

// Current: the scale comes from this input's own amax, also when a larger input came before it in
// the same step; an all-zero input keeps the scale. update() carries nothing.
TEST_F(Fp8Gpu, CastCurrentScalesByThisInputsAmax) {
  for (Fp8Format f : kFormats)
    for (int margin : {0, 1})
      for (std::size_t n : {std::size_t(1000), std::size_t(3000008)}) {
        SCOPED_TRACE(std::string(xk::to_string(f)) + " margin=" + std::to_string(margin) +
                     " n=" + std::to_string(n));
        const float max = xk::fp8_max(f);
        const auto x = random_magnitudes(n, lo_exp(f), hi_exp(f), 200 + n + margin);
        auto y = x;
        for (double& v : y) v = std::ldexp(v, -6);  // exact in bf16
        Dev<__nv_bfloat16> d_x(x), d_y(y), d_zero(std::vector<double>(n, 0.0));
        xk::Fp8Scales s({f}, {xk::Fp8Recipe::current, 1024, margin});
        unsigned long long overflow = 0;

        Bytes qx(n);
        xk::fp8_cast(qx.get(), d_x.get(), n, s, 0, nullptr);
        const float amax_x = expected_cast(x, 1.f, f).amax;
        const float sx = xk::fp8_scale_from_amax(amax_x, 1.f, max, margin);
        const Cast cx = expected_cast(x, sx, f);
        overflow += cx.overflow;
        EXPECT_EQ(s.scales()[0], sx);
        EXPECT_EQ(device_float(s.scale_inv(0)), 1.f / sx);
        EXPECT_EQ(s.amaxes()[0], amax_x);
        EXPECT_TRUE(same_bytes("x", qx.host(), cx.q));
        EXPECT_EQ(s.overflow_count(), overflow);
        EXPECT_EQ(cx.overflow, 0u);  // amax maps to max (or max / 2): nothing clips

        Bytes qy(n);
        xk::fp8_cast(qy.get(), d_y.get(), n, s, 0, nullptr);
        const float sy = xk::fp8_scale_from_amax(std::ldexp(amax_x, -6), sx, max, margin);
        const Cast cy = expected_cast(y, sy, f);
        overflow += cy.overflow;
        EXPECT_EQ(s.scales()[0], sy);
        EXPECT_EQ(device_float(s.scale_inv(0)), 1.f / sy);
        EXPECT_TRUE(same_bytes("x / 64 after x", qy.host(), cy.q));
        EXPECT_EQ(s.overflow_count(), overflow);

        s.update(nullptr);
        EXPECT_EQ(s.scales()[0], sy);

        Bytes q0(n);
        xk::fp8_cast(q0.get(), d_zero.get(), n, s, 0, nullptr);
        EXPECT_EQ(s.scales()[0], sy);
        EXPECT_TRUE(same_bytes("zeros", q0.host(), std::vector<std::uint8_t>(n, 0)));
        EXPECT_EQ(s.overflow_count(), overflow);
      }
}

// q is fp8_cast's output byte for byte and qt its transpose, with either one left out; shapes
// below, at and above the kernel's tile, square or not.
TEST_F(Fp8Gpu, CastTransposeMatchesCast) {
  struct Shape {
    int rows, cols;
  };
  for (Fp8Format f : kFormats)
    for (xk::Fp8Recipe recipe : {xk::Fp8Recipe::delayed, xk::Fp8Recipe::current})
      for (Shape sh : {Shape{48, 80}, Shape{16, 16}, Shape{80, 48}, Shape{128, 64},
                       Shape{1040, 272}, Shape{272, 1040}, Shape{400, 144}}) {
        SCOPED_TRACE(std::string(xk::to_string(f)) + " " + xk::to_string(recipe) + " " +
                     std::to_string(sh.rows) + "x" + std::to_string(sh.cols));
        const std::size_t n = std::size_t(sh.rows) * sh.cols;
        const auto x = random_magnitudes(n, lo_exp(f), hi_exp(f), 300 + n);
        Dev<__nv_bfloat16> d_x(x);
        xk::Fp8Scales s({f}, {recipe, 1024, 0});
        const float amax = expected_cast(x, 1.f, f).amax;
        float scale = 1.f;
        unsigned long long overflow = 0;
        for (int step = 0; step < 2; ++step) {  // delayed: its own amax, then the history's
          SCOPED_TRACE("step " + std::to_string(step));
          if (recipe == xk::Fp8Recipe::current || step == 0)
            scale = xk::fp8_scale_from_amax(amax, scale, xk::fp8_max(f), 0);
          const Cast want = expected_cast(x, scale, f);
          const auto want_t = transposed(want.q, sh.rows, sh.cols);
          Bytes q(n), qt(n), q_only(n), qt_only(n), qc(n);
          xk::fp8_cast_transpose(q.get(), qt.get(), d_x.get(), sh.rows, sh.cols, s, 0, nullptr);
          overflow += want.overflow;
          EXPECT_EQ(s.scales()[0], scale);
          EXPECT_EQ(s.amaxes()[0], amax);
          EXPECT_EQ(s.overflow_count(), overflow);
          EXPECT_TRUE(same_bytes("q", q.host(), want.q));
          EXPECT_TRUE(same_bytes("qt", qt.host(), want_t));

          xk::fp8_cast_transpose(q_only.get(), nullptr, d_x.get(), sh.rows, sh.cols, s, 0, nullptr);
          xk::fp8_cast_transpose(nullptr, qt_only.get(), d_x.get(), sh.rows, sh.cols, s, 0,
                                 nullptr);
          xk::fp8_cast(qc.get(), d_x.get(), n, s, 0, nullptr);
          // A backward's recast of the same x: the last cast's scale, no amax pass of its own.
          Bytes qr(n), qtr(n);
          xk::fp8_cast_transpose(qr.get(), qtr.get(), d_x.get(), sh.rows, sh.cols, s, 0, nullptr,
                                 /*recast=*/true);
          // With a bias gradient from the same pass: the same bytes, dbias x's column sums.
          Bytes qb(n), qtb(n);
          Dev<__nv_bfloat16> dbias(std::size_t(sh.cols));
          xfbench::DeviceBuffer<float> scratch(xk::norm_backward_scratch_bytes(sh.cols) / 4);
          xk::fp8_cast_transpose(qb.get(), qtb.get(), d_x.get(), sh.rows, sh.cols, s, 0, nullptr,
                                 false, dbias.get(), scratch.data());
          std::vector<double> sums(std::size_t(sh.cols), 0.0), size(std::size_t(sh.cols), 0.0);
          for (int r = 0; r < sh.rows; ++r)
            for (int c = 0; c < sh.cols; ++c) {
              sums[std::size_t(c)] += x[std::size_t(r) * sh.cols + c];
              size[std::size_t(c)] += std::abs(x[std::size_t(r) * sh.cols + c]);
            }
          const std::vector<double> got = dbias.host();
          std::size_t far = 0;
          for (int c = 0; c < sh.cols; ++c)  // bf16's rounding of a sum (fp32 adds: far below)
            far += !(std::abs(got[std::size_t(c)] - sums[std::size_t(c)]) <=
                     size[std::size_t(c)] * 0x1p-8);
          EXPECT_EQ(far, 0u) << "dbias columns off their sums";
          EXPECT_TRUE(same_bytes("q with dbias", qb.host(), want.q));
          EXPECT_TRUE(same_bytes("qt with dbias", qtb.host(), want_t));
          overflow += 5 * want.overflow;
          EXPECT_TRUE(same_bytes("q without qt", q_only.host(), want.q));
          EXPECT_TRUE(same_bytes("qt without q", qt_only.host(), want_t));
          EXPECT_TRUE(same_bytes("fp8_cast vs q", qc.host(), q.host()));
          EXPECT_TRUE(same_bytes("recast q", qr.host(), want.q));
          EXPECT_TRUE(same_bytes("recast qt", qtr.host(), want_t));
          EXPECT_EQ(s.scales()[0], scale);
          EXPECT_EQ(s.amaxes()[0], amax);
          EXPECT_EQ(s.overflow_count(), overflow);

          s.update(nullptr);
          if (recipe == xk::Fp8Recipe::delayed) {
            scale = xk::fp8_scale_from_amax(amax, scale, xk::fp8_max(f), 0);
            EXPECT_EQ(s.scales()[0], scale);
            EXPECT_EQ(s.amaxes()[0], 0.f);
          }
        }
      }
}

// Two tensors (E4M3, E5M2) with a history of 4 over 7 steps; each step's inputs have a chosen
// amax 1.5 · 2^p. Tensor 0's 1.5 · 2^10 of step 1 rules steps 1 to 4 and is gone after step 5;
// tensor 1 is cast in steps 0 to 2 only, so its ring is all zeros after step 6 and its scale
// stays. Every cast's bytes, every amax and the running overflow count are checked too.
TEST_F(Fp8Gpu, DelayedHistoryIsARingOfSteps) {
  const std::vector<Fp8Format> formats{Fp8Format::e4m3, Fp8Format::e5m2};
  const int history = 4, steps = 7, skip = 1000;
  const int exponents[2][steps] = {{3, 10, 2, 1, 0, -1, 4}, {5, 14, -3, skip, skip, skip, skip}};
  std::vector<float> amax[2];
  for (int i = 0; i < 2; ++i)
    for (int st = 0; st < steps; ++st)
      amax[i].push_back(exponents[i][st] == skip ? 0.f : std::ldexp(1.5f, exponents[i][st]));
  std::vector<float> want[2];
  for (int i = 0; i < 2; ++i)
    want[i] = xk::ref::fp8_delayed_scales(amax[i], history, 0, formats[std::size_t(i)]);
  // The reference by hand where the ring's length shows.
  EXPECT_EQ(want[0][1], 448.f / 12.f);
  EXPECT_EQ(want[0][5], 448.f / 1536.f);  // after step 4: steps 1-4
  EXPECT_EQ(want[0][6], 448.f / 6.f);     // after step 5: steps 2-5
  EXPECT_EQ(want[0][7], 448.f / 24.f);    // after step 6: steps 3-6
  EXPECT_EQ(want[1][5], 57344.f / 24576.f);
  EXPECT_EQ(want[1][6], 57344.f / 0.1875f);
  EXPECT_EQ(want[1][7], 57344.f / 0.1875f);  // ring of zeros: kept

  xk::Fp8Scales s(formats, {xk::Fp8Recipe::delayed, history, 0});
  ASSERT_EQ(s.count(), 2);
  EXPECT_EQ(s.format(1), Fp8Format::e5m2);
  EXPECT_EQ(s.config().history, history);
  const std::size_t n = 4096 + 8;
  Bytes q(n);
  unsigned long long overflow = 0;
  for (int st = 0; st < steps; ++st) {
    SCOPED_TRACE("step " + std::to_string(st));
    for (int i = 0; i < 2; ++i) {
      if (amax[i][st] == 0.f) continue;
      const Fp8Format f = formats[std::size_t(i)];
      const auto x = values_with_amax(n, amax[i][st], 400 + 10 * st + i);
      Dev<__nv_bfloat16> d_x(x);
      xk::fp8_cast(q.get(), d_x.get(), n, s, i, nullptr);
      const Cast c = expected_cast(x, want[i][std::size_t(st)], f);
      ASSERT_EQ(c.amax, amax[i][st]);
      overflow += c.overflow;
      EXPECT_TRUE(same_bytes("tensor " + std::to_string(i), q.host(), c.q));
    }
    EXPECT_EQ(s.amaxes(), (std::vector<float>{amax[0][st], amax[1][st]}));
    EXPECT_EQ(s.overflow_count(), overflow);
    s.update(nullptr);
    const std::vector<float> now{want[0][std::size_t(st) + 1], want[1][std::size_t(st) + 1]};
    EXPECT_EQ(s.scales(), now);
    for (int i = 0; i < 2; ++i) EXPECT_EQ(device_float(s.scale_inv(i)), 1.f / now[std::size_t(i)]);
    EXPECT_EQ(s.amaxes(), (std::vector<float>{0.f, 0.f}));
  }
  EXPECT_GT(overflow, 0u);  // step 1 of tensor 0 saturates

  // reset(): scales 1, overflow 0, and the histories empty (no 1536 left in tensor 0's ring).
  s.reset(nullptr);
  EXPECT_EQ(s.scales(), (std::vector<float>{1.f, 1.f}));
  EXPECT_EQ(device_float(s.scale_inv(0)), 1.f);
  EXPECT_EQ(s.amaxes(), (std::vector<float>{0.f, 0.f}));
  EXPECT_EQ(s.overflow_count(), 0u);
  const auto x = values_with_amax(n, 0.375, 499);
  Dev<__nv_bfloat16> d_x(x);
  xk::fp8_cast(q.get(), d_x.get(), n, s, 0, nullptr);
  EXPECT_TRUE(same_bytes("after reset: its own amax", q.host(),
                         expected_cast(x, 448.f / 0.375f, Fp8Format::e4m3).q));
  s.update(nullptr);
  EXPECT_EQ(s.scales(), (std::vector<float>{448.f / 0.375f, 1.f}));
}

// Argument checks before any launch (InvalidArgument, as the other kernels).
TEST_F(Fp8Gpu, BadArgumentsThrow) {
  xk::Fp8Scales s({Fp8Format::e4m3}, {});
  Dev<__nv_bfloat16> x(std::vector<double>(512, 1.0));
  Bytes q(512), qt(512);
  EXPECT_THROW(xk::fp8_cast(q.get(), x.get(), 12, s, 0, nullptr), xfbench::InvalidArgument);
  EXPECT_THROW(xk::fp8_cast(q.get(), x.get(), 8, s, 1, nullptr), xfbench::InvalidArgument);
  EXPECT_THROW(xk::fp8_cast(q.get(), x.get(), 8, s, -1, nullptr), xfbench::InvalidArgument);
  EXPECT_THROW(xk::fp8_cast_transpose(q.get(), qt.get(), x.get(), 8, 16, s, 0, nullptr),
               xfbench::InvalidArgument);
  EXPECT_THROW(xk::fp8_cast_transpose(q.get(), qt.get(), x.get(), 16, 24, s, 0, nullptr),
               xfbench::InvalidArgument);
  EXPECT_THROW(xk::fp8_cast_transpose(q.get(), qt.get(), x.get(), 16, 16, s, 1, nullptr),
               xfbench::InvalidArgument);
  EXPECT_THROW(xk::Fp8Scales({Fp8Format::e4m3}, {xk::Fp8Recipe::delayed, 0, 0}),
               xfbench::InvalidArgument);
  EXPECT_THROW(xk::Fp8Scales({}, {}), xfbench::InvalidArgument);
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(s.overflow_count(), 0u);
  EXPECT_EQ(s.amaxes()[0], 0.f);
}

}  // namespace
