// Fp8Linear (issue 34): a linear layer's forward, data gradient and weight gradient in FP8
// against float64 CPU products, two ways.
//
// 1. Against the exact product of the bf16 inputs: what FP8 costs. An E4M3 value carries 3
//    mantissa bits (relative rounding error up to 2^-4, about 2^-3/sqrt(12) ~ 3.6% rms for values
//    spread over a binade), E5M2 2 bits (~7% rms). A product of two rounded operands summed over k
//    random-signed terms keeps those relative errors in its rms: measured by the relative L2 norm
//    of the error, expected ~5% (x, W both e4m3) and ~8% (dy in e5m2 with an e4m3 operand).
//    Bounds: 8% forward, 12% for the gradients — a wrong scale (a factor of 2 at least) or a
//    swapped transpose gives errors near 100%.
// 2. Against the product of the dequantized FP8 operands (q·scale_inv, read back from the layer's
//    own copies through fp8_dequantize): only fp32 accumulation and the bf16 output rounding
//    remain, |err| <= 2^-8·|ref| + 2^-8·rms(ref) per element. This pins the scales on both sides.
//
// The delayed recipe runs a step first (its own amaxes, as a first step measures them, then the
// history's), then the checked step: the scales as they hold in training; the current recipe is
// checked on its first step.
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/fp8.hpp"
#include "kernels/fp8_linear.hpp"
#include "test_gpu.hpp"
#include "test_util.hpp"
#include "xfbench/device.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

bool has_fp8() { return xfbench::device_info().cc() >= 89; }

// out[i, j] = Σ_k a[i·k + kk]·b[j·k + kk]  (a [m, k], b [n, k], row-major)
std::vector<double> product_nt(const std::vector<double>& a, const std::vector<double>& b, int m,
                               int n, int k) {
  std::vector<double> out(std::size_t(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int kk = 0; kk < k; ++kk) s += a[std::size_t(i) * k + kk] * b[std::size_t(j) * k + kk];
      out[std::size_t(i) * n + j] = s;
    }
  return out;
}
std::vector<double> transpose(const std::vector<double>& a, int rows, int cols) {
  std::vector<double> t(a.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) t[std::size_t(c) * rows + r] = a[std::size_t(r) * cols + c];
  return t;
}
double rel_l2(const std::vector<double>& got, const std::vector<double>& ref) {
  double e = 0, r = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    e += (got[i] - ref[i]) * (got[i] - ref[i]);
    r += ref[i] * ref[i];
  }
  return std::sqrt(e / r);
}
double rms(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s / double(v.size()));
}
// |got - ref| <= 2^-8·|ref| + 2^-8·rms(ref) everywhere; returns the worst excess ratio.
double worst_ratio(const std::vector<double>& got, const std::vector<double>& ref) {
  const double floor = std::ldexp(rms(ref), -8);
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - ref[i]) / (std::ldexp(std::abs(ref[i]), -8) + floor));
  return worst;
}

// The dequantized values of an FP8 copy held by the layer, read through a scale_inv.
std::vector<double> dequantized(const void* q, std::size_t n, xk::Fp8Format f, const float* inv) {
  Dev<float> out(n);
  xk::fp8_dequantize(out.get(), q, n, f, inv, nullptr);
  return out.host();
}

}  // namespace

class Fp8LinearGpu : public ::testing::TestWithParam<xk::Fp8Recipe> {};

