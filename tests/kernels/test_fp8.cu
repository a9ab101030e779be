// FP8 casts and scales on the CPU (fp8.hpp): the reference against hand-checked values and against
// cuda_fp8.hpp's host conversion, the delayed recipe's scales by hand, the scale formula and the
// recipe and format names. The GPU kernels against this reference: test_fp8_cast.cu,
// test_fp8_dequantize.cu.
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fp8_test_util.hpp"
#include "kernels/fp8.hpp"
#include "kernels/reference/fp8_ref.hpp"
#include "xfbench/error.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;
using xk::Fp8Format;

namespace {

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

}  // namespace
