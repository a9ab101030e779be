// Philox4x32-10 against the published known-answer vectors (Random123's kat_vectors), and the
// statistics of the dropout masks built on it. Host only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "kernels/philox.hpp"

namespace xk = xfbench::kernels;

TEST(Philox, KnownAnswers) {
  struct Kat {
    xk::detail::Philox4 ctr;
    std::uint32_t k0, k1;
    xk::detail::Philox4 out;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, 0, 0, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       0xffffffffu,
       0xffffffffu,
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       0xa4093822u,
       0x299f31d0u,
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats) {
    const xk::detail::Philox4 r = xk::detail::philox4x32_10(k.ctr, k.k0, k.k1);
    EXPECT_EQ(r.x, k.out.x);
    EXPECT_EQ(r.y, k.out.y);
    EXPECT_EQ(r.z, k.out.z);
    EXPECT_EQ(r.w, k.out.w);
  }
}

TEST(DropoutMask, ThresholdAndScale) {
  const xk::DropoutMask off{xk::Dropout{}};
  EXPECT_FALSE(off.active());
  EXPECT_EQ(off.keep8(123), 0xFFu);
  const xk::DropoutMask m{xk::Dropout{0.1f, 1, 0}};
  EXPECT_TRUE(m.active());
  EXPECT_EQ(m.threshold, 58982u);  // round(0.9 * 65536)
  EXPECT_FLOAT_EQ(m.scale, 1.f / 0.9f);
}

// Keep rate within 5 standard deviations of 1 - p for several p; seeds and offsets give
// independent masks (agreement near (1-p)^2 + p^2, not 1), and the same Dropout the same mask.
TEST(DropoutMask, KeepRateAndIndependence) {
  const std::size_t n = 1 << 20;
  for (float p : {0.1f, 0.5f, 0.9f}) {
    const xk::DropoutMask a{xk::Dropout{p, 42, 7}}, b{xk::Dropout{p, 43, 7}},
        c{xk::Dropout{p, 42, 8}}, a2{xk::Dropout{p, 42, 7}};
    std::size_t kept = 0, same_ab = 0, same_ac = 0;
    for (std::size_t g = 0; g < n / 8; ++g) {
      const unsigned ka = a.keep8(g), kb = b.keep8(g), kc = c.keep8(g);
      ASSERT_EQ(ka, a2.keep8(g));
      kept += __builtin_popcount(ka);
      same_ab += 8 - __builtin_popcount((ka ^ kb) & 0xFFu);
      same_ac += 8 - __builtin_popcount((ka ^ kc) & 0xFFu);
    }
    const double q = 1.0 - p, sd = std::sqrt(n * q * (1 - q));
    EXPECT_NEAR(double(kept), n * q, 5 * sd) << "p=" << p;
    const double agree = q * q + p * p, sd2 = std::sqrt(n * agree * (1 - agree));
    EXPECT_NEAR(double(same_ab), n * agree, 5 * sd2) << "p=" << p;
    EXPECT_NEAR(double(same_ac), n * agree, 5 * sd2) << "p=" << p;
  }
}

TEST(DropoutMask, KeepMatchesKeep8) {
  const xk::DropoutMask m{xk::Dropout{0.3f, 5, 9}};
  for (std::uint64_t i = 0; i < 1000; ++i)
    EXPECT_EQ(m.keep(i), bool((m.keep8(i / 8) >> (i % 8)) & 1u));
}
