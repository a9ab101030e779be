// FP8 casts and scales (fp8.hpp): the CPU reference against hand-checked values and against
// cuda_fp8.hpp's host conversion, the scale formula and recipe names (CPU); the casts, the delayed
// recipe's history, the dequantisation and a mixed E5M2 x E4M3 GEMM against the reference (GPU,
// compute capability 8.9 and up).
//
// Tolerances: none for the casts. The GPU computes y = float(x) · scale in fp32 and converts y
// with round-to-nearest-even and saturation; the reference converts the same fp32 product, so every
// output byte must match, amax (a max of stored values) and the scales (fp8_scale_from_amax in
// fp32, scale_inv = 1.0f / scale) must be equal as floats, and the overflow count equals the
// number of |y| > fp8_clip (max plus half its ulp: the values saturation changes) exactly; the
// current recipe's amax · (fp8_max / amax) may round an fp32 ulp above fp8_max (448.00003 for amax
// 1.2109375) and converts to fp8_max: not an overflow. The dequantisation is one fp32 product:
// exact. The GEMM reads the quantised operands exactly, so its only errors are fp32 accumulation, k
// · 2^-23 · Σ|a·b| (the standard bound for k additions with unit 2^-24, doubled for the scaling and
// cuBLASLt's blockwise promotion), and one bf16 rounding of the output, 2^-8 relative (twice bf16's
// 2^-9).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/fp8.hpp"
#include "kernels/gemm.hpp"
#include "kernels/reference/fp8_ref.hpp"
#include "test_util.hpp"
#include "xfbench/device.hpp"
#include "xfbench/error.hpp"
#include "xfbench/memory.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;
using xk::Fp8Format;

