// Fused softmax cross-entropy against the float64 reference: BERT's and GPT-2's vocabularies with
// padded row strides, a small vocabulary, an fp32 row too wide for registers, ignored rows, a
// device loss scale; the padding columns and ignored rows must come back zero, and the loss mean
// counts only valid rows.
//
// Tolerances (u = unit roundoff of T): losses 1e-5 relative + 1e-5 absolute (fp32 math on exact
// inputs, ~log V); dlogits 2 u relative per element, so the tiny probabilities are checked too
// (fp32: 64 u, the exp2 approximation of an argument up to ~23), absolute 8 fp32 units of the
// gradient scale (softmax − 1 cancels where a probability is ~1) or for fp16 2^-24, the subnormal
// spacing, whichever is larger.
#include <gtest/gtest.h>

#include <random>

#include "kernels/cross_entropy.hpp"
#include "kernels/reference/train_ref.hpp"
#include "train_test_util.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

template <class T>
class CrossEntropy : public GpuTest {};
using Types = ::testing::Types<__half, __nv_bfloat16, float>;
TYPED_TEST_SUITE(CrossEntropy, Types);

template <class T>
void check(int N, int V, int ldv, bool device_scale) {
  SCOPED_TRACE("N=" + std::to_string(N) + " V=" + std::to_string(V) +
               " ldv=" + std::to_string(ldv) + " device_scale=" + std::to_string(device_scale));
  const std::size_t n = std::size_t(N) * ldv;
  // Scores in [-8, 8); row 1 has one dominant logit (softmax close to one-hot).
  auto logits = random_values<T>(n, -8, 8, 1);
  logits[std::size_t(1) * ldv + 5] = 30;
  std::mt19937_64 gen(2);
  std::vector<int> targets(N);
  int valid = 0;
  for (int i = 0; i < N; ++i) {
    targets[i] = i % 4 == 3 ? xk::kIgnoreIndex : int(gen() % V);
    valid += targets[i] != xk::kIgnoreIndex;
  }
  targets[1] = 5;
  targets[2] = V - 1;  // the last valid column
  const float grad_scale = 0.5f, loss_scale = device_scale ? 1024.f : 1.f;
  Dev<T> d_logits(logits);
  DevInts d_targets(targets);
  Dev<float> losses(N), mean(1), d_scale(std::vector<double>{loss_scale});
  xk::cross_entropy_forward_backward<T>(losses.get(), d_logits.get(), d_targets.get(), N, V, ldv,
                                        grad_scale, valid, device_scale ? d_scale.get() : nullptr,
                                        nullptr);
  xk::cross_entropy_mean(mean.get(), losses.get(), d_targets.get(), N, 1.f, false, nullptr);
  xk::cross_entropy_mean(mean.get(), losses.get(), d_targets.get(), N, 0.25f, true, nullptr);
  // Reference on the dense [N, V] part; padding columns expected 0.
  std::vector<double> dense(std::size_t(N) * V), r_losses(N), r_d(std::size_t(N) * V);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < V; ++j) dense[std::size_t(i) * V + j] = logits[std::size_t(i) * ldv + j];
  xk::ref::cross_entropy(r_losses.data(), r_d.data(), dense.data(), targets.data(), N, V,
                         double(grad_scale) * loss_scale / valid);
  std::vector<double> r_dlogits(n, 0.0);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < V; ++j) r_dlogits[std::size_t(i) * ldv + j] = r_d[std::size_t(i) * V + j];
  double r_mean = 0;
  for (int i = 0; i < N; ++i) r_mean += r_losses[i] / valid;
  EXPECT_TRUE(close("losses", losses.host(), r_losses, {1e-5, 1e-5}));
  const double ulps = std::is_same<T, float>::value ? 64 : 2;
  // softmax − 1 at a target of probability ~1 cancels in fp32: 8 fp32 units of the row's scale.
  const double atol = std::max(std::is_same<T, __half>::value ? 1.0 / (1 << 24) : 0.0,
                               8.0 / (1 << 24) * grad_scale * loss_scale / valid);
  EXPECT_TRUE(close("dlogits", d_logits.host(), r_dlogits, {atol, ulps * unit_roundoff<T>()}));
  EXPECT_TRUE(close("mean", mean.host(), {1.25 * r_mean}, {1e-5, 1e-5}));
}

TYPED_TEST(CrossEntropy, MatchesReference) {
  using T = TypeParam;
  const int pad = 16 / sizeof(T);
  auto padded = [&](int V) { return (V + pad - 1) / pad * pad; };
  check<T>(9, 100, padded(100), false);
  check<T>(9, 96, 96, true);  // no padding
  check<T>(13, 30522, padded(30522), false);
  check<T>(13, 50257, padded(50257), true);
  check<T>(5, 50257, padded(50257) + 64, false);  // extra padding
  check<T>(5, 128256, 128256, false);             // Llama 3's vocabulary
}

TEST(CrossEntropyArgs, RejectsBadInput) {
  EXPECT_THROW(xk::cross_entropy_forward_backward<__half>(nullptr, nullptr, nullptr, 4, 30522,
                                                          30522, 1.f, 4, nullptr, nullptr),
               xfbench::InvalidArgument);  // ldv % 8 != 0
  EXPECT_THROW(xk::cross_entropy_forward_backward<float>(nullptr, nullptr, nullptr, 4, 100, 96, 1.f,
                                                         4, nullptr, nullptr),
               xfbench::InvalidArgument);  // ldv < V
}

}  // namespace