TEST_P(Fp8LinearGpu, ForwardAndGradientsMatchFloat64) {
  SKIP_WITHOUT_GPU();
  if (!has_fp8()) GTEST_SKIP() << "no fp8 tensor cores (compute capability below 8.9)";
  const int T = 256, K = 320, M = 192;  // distinct, so a swapped dimension cannot pass
  xk::Fp8RecipeConfig rc;
  rc.recipe = GetParam();
  xk::Fp8Scales scales(xk::fp8_linear_formats(), rc);
  xk::Fp8LinearOptions options;
  options.weight_grad = xk::ElemType::f32;
  xk::Fp8Linear layer(T, K, M, scales, 0, options);

  // Spreads far from 1 so that unit scales would under- or overflow the formats.
  const std::vector<double> x = random_values<__nv_bfloat16>(std::size_t(T) * K, -3, 3, 1);
  const std::vector<double> w = random_values<__nv_bfloat16>(std::size_t(M) * K, -0.02, 0.02, 2);
  const std::vector<double> dy = random_values<__nv_bfloat16>(std::size_t(T) * M, -1e-4, 1e-4, 3);
  Dev<__nv_bfloat16> d_x(x), d_w(w), d_dy(dy), y(std::size_t(T) * M), dx(std::size_t(T) * K);
  Dev<float> dw(std::size_t(M) * K);
  auto step = [&] {
    layer.cast_weight(nullptr, d_w.get());
    layer.forward(nullptr, d_x.get(), y.get());
    layer.cast_grad(nullptr, d_dy.get());
    layer.backward_data(nullptr, dx.get());
    layer.backward_weight(nullptr, d_x.get(), dw.get());
  };
  if (rc.recipe == xk::Fp8Recipe::delayed) {
    step();
    scales.update(nullptr);
  }
  step();
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  for (float s : scales.scales()) EXPECT_NE(s, 1.0f) << "the scales were never set";
  EXPECT_EQ(scales.overflow_count(), 0u);

  // 1. What FP8 costs, against the exact bf16 product.
  const std::vector<double> y_ref = product_nt(x, w, T, M, K);
  const std::vector<double> dx_ref = product_nt(dy, transpose(w, M, K), T, K, M);
  const std::vector<double> dw_ref = product_nt(transpose(dy, T, M), transpose(x, T, K), M, K, T);
  const double ey = rel_l2(y.host(), y_ref), edx = rel_l2(dx.host(), dx_ref),
               edw = rel_l2(dw.host(), dw_ref);
  std::printf("%s: rel_l2 y %.4f, dx %.4f, dW %.4f\n", xk::to_string(rc.recipe), ey, edx, edw);
  EXPECT_LT(ey, 0.08);
  EXPECT_LT(edx, 0.12);
  EXPECT_LT(edw, 0.12);
  EXPECT_GT(ey, 0.005) << "suspiciously exact: was FP8 used?";

  // 2. The products of the dequantized operands: the scales on both sides of each GEMM.
  const std::vector<float> sc = scales.scales();
  auto deq = [&](const std::vector<double>& v, std::size_t n, int which) {
    // Quantise the bf16 values as the layer did (the same scale) and dequantize: q·(1/s).
    xk::Fp8Scales one({scales.format(which)}, xk::Fp8RecipeConfig{xk::Fp8Recipe::delayed, 1, 0});
    XF_CUDA_CHECK(cudaMemcpy(one.scale(0), &sc[std::size_t(which)], 4, cudaMemcpyHostToDevice));
    const float inv = 1.0f / sc[std::size_t(which)];
    XF_CUDA_CHECK(
        cudaMemcpy(const_cast<float*>(one.scale_inv(0)), &inv, 4, cudaMemcpyHostToDevice));
    Dev<__nv_bfloat16> in(v);
    xfbench::DeviceBuffer<std::uint8_t> q(n);
    xk::fp8_cast(q.data(), in.get(), n, one, 0, nullptr);
    return dequantized(q.data(), n, scales.format(which), one.scale_inv(0));
  };
  const std::vector<double> xq = deq(x, x.size(), 0), wq = deq(w, w.size(), 1),
                            dyq = deq(dy, dy.size(), 2);
  const double ry = worst_ratio(y.host(), product_nt(xq, wq, T, M, K));
  const double rdx = worst_ratio(dx.host(), product_nt(dyq, transpose(wq, M, K), T, K, M));
  const double rdw =
      worst_ratio(dw.host(), product_nt(transpose(dyq, T, M), transpose(xq, T, K), M, K, T));
  std::printf("against the dequantized operands: worst |err| / bound y %.3f, dx %.3f, dW %.3f\n",
              ry, rdx, rdw);
  EXPECT_LE(ry, 1.0);
  EXPECT_LE(rdx, 1.0);
  EXPECT_LE(rdw, 1.0);
}

INSTANTIATE_TEST_SUITE_P(Recipes, Fp8LinearGpu,
                         ::testing::Values(xk::Fp8Recipe::delayed, xk::Fp8Recipe::current),
                         [](const auto& info) { return std::string(xk::to_string(info.param)); });

TEST(Fp8Linear, RejectsShapesAndScalesItCannotTake) {
  SKIP_WITHOUT_GPU();  // Fp8Scales allocates on the device
  xk::Fp8Scales scales(xk::fp8_linear_formats(), {});
  EXPECT_THROW(xk::Fp8Linear(100, 64, 64, scales, 0), xfbench::InvalidArgument);
  EXPECT_THROW(xk::Fp8Linear(64, 64, 64, scales, 1), xfbench::InvalidArgument);
  xk::Fp8Scales wrong({xk::Fp8Format::e5m2, xk::Fp8Format::e4m3, xk::Fp8Format::e5m2}, {});
  EXPECT_THROW(xk::Fp8Linear(64, 64, 64, wrong, 0), xfbench::InvalidArgument);
}