namespace {

constexpr Fp8Format kFormats[] = {Fp8Format::e4m3, Fp8Format::e5m2};

std::uint8_t bits(float v, Fp8Format f) { return xk::ref::fp8_bits(v, f); }
float value(std::uint8_t b, Fp8Format f) { return xk::ref::fp8_value(b, f); }

std::string hex(unsigned b) {
  std::ostringstream s;
  s << "0x" << std::hex << std::setw(2) << std::setfill('0') << b;
  return s.str();
}

// ---- the reference (CPU) ----

TEST(Fp8Reference, KnownConstants) {
  EXPECT_EQ(hex(bits(448.f, Fp8Format::e4m3)), "0x7e");
  EXPECT_EQ(hex(bits(-448.f, Fp8Format::e4m3)), "0xfe");
  EXPECT_EQ(hex(bits(57344.f, Fp8Format::e5m2)), "0x7b");
  EXPECT_EQ(hex(bits(1.f, Fp8Format::e4m3)), "0x38");
  EXPECT_EQ(hex(bits(1.f, Fp8Format::e5m2)), "0x3c");
  EXPECT_EQ(hex(bits(-2.f, Fp8Format::e4m3)), "0xc0");
  EXPECT_EQ(hex(bits(0.f, Fp8Format::e4m3)), "0x00");
  EXPECT_EQ(hex(bits(-0.f, Fp8Format::e5m2)), "0x80");
  EXPECT_EQ(hex(bits(std::nanf(""), Fp8Format::e4m3)), "0x7f");
  EXPECT_EQ(hex(bits(std::nanf(""), Fp8Format::e5m2)), "0x7f");

  EXPECT_EQ(value(0x7E, Fp8Format::e4m3), 448.f);
  EXPECT_EQ(value(0x7B, Fp8Format::e5m2), 57344.f);
  EXPECT_EQ(value(0x01, Fp8Format::e4m3), std::ldexp(1.f, -9));  // smallest subnormal
  EXPECT_EQ(value(0x07, Fp8Format::e4m3), std::ldexp(7.f, -9));  // largest subnormal
  EXPECT_EQ(value(0x08, Fp8Format::e4m3), std::ldexp(1.f, -6));  // smallest normal
  EXPECT_EQ(value(0x01, Fp8Format::e5m2), std::ldexp(1.f, -16));
  EXPECT_EQ(value(0x03, Fp8Format::e5m2), std::ldexp(3.f, -16));
  EXPECT_EQ(value(0x04, Fp8Format::e5m2), std::ldexp(1.f, -14));
  EXPECT_EQ(value(0x3A, Fp8Format::e4m3), 1.25f);
  EXPECT_EQ(value(0x3D, Fp8Format::e5m2), 1.25f);
  EXPECT_EQ(value(0xD4, Fp8Format::e4m3), -12.f);  // S=1 E=1010 M=100: -1.5 · 2^3
  EXPECT_TRUE(std::isnan(value(0x7F, Fp8Format::e4m3)));
  EXPECT_TRUE(std::isnan(value(0xFF, Fp8Format::e4m3)));
  EXPECT_EQ(value(0x7C, Fp8Format::e5m2), std::numeric_limits<float>::infinity());
  EXPECT_EQ(value(0xFC, Fp8Format::e5m2), -std::numeric_limits<float>::infinity());
  for (unsigned b : {0x7Du, 0x7Eu, 0x7Fu, 0xFDu, 0xFEu, 0xFFu})
    EXPECT_TRUE(std::isnan(value(std::uint8_t(b), Fp8Format::e5m2))) << hex(b);
  EXPECT_EQ(value(0x80, Fp8Format::e4m3), 0.f);
  EXPECT_TRUE(std::signbit(value(0x80, Fp8Format::e4m3)));
}

// Every pattern decodes to a value that converts back to it; NaNs convert to the canonical NaN
// 0x7F and E5M2's ±inf saturates to ±57344. Values increase with the pattern (sign-magnitude).
TEST(Fp8Reference, EveryBitPatternRoundTrips) {
  for (Fp8Format f : kFormats) {
    SCOPED_TRACE(xk::to_string(f));
    int finite = 0;
    float previous = -1.f;
    for (unsigned b = 0; b < 256; ++b) {
      const float v = value(std::uint8_t(b), f);
      const float r = xk::ref::fp8_round(v, f);
      if (std::isnan(v)) {
        EXPECT_EQ(bits(v, f), 0x7F) << hex(b);
        EXPECT_TRUE(std::isnan(r)) << hex(b);
        continue;
      }
      if (std::isinf(v)) {
        EXPECT_EQ(f, Fp8Format::e5m2);
        EXPECT_EQ(bits(v, f), b == 0x7C ? 0x7B : 0xFB) << hex(b);
        EXPECT_EQ(r, std::copysign(57344.f, v));
        continue;
      }
      ++finite;
      EXPECT_EQ(hex(bits(v, f)), hex(b)) << v;
      EXPECT_EQ(r, v) << hex(b);
      EXPECT_EQ(std::signbit(r), b >= 0x80) << hex(b);
      EXPECT_LE(std::abs(v), xk::fp8_max(f)) << hex(b);
      if (b < 0x80) {
        EXPECT_GT(v, previous) << hex(b);
        previous = v;
      }
    }
    EXPECT_EQ(finite, f == Fp8Format::e4m3 ? 254 : 248);  // 2 NaNs; 6 NaNs and 2 infinities
  }
}

TEST(Fp8Reference, TiesRoundToEven) {
  const Fp8Format e4 = Fp8Format::e4m3, e5 = Fp8Format::e5m2;
  const auto r = xk::ref::fp8_round;
  // E4M3 spacing 1/8 in [1, 2): 1.0625 lies between 1 (M=000) and 1.125 (M=001).
  EXPECT_EQ(r(1.0625f, e4), 1.f);
  EXPECT_EQ(r(1.1875f, e4), 1.25f);  // between 1.125 (001) and 1.25 (010)
  EXPECT_EQ(r(std::nextafter(1.0625f, 2.f), e4), 1.125f);
  EXPECT_EQ(r(std::nextafter(1.1875f, 0.f), e4), 1.125f);
  EXPECT_EQ(r(-1.0625f, e4), -1.f);
  EXPECT_EQ(r(400.f, e4), 384.f);  // 384 (M=100) and 416 (101)
  EXPECT_EQ(r(432.f, e4), 448.f);  // 416 (101) and 448 (110)
  // E5M2 spacing 1/4 in [1, 2).
  EXPECT_EQ(r(1.125f, e5), 1.f);
  EXPECT_EQ(r(1.375f, e5), 1.5f);
  EXPECT_EQ(r(1.625f, e5), 1.5f);
  EXPECT_EQ(r(1.875f, e5), 2.f);  // the carry into the next binade
  EXPECT_EQ(r(-3.5f, e5), -3.5f);
  // Subnormal ties: 1.5 and 2.5 units of the smallest subnormal go to 2; 7.5 units (E4M3's largest
  // subnormal and the smallest normal) go to 8 = 2^-6.
  EXPECT_EQ(r(std::ldexp(1.5f, -9), e4), std::ldexp(1.f, -8));
  EXPECT_EQ(r(std::ldexp(2.5f, -9), e4), std::ldexp(1.f, -8));
  EXPECT_EQ(r(std::ldexp(3.5f, -9), e4), std::ldexp(4.f, -9));
  EXPECT_EQ(r(std::ldexp(7.5f, -9), e4), std::ldexp(1.f, -6));
  EXPECT_EQ(bits(std::ldexp(7.5f, -9), e4), 0x08);
  EXPECT_EQ(r(std::ldexp(1.5f, -16), e5), std::ldexp(1.f, -15));
  EXPECT_EQ(r(std::ldexp(2.5f, -16), e5), std::ldexp(1.f, -15));
  EXPECT_EQ(r(std::ldexp(3.5f, -16), e5), std::ldexp(1.f, -14));
}

TEST(Fp8Reference, SaturatesAboveMax) {
  const float inf = std::numeric_limits<float>::infinity();
  for (Fp8Format f : kFormats) {
    SCOPED_TRACE(xk::to_string(f));
    const float max = xk::fp8_max(f);
    const std::uint8_t top = f == Fp8Format::e4m3 ? 0x7E : 0x7B;
    // Just above, at the midpoint to the next (non-finite) step and past it, huge, infinite.
    const float past = f == Fp8Format::e4m3 ? 464.f : 61440.f;
    for (float v : {std::nextafter(max, inf), past, 2 * past, 1e30f,
                    std::numeric_limits<float>::max(), inf}) {
      EXPECT_EQ(xk::ref::fp8_round(v, f), max) << v;
      EXPECT_EQ(xk::ref::fp8_round(-v, f), -max) << v;
      EXPECT_EQ(hex(bits(v, f)), hex(top)) << v;
      EXPECT_EQ(hex(bits(-v, f)), hex(top | 0x80u)) << v;
    }
    EXPECT_EQ(xk::ref::fp8_round(max, f), max);
    EXPECT_TRUE(std::isnan(xk::ref::fp8_round(std::nanf(""), f)));
  }
}

TEST(Fp8Reference, SubnormalsAndUnderflow) {
  for (Fp8Format f : kFormats) {
    SCOPED_TRACE(xk::to_string(f));
    const float tiny = std::ldexp(1.f, f == Fp8Format::e4m3 ? -9 : -16);  // smallest subnormal
    EXPECT_EQ(xk::ref::fp8_round(tiny, f), tiny);
    EXPECT_EQ(bits(tiny, f), 0x01);
    EXPECT_EQ(bits(-tiny, f), 0x81);
    EXPECT_EQ(xk::ref::fp8_round(tiny / 2, f), 0.f);  // the tie goes to the even 0
    EXPECT_EQ(bits(tiny / 2, f), 0x00);
    EXPECT_EQ(bits(-tiny / 2, f), 0x80);  // keeps its sign
    EXPECT_EQ(xk::ref::fp8_round(std::nextafter(tiny / 2, 1.f), f), tiny);
    EXPECT_EQ(xk::ref::fp8_round(tiny / 3, f), 0.f);
    EXPECT_EQ(xk::ref::fp8_round(std::numeric_limits<float>::denorm_min(), f), 0.f);
    EXPECT_EQ(xk::ref::fp8_round(3 * tiny, f), 3 * tiny);
  }
}

// The reference against cuda_fp8.hpp's host conversion (a software emulation of cvt.rn.satfinite;
// the code the reference was not written from): every bf16 bit pattern (zeros, subnormals, NaN,
// ±inf included), each midpoint between neighbouring FP8 values and the floats either side of it,
// and a million random float bit patterns. The decoding against __nv_cvt_fp8_to_halfraw.
TEST(Fp8Reference, AgreesWithCudaHostConversion) {
  for (Fp8Format f : kFormats) {
    SCOPED_TRACE(xk::to_string(f));
    const __nv_fp8_interpretation_t interp = f == Fp8Format::e4m3 ? __NV_E4M3 : __NV_E5M2;
    std::size_t checked = 0, bad = 0;
    std::string first;
    const auto check = [&](float v) {
      ++checked;
      const unsigned want = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, interp), got = bits(v, f);
      if (got != want && bad++ == 0) {
        std::ostringstream s;
        s << std::setprecision(9) << v << ": reference " << hex(got) << ", cuda_fp8 " << hex(want);
        first = s.str();
      }
    };
    const auto from_bits = [](std::uint32_t u) {
      float v;
      std::memcpy(&v, &u, sizeof v);
      return v;
    };
    for (std::uint32_t h = 0; h < 65536; ++h) check(from_bits(h << 16));
    for (unsigned b = 0; b < 0x7F; ++b) {
      const float lo = value(std::uint8_t(b), f), hi = value(std::uint8_t(b + 1), f);
      if (!std::isfinite(hi)) continue;
      const float mid = (lo + hi) / 2;  // exact: a few significant bits
      for (float v : {mid, std::nextafter(mid, 0.f), std::nextafter(mid, hi)}) check(v), check(-v);
    }
    std::mt19937 gen(5);
    for (int i = 0; i < 1000000; ++i) check(from_bits(gen()));
    EXPECT_EQ(bad, 0u) << "of " << checked << "; first " << first;

    for (unsigned b = 0; b < 256; ++b) {
      const float cuda = __half2float(__half(__nv_cvt_fp8_to_halfraw(std::uint8_t(b), interp)));
      const float ref = value(std::uint8_t(b), f);
      if (std::isnan(cuda))
        EXPECT_TRUE(std::isnan(ref)) << hex(b);
      else
        EXPECT_EQ(ref, cuda) << hex(b);
    }
  }
}

