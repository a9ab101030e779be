// Attention softmax forward/backward against the float64 reference: scale, padding mask, causal
// mask, score bias, dropout on the probabilities, fully hidden rows.
//
// Tolerances (eps = 2^-11 fp16, 2^-8 bf16, 2^-18 fp32): probs and dropped probs 2 eps relative +
// 1e-7 absolute (fp16 subnormals); dscores 4 eps relative + 4 eps · max|ref| absolute.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/reference/reference.hpp"
#include "kernels/softmax.hpp"
#include "test_util.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

template <class T>
class Softmax : public GpuTest {};
using Types = ::testing::Types<__half, __nv_bfloat16, float>;  // float: tf32/fp32 steps
TYPED_TEST_SUITE(Softmax, Types);

struct Case {
  int B, NH, Sq, Sk;
  bool mask, bias, causal;
  float p;
};

template <class T>
void check(const Case& c) {
  SCOPED_TRACE("B=" + std::to_string(c.B) + " NH=" + std::to_string(c.NH) +
               " Sq=" + std::to_string(c.Sq) + " Sk=" + std::to_string(c.Sk) +
               " mask=" + std::to_string(c.mask) + " bias=" + std::to_string(c.bias) +
               " causal=" + std::to_string(c.causal) + " p=" + std::to_string(c.p));
  const std::size_t n = std::size_t(c.B) * c.NH * c.Sq * c.Sk;
  const double scale = 0.125;
  auto scores = random_values<T>(n, -8, 8, 1), dpd = random_values<T>(n, -1, 1, 2);
  auto bias = random_values<T>(std::size_t(c.NH) * c.Sq * c.Sk, -1, 1, 3);
  // Batch 0 hides its last quarter of keys (HF's large negative), the last batch hides all (-inf).
  std::vector<double> mask(std::size_t(c.B) * c.Sk, 0.0);
  for (int j = c.Sk * 3 / 4; j < c.Sk; ++j) mask[j] = -10000.0;
  if (c.B > 1)
    for (int j = 0; j < c.Sk; ++j) mask[std::size_t(c.B - 1) * c.Sk + j] = -INFINITY;
  std::vector<float> maskf(mask.begin(), mask.end());
  xfbench::DeviceBuffer<float> d_mask(maskf.size());
  XF_CUDA_CHECK(cudaMemcpy(d_mask.data(), maskf.data(), d_mask.bytes(), cudaMemcpyHostToDevice));
  const xk::Dropout drop{c.p, 31, 4};
  Dev<T> d_scores(scores), d_bias(bias), d_dpd(dpd), probs(n), dropped(n), ds(n);
  xk::attention_softmax_forward<T>(probs.get(), dropped.get(), d_scores.get(),
                                   c.mask ? d_mask.data() : nullptr,
                                   c.bias ? d_bias.get() : nullptr, float(scale), c.causal, drop,
                                   c.B, c.NH, c.Sq, c.Sk, nullptr);
  xk::attention_softmax_backward<T>(ds.get(), d_dpd.get(), probs.get(), float(scale), drop, c.B,
                                    c.NH, c.Sq, c.Sk, nullptr);
  std::vector<double> r_p(n), r_pd(n), r_ds(n);
  xk::ref::attention_softmax_forward(r_p.data(), r_pd.data(), scores.data(),
                                     c.mask ? mask.data() : nullptr, c.bias ? bias.data() : nullptr,
                                     scale, c.causal, drop, c.B, c.NH, c.Sq, c.Sk);
  // The backward reference starts from the GPU's stored probabilities (what the kernel reads).
  const auto p = probs.host();
  xk::ref::attention_softmax_backward(r_ds.data(), dpd.data(), p.data(), scale, drop, c.B, c.NH,
                                      c.Sq, c.Sk);
  const Tol tol{1e-7, storage_tol<T>().rtol};
  EXPECT_TRUE(close("probs", p, r_p, tol));
  if (c.p > 0) EXPECT_TRUE(close("probs_dropped", dropped.host(), r_pd, tol));
  EXPECT_TRUE(close_scaled<T>("dscores", ds.host(), r_ds, 4));
}

TYPED_TEST(Softmax, RowLengths) {
  for (int Sk : {8, 64, 128, 200, 256, 512, 1024, 2048, 4096})
    check<TypeParam>({2, 3, Sk <= 512 ? 7 : 3, Sk, true, false, false, 0.f});
}

TYPED_TEST(Softmax, MasksBiasDropout) {
  for (int Sk : {128, 512, 2048}) {
    check<TypeParam>({3, 2, 5, Sk, true, true, false, 0.1f});
    check<TypeParam>({2, 2, Sk > 512 ? 16 : Sk, Sk, false, false, true, 0.1f});  // causal
    check<TypeParam>({2, 1, 9, Sk, true, true, true, 0.3f});  // causal with Sq < Sk
  }
}

// A row whose keys are all hidden gives zeros, never NaN.
TYPED_TEST(Softmax, FullyHiddenRowIsZero) {
  using T = TypeParam;
  const int B = 2, Sk = 64;
  std::vector<float> mask(B * Sk, -INFINITY);
  xfbench::DeviceBuffer<float> d_mask(mask.size());
  XF_CUDA_CHECK(cudaMemcpy(d_mask.data(), mask.data(), d_mask.bytes(), cudaMemcpyHostToDevice));
  Dev<T> scores(random_values<T>(B * Sk, -1, 1, 5)), probs(B * Sk);
  xk::attention_softmax_forward<T>(probs.get(), nullptr, scores.get(), d_mask.data(), nullptr, 1.f,
                                   false, {}, B, 1, 1, Sk, nullptr);
  for (double v : probs.host()) ASSERT_EQ(v, 0.0);
}

}  // namespace