// The paths where a producer writes the layer's FP8 input or gradient itself (input() and
// forward_fp8 / backward_weight_fp8; grad_input() and grad_written): given the bytes the layer's
// own casts would write (here fp8_cast with the same held scales), every product is bit for bit the
// same as through forward / cast_grad / backward_weight.
TEST(Fp8Linear, ProducerWrittenInputAndGradientGiveTheSameProducts) {
  SKIP_WITHOUT_GPU();
  if (!has_fp8()) GTEST_SKIP() << "no fp8 tensor cores (compute capability below 8.9)";
  const int T = 128, K = 192, M = 96;
  xk::Fp8Scales scales(xk::fp8_linear_formats(), {});  // delayed
  xk::Fp8Linear layer(T, K, M, scales, 0);
  const std::vector<double> x = random_values<__nv_bfloat16>(std::size_t(T) * K, -3, 3, 1);
  const std::vector<double> w = random_values<__nv_bfloat16>(std::size_t(M) * K, -0.02, 0.02, 2);
  const std::vector<double> dy = random_values<__nv_bfloat16>(std::size_t(T) * M, -1e-4, 1e-4, 3);
  Dev<__nv_bfloat16> d_x(x), d_w(w), d_dy(dy);
  Dev<__nv_bfloat16> y1(std::size_t(T) * M), y2(y1.buf.size()), dx1(std::size_t(T) * K),
      dx2(dx1.buf.size()), dw1(std::size_t(M) * K), dw2(dw1.buf.size());
  layer.cast_weight(nullptr, d_w.get());  // a first step: the history holds every amax
  layer.forward(nullptr, d_x.get(), y1.get());
  layer.cast_grad(nullptr, d_dy.get());
  scales.update(nullptr);
  // Through the layer's own casts.
  layer.cast_weight(nullptr, d_w.get());
  layer.forward(nullptr, d_x.get(), y1.get());
  layer.cast_grad(nullptr, d_dy.get());
  layer.backward_data(nullptr, dx1.get());
  layer.backward_weight(nullptr, d_x.get(), dw1.get());
  // Through bytes written outside: x into a buffer of the caller's, dy into the layer's copy.
  xfbench::DeviceBuffer<std::uint8_t> xq(std::size_t(T) * K);
  const xk::Fp8Output in = layer.input(xq.data()), grad = layer.grad_input();
  EXPECT_EQ(in.i, 0);
  EXPECT_EQ(grad.i, 2);
  xk::fp8_cast(in.q, d_x.get(), std::size_t(T) * K, scales, in.i, nullptr);
  layer.forward_fp8(nullptr, xq.data(), y2.get());
  xk::fp8_cast(grad.q, d_dy.get(), std::size_t(T) * M, scales, grad.i, nullptr);
  layer.grad_written(nullptr);
  layer.backward_data(nullptr, dx2.get());
  layer.backward_weight_fp8(nullptr, xq.data(), dw2.get());
  EXPECT_EQ(y1.host(), y2.host());
  EXPECT_EQ(dx1.host(), dx2.host());
  EXPECT_EQ(dw1.host(), dw2.host());
  // x and xᵀ written at once (input_transposed): x into the layer's own copy, xᵀ kept outside;
  // the gradient and its transpose at once (grad_input(true)).
  Dev<__nv_bfloat16> y3(y1.buf.size()), dx3(dx1.buf.size()), dw3(dw1.buf.size());
  xfbench::DeviceBuffer<std::uint8_t> xqt(std::size_t(T) * K);
  const xk::Fp8Output in_t = layer.input_transposed(xqt.data()), grad_t = layer.grad_input(true);
  ASSERT_NE(in_t.q, nullptr);
  EXPECT_EQ(in_t.qt, xqt.data());
  ASSERT_NE(grad_t.qt, nullptr);
  xk::fp8_cast_transpose(in_t.q, in_t.qt, d_x.get(), T, K, scales, in_t.i, nullptr);
  layer.forward_fp8(nullptr, in_t.q, y3.get());
  xk::fp8_cast_transpose(grad_t.q, grad_t.qt, d_dy.get(), T, M, scales, grad_t.i, nullptr);
  layer.backward_data(nullptr, dx3.get());
  layer.backward_weight_fp8t(nullptr, xqt.data(), dw3.get());
  EXPECT_EQ(y1.host(), y3.host());
  EXPECT_EQ(dx1.host(), dx3.host());
  EXPECT_EQ(dw1.host(), dw3.host());
  double norm = 0;
  for (double v : dw2.host()) norm += v * v;
  EXPECT_GT(norm, 0.0);
}