// The delayed recipe's scales by hand: E4M3, history 4.
TEST(Fp8Reference, DelayedScalesByHand) {
  const Fp8Format e4 = Fp8Format::e4m3;
  // Steps:          0    1    2      3    4    5    6    7    8    9    10
  const std::vector<float> amax{0.f, 2.f, 448.f, 1.f, 1.f, 1.f, 1.f, 0.f, 0.f, 0.f, 0.f};
  const auto s = xk::ref::fp8_delayed_scales(amax, 4, 0, e4);
  ASSERT_EQ(s.size(), amax.size() + 1);
  EXPECT_EQ(s[0], 1.f);    // the first step's own amax is 0: 1
  EXPECT_EQ(s[1], 1.f);    // history {0}: kept
  EXPECT_EQ(s[2], 224.f);  // {0, 2}
  EXPECT_EQ(s[3], 1.f);    // {0, 2, 448}
  EXPECT_EQ(s[4], 1.f);
  EXPECT_EQ(s[5], 1.f);     // {2, 448, 1, 1}: step 0 has left the ring
  EXPECT_EQ(s[6], 1.f);     // {448, 1, 1, 1}
  EXPECT_EQ(s[7], 448.f);   // {1, 1, 1, 1}: 448 has left after four steps
  EXPECT_EQ(s[8], 448.f);   // {1, 1, 1, 0}
  EXPECT_EQ(s[10], 448.f);  // {1, 0, 0, 0}
  EXPECT_EQ(s[11], 448.f);  // {0, 0, 0, 0}: kept
  // Margin 1 halves; history 1 follows the last step alone and keeps the scale where it is 0 or
  // not finite.
  EXPECT_EQ(xk::ref::fp8_delayed_scales(amax, 4, 1, e4)[2], 112.f);
  const float inf = std::numeric_limits<float>::infinity();
  const auto one = xk::ref::fp8_delayed_scales({4.f, 0.f, 8.f, inf, 64.f}, 1, 0, e4);
  EXPECT_EQ(one, (std::vector<float>{112.f, 112.f, 112.f, 56.f, 56.f, 7.f}));  // the first: own
  EXPECT_EQ(xk::ref::fp8_delayed_scales({4.f}, 1, 0, Fp8Format::e5m2),
            (std::vector<float>{14336.f, 14336.f}));
  EXPECT_EQ(xk::ref::fp8_delayed_scales({}, 4, 0, e4), std::vector<float>{1.f});
  EXPECT_THROW(xk::ref::fp8_delayed_scales(amax, 0, 0, e4), xfbench::InvalidArgument);
}

