// The CPU burn's kernels: every ISA this CPU has gives its scalar reference's bits, chunk after
// chunk; the values stay near their start; the ISA names and assumed peaks; the clock probe.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include "cpu_kernels.hpp"

namespace {

using namespace xfbench::burn;

const CpuIsa kAll[] = {CpuIsa::avx512f, CpuIsa::avx2_fma, CpuIsa::neon, CpuIsa::sse2,
                       CpuIsa::generic};

TEST(CpuKernels, EveryIsaGivesTheReferenceBits) {
  int ran = 0;
  for (CpuIsa isa : kAll) {
    if (!cpu_has(isa)) continue;
    ++ran;
    for (std::uint64_t steps : {std::uint64_t(1), std::uint64_t(1000), kChunkSteps}) {
      std::vector<float> got(chunk_values(isa)), again(got.size()), want(got.size());
      run_chunk(isa, steps, got.data());
      run_chunk(isa, steps, again.data());
      reference_chunk(isa, steps, want.data());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << isa_name(isa) << ", " << steps << " steps: first value " << got[0] << " vs "
          << want[0];
      EXPECT_EQ(std::memcmp(got.data(), again.data(), got.size() * sizeof(float)), 0);
      for (float v : got) {
        EXPECT_GE(v, 1.0f) << isa_name(isa);  // near the start, [1, 1.25) + steps·2^-20: no
        EXPECT_LT(v, 1.25f + float(steps) * 0x1p-19f) << isa_name(isa);  // overflow or denormal
      }
    }
  }
  EXPECT_GE(ran, 1);  // generic at least
  EXPECT_TRUE(cpu_has(detect_cpu_isa()));
}

TEST(CpuKernels, ChunksDifferWithTheirLength) {
  // Every step moves every value: chunks one step apart differ everywhere (a core that skips
  // work, or whose values stop changing, cannot pass its check).
  const CpuIsa isa = detect_cpu_isa();
  std::vector<float> a(chunk_values(isa)), b(a.size());
  run_chunk(isa, 1000, a.data());
  run_chunk(isa, 1001, b.data());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NE(a[i], b[i]) << i;
}

TEST(CpuKernels, NamesLanesAndPeaks) {
  EXPECT_EQ(isa_name(CpuIsa::avx512f), "avx512f");
  EXPECT_EQ(isa_name(CpuIsa::avx2_fma), "avx2+fma");
  EXPECT_EQ(isa_name(CpuIsa::neon), "neon");
  EXPECT_EQ(isa_name(CpuIsa::sse2), "sse2 (no FMA)");
  EXPECT_EQ(isa_lanes(CpuIsa::avx512f), 16);
  EXPECT_EQ(isa_lanes(CpuIsa::avx2_fma), 8);
  EXPECT_EQ(isa_lanes(CpuIsa::neon), 4);
  EXPECT_EQ(chunk_values(CpuIsa::avx2_fma), std::size_t(kAccumulators * 8));
  EXPECT_EQ(chunk_flops(CpuIsa::avx2_fma, 10), 10.0 * 2 * 2 * kAccumulators * 8);
  EXPECT_EQ(assumed_flop_per_cycle(CpuIsa::avx2_fma), 32);
  EXPECT_EQ(assumed_flop_per_cycle(CpuIsa::neon), 16);
  EXPECT_EQ(assumed_flop_per_cycle(CpuIsa::sse2), 8);
  const double avx512 = assumed_flop_per_cycle(CpuIsa::avx512f);
  EXPECT_TRUE(avx512 == 64 || avx512 == 32);
}

TEST(CpuKernels, ClockProbe) {
  // Alone and beside each vector load this CPU has: a clock, not a count of FMAs (the chain of
  // adds sets the pace even where one FMA unit would take 24 of its 32 cycles).
  for (CpuIsa load : {CpuIsa::generic, CpuIsa::avx2_fma, CpuIsa::avx512f}) {
    if (!cpu_has(load)) continue;
    const double mhz = probe_clock_mhz(load);
    SCOPED_TRACE(isa_name(load));
    std::cout << "clock probe beside " << isa_name(load) << " load: " << mhz << " MHz\n";
#if defined(__x86_64__) || defined(__aarch64__)
    EXPECT_GT(mhz, 200);  // even a busy CI core
    EXPECT_LT(mhz, 7000);
#else
    EXPECT_TRUE(std::isnan(mhz));
#endif
  }
}

TEST(CpuKernels, ClockProbeBesideTheLoadReadsTheSameClockWhereNothingLowersIt) {
#if defined(__x86_64__)
  // AVX2 does not lower the clock of the cores CI runs on: beside it the chain must read what it
  // reads alone (a probe the FMAs slowed would read less; the best of 5 against a busy core).
  if (!cpu_has(CpuIsa::avx2_fma) || cpu_has(CpuIsa::avx512f)) GTEST_SKIP() << "AVX2 only";
  double alone = 0, beside = 0;
  for (int i = 0; i < 5; ++i) {
    alone = std::max(alone, probe_clock_mhz());
    beside = std::max(beside, probe_clock_mhz(CpuIsa::avx2_fma));
  }
  EXPECT_NEAR(beside / alone, 1.0, 0.05) << alone << " MHz alone, " << beside << " beside";
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

}  // namespace
