// FP8 bytes read back (GPU, compute capability 8.9 and up): the dequantisation of every bit
// pattern, and a mixed E5M2 x E4M3 GEMM with the casts' scale_inv, against float64.
//
// Tolerances: the dequantisation is one fp32 product: exact. The GEMM reads the quantised operands
// exactly, so its only errors are fp32 accumulation, k · 2^-23 · Σ|a·b| (the standard bound for k
// additions with unit 2^-24, doubled for the scaling and cuBLASLt's blockwise promotion), and one
// bf16 rounding of the output, 2^-8 relative (twice bf16's 2^-9).
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fp8_test_util.hpp"
#include "kernels/fp8.hpp"
#include "kernels/gemm.hpp"
#include "test_util.hpp"
#include "xfbench/error.hpp"
#include "xfbench/memory.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;
using xk::Fp8Format;

namespace {

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

}  // namespace