// ---- the scale formula and names (CPU) ----

TEST(Fp8ScaleFromAmax, FormulaAndFallbacks) {
  static_assert(xk::fp8_max(Fp8Format::e4m3) == 448.f);
  static_assert(xk::fp8_max(Fp8Format::e5m2) == 57344.f);
  // The clipping threshold is max plus half of max's ulp (the gap to the value below it).
  for (Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    const std::uint8_t top = xk::ref::fp8_bits(xk::fp8_max(f), f);
    const float ulp = xk::fp8_max(f) - xk::ref::fp8_value(std::uint8_t(top - 1), f);
    EXPECT_EQ(xk::fp8_clip(f), xk::fp8_max(f) + ulp / 2) << xk::to_string(f);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(xk::fp8_scale_from_amax(2.f, 1.f, 448.f, 0), 224.f);
  EXPECT_EQ(xk::fp8_scale_from_amax(2.f, 1.f, 448.f, 1), 112.f);  // margin 1 halves
  EXPECT_EQ(xk::fp8_scale_from_amax(2.f, 1.f, 448.f, 3), 28.f);
  EXPECT_EQ(xk::fp8_scale_from_amax(3.f, 1.f, 57344.f, 0), 57344.f / 3.f);
  EXPECT_EQ(xk::fp8_scale_from_amax(1000.f, 1.f, 448.f, 0), 0.448f);  // below 1: amax too large
  for (float bad : {0.f, -0.f, -2.f, nan, inf, -inf})
    EXPECT_EQ(xk::fp8_scale_from_amax(bad, 3.5f, 448.f, 0), 3.5f) << bad;
  // 448 / 1e-39 overflows float: the previous scale stays; 448 / 2^-100 does not.
  EXPECT_EQ(xk::fp8_scale_from_amax(1e-39f, 3.5f, 448.f, 0), 3.5f);
  EXPECT_EQ(xk::fp8_scale_from_amax(std::ldexp(1.f, -100), 3.5f, 448.f, 0), std::ldexp(448.f, 100));
  // ...and with a margin the halving comes after the quotient: still kept.
  EXPECT_EQ(xk::fp8_scale_from_amax(1e-39f, 3.5f, 448.f, 4), 3.5f);
}

TEST(Fp8Names, RecipesRoundTrip) {
  EXPECT_EQ(xk::fp8_recipe("delayed"), xk::Fp8Recipe::delayed);
  EXPECT_EQ(xk::fp8_recipe("current"), xk::Fp8Recipe::current);
  for (xk::Fp8Recipe r : {xk::Fp8Recipe::delayed, xk::Fp8Recipe::current})
    EXPECT_EQ(xk::fp8_recipe(xk::to_string(r)), r);
  for (const char* bad : {"", "bogus", "delayed ", "most_recent"})
    EXPECT_THROW(xk::fp8_recipe(bad), xfbench::InvalidArgument) << bad;
  const xk::Fp8RecipeConfig defaults;
  EXPECT_EQ(defaults.recipe, xk::Fp8Recipe::delayed);
  EXPECT_EQ(defaults.history, 1024);
  EXPECT_EQ(defaults.margin, 0);
}

TEST(Fp8Names, FormatsAndElementTypes) {
  EXPECT_STREQ(xk::to_string(Fp8Format::e4m3), "e4m3");
  EXPECT_STREQ(xk::to_string(Fp8Format::e5m2), "e5m2");
  EXPECT_EQ(xk::elem_type(Fp8Format::e4m3), xk::ElemType::e4m3);
  EXPECT_EQ(xk::elem_type(Fp8Format::e5m2), xk::ElemType::e5m2);
  for (Fp8Format f : kFormats) {
    EXPECT_EQ(xk::elem_size(xk::elem_type(f)), 1u);
    EXPECT_STREQ(xk::to_string(xk::elem_type(f)), xk::to_string(f));
  }
}

// ---- the kernels against the reference (GPU) ----

class Fp8Gpu : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    const xfbench::DeviceInfo& d = xfbench::device_info();
    if (d.cc() < 89)
      GTEST_SKIP() << "FP8 needs compute capability 8.9; " << d.name << " has " << d.cc_major << "."
                   << d.cc_minor;
  }
};

// A poisoned device byte buffer (0xFF: NaN in both formats, which no finite input gives).
struct Bytes {
  xfbench::DeviceBuffer<std::uint8_t> buf;
  explicit Bytes(std::size_t n) : buf(n) { xfbench::poison(buf.data(), buf.bytes(), nullptr); }
  std::uint8_t* get() const { return buf.data(); }
  std::vector<std::uint8_t> host() const {
    std::vector<std::uint8_t> h(buf.size());
    XF_CUDA_CHECK(cudaDeviceSynchronize());
    XF_CUDA_CHECK(cudaMemcpy(h.data(), buf.data(), h.size(), cudaMemcpyDeviceToHost));
    return h;
  }
};

float device_float(const float* p) {
  float v = 0;
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  XF_CUDA_CHECK(cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

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
          overflow += 4 * want.overflow;
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

// Every bit pattern (NaN and E5M2's infinities included) times a few scale_inv values.
TEST_F(Fp8Gpu, DequantizeIsValueTimesScaleInv) {
  for (Fp8Format f : kFormats)
    for (float scale_inv : {1.f, 1.f / 37.333333f, 1.f / (448.f / 1.2109375f), 3.0517578e-5f})
      for (std::size_t n : {std::size_t(1024), std::size_t(1003), std::size_t(200003)}) {
        SCOPED_TRACE(std::string(xk::to_string(f)) + " scale_inv=" + std::to_string(scale_inv) +
                     " n=" + std::to_string(n));
        std::vector<std::uint8_t> q(n);
        std::mt19937 gen(600 + n);
        for (std::size_t i = 0; i < n; ++i) q[i] = std::uint8_t(i < 256 ? i : gen());
        xfbench::DeviceBuffer<std::uint8_t> d_q(n);
        XF_CUDA_CHECK(cudaMemcpy(d_q.data(), q.data(), n, cudaMemcpyHostToDevice));
        xfbench::DeviceBuffer<float> d_s(1), d_x(n);
        XF_CUDA_CHECK(cudaMemcpy(d_s.data(), &scale_inv, sizeof scale_inv, cudaMemcpyHostToDevice));
        xfbench::poison(d_x.data(), d_x.bytes(), nullptr);
        xk::fp8_dequantize(d_x.data(), d_q.data(), n, f, d_s.data(), nullptr);
        std::vector<float> x(n);
        XF_CUDA_CHECK(cudaDeviceSynchronize());
        XF_CUDA_CHECK(cudaMemcpy(x.data(), d_x.data(), n * sizeof(float), cudaMemcpyDeviceToHost));
        std::size_t bad = 0, first = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const float want = value(q[i], f) * scale_inv;
          const bool ok = std::isnan(want) ? bool(std::isnan(x[i])) : x[i] == want;
          if (!ok && bad++ == 0) first = i;
        }
        EXPECT_EQ(bad, 0u) << "first at " << first << " (" << hex(q[first]) << "): got " << x[first]
                           << ", want " << value(q[first], f) * scale_inv;
      }
}

// y = x·Wᵀ with one operand E5M2 and the other E4M3, quantised by fp8_cast with delayed scales
// (after one update(), so not 1) and multiplied back by their scale_inv in the GEMM, against the
// float64 product of the dequantised operands fp8_value(q) · scale_inv.
TEST_F(Fp8Gpu, MixedFormatGemmMatchesFloat64) {
  const int m = 64, n = 128, k = 256;
  for (bool a_e5m2 : {true, false}) {
    const Fp8Format fa = a_e5m2 ? Fp8Format::e5m2 : Fp8Format::e4m3;
    const Fp8Format fb = a_e5m2 ? Fp8Format::e4m3 : Fp8Format::e5m2;
    SCOPED_TRACE(std::string("A ") + xk::to_string(fa) + ", B " + xk::to_string(fb));
    const auto a = random_values<__nv_bfloat16>(std::size_t(m) * k, -2, 2, 700 + a_e5m2);
    const auto b = random_values<__nv_bfloat16>(std::size_t(n) * k, -0.5, 0.5, 710 + a_e5m2);
    Dev<__nv_bfloat16> d_a(a), d_b(b);
    xk::Fp8Scales s({fa, fb}, {});
    Bytes qa(a.size()), qb(b.size());
    for (int step = 0; step < 2; ++step) {
      xk::fp8_cast(qa.get(), d_a.get(), a.size(), s, 0, nullptr);
      xk::fp8_cast(qb.get(), d_b.get(), b.size(), s, 1, nullptr);
      if (step == 0) s.update(nullptr);
    }
    const std::vector<float> scales = s.scales();
    ASSERT_NE(scales[0], 1.f);
    ASSERT_NE(scales[1], 1.f);

    xk::GemmDesc d;
    d.precision = xk::Precision::fp8;
    d.trans_b = true;  // NT: B stored [n, k], the only layout FP8 takes
    d.m = m, d.n = n, d.k = k;
    d.a_e5m2 = fa == Fp8Format::e5m2;
    d.b_e5m2 = fb == Fp8Format::e5m2;
    ASSERT_EQ(d.out_type(), xk::ElemType::bf16);
    xk::Gemm g(d);
    Dev<__nv_bfloat16> c(std::size_t(m) * n);
    xk::GemmOperands o;
    o.a = qa.get();
    o.b = qb.get();
    o.c = c.get();
    o.a_scale = s.scale_inv(0);
    o.b_scale = s.scale_inv(1);
    g.run(nullptr, o);
    const std::vector<double> got = c.host();

    const double sa = device_float(s.scale_inv(0)), sb = device_float(s.scale_inv(1));
    const auto ha = qa.host(), hb = qb.host();
    std::size_t bad = 0, worst = 0;
    double worst_excess = -INFINITY;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double ref = 0, sum_abs = 0;
        for (int kk = 0; kk < k; ++kk) {
          const double x = value(ha[std::size_t(i) * k + kk], fa) * sa;
          const double w = value(hb[std::size_t(j) * k + kk], fb) * sb;
          ref += x * w;
          sum_abs += std::abs(x * w);
        }
        const std::size_t at = std::size_t(i) * n + j;
        const double allowed = std::ldexp(std::abs(ref), -8) + k * std::ldexp(sum_abs, -23);
        const double excess = std::isfinite(got[at]) ? std::abs(got[at] - ref) - allowed : INFINITY;
        if (excess > 0) ++bad;
        if (excess > worst_excess) worst_excess = excess, worst = at;
      }
    EXPECT_EQ(bad, 0u) << "worst at " << worst << ": got " << got[worst] << " ("
                       << g.algo_info().label() << ")";
  }
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
