// Attention forward/backward, all backends, on packed QKV in both layouts, against the float64
// reference: padding mask, causal mask, score bias and (unfused) dropout with the exact mask.
// cuDNN draws its own dropout mask, so its dropout is checked for determinism and effect only;
// the flash kernels use the unfused backend's mask and are checked against it exactly.
//
// Tolerances (eps = 2^-11 fp16, 2^-8 bf16; P is rounded to storage before P·V, as in HF):
//   O           4 eps relative + 4 eps · max|ref| absolute
//   dQ, dK, dV  8 eps relative + 8 eps · max|ref| absolute
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "kernels/attention.hpp"
#include "kernels/detail/flash.cuh"  // BlockOrder, the flash kernels' block schedule
#include "kernels/reference/reference.hpp"
#include "test_util.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

template <class T>
class Attention : public GpuTest {};
using Types = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(Attention, Types);

template <class T>
xk::Precision precision_of() {
  return std::is_same<T, __half>::value ? xk::Precision::fp16 : xk::Precision::bf16;
}

// Dense [B, NH, S, HD] <-> a strided view at `base` of a packed host tensor.
std::vector<double> gather(const std::vector<double>& packed, std::int64_t base,
                           const xk::HeadStrides& s, int B, int NH, int S, int HD) {
  std::vector<double> out(std::size_t(B) * NH * S * HD);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < S; ++i)
        for (int d = 0; d < HD; ++d)
          out[((std::size_t(b) * NH + h) * S + i) * HD + d] =
              packed[base + b * s.b + h * s.h + i * s.s + d];
  return out;
}

struct Case {
  int B, NH, S, HD;
  xk::QkvLayout layout;
  bool padding, causal, bias;
  float p;
  float scale = 0.f;  // desc.scale (0: 1/sqrt(HD); T5: 1)
  std::string str() const {
    return "B=" + std::to_string(B) + " NH=" + std::to_string(NH) + " S=" + std::to_string(S) +
           " HD=" + std::to_string(HD) + " " + xk::to_string(layout) +
           " pad=" + std::to_string(padding) + " causal=" + std::to_string(causal) +
           " bias=" + std::to_string(bias) + " p=" + std::to_string(p) +
           " scale=" + std::to_string(scale);
  }
};

// Inputs of one case on host and device, and the float64 reference results.
template <class T>
struct Problem {
  xk::AttentionDesc desc;
  xk::QkvLayout layout;
  std::size_t qkv_n, o_n;
  std::vector<double> qkv, dout, bias;
  std::vector<int> lens;
  Dev<T> d_qkv, d_dout, d_bias, o, dqkv;
  xfbench::DeviceBuffer<int> d_lens;
  xfbench::DeviceBuffer<float> d_mask;  // the same padding as an additive [B, S] mask
  std::vector<double> r_o, r_dq, r_dk, r_dv;

  explicit Problem(const Case& c)
      : desc(xk::self_attention_desc(precision_of<T>(), c.B, c.NH, c.S, c.HD, c.layout)),
        layout(c.layout),
        qkv_n(std::size_t(c.B) * c.S * 3 * c.NH * c.HD),
        o_n(std::size_t(c.B) * c.S * c.NH * c.HD),
        qkv(random_values<T>(qkv_n, -1, 1, 1)),
        dout(random_values<T>(o_n, -1, 1, 2)),
        bias(random_values<T>(std::size_t(c.NH) * c.S * c.S, -1, 1, 3)),
        d_qkv(qkv),
        d_dout(dout),
        d_bias(bias),
        o(o_n),
        dqkv(qkv_n),
        d_lens(c.B),
        d_mask(std::size_t(c.B) * c.S) {
    desc.padding_mask = c.padding;
    desc.causal = c.causal;
    desc.bias = c.bias;
    desc.dropout = c.p;
    desc.scale = c.scale;
    for (int b = 0; b < c.B; ++b) lens.push_back(c.padding ? std::max(8, c.S - 24 * b - 5) : c.S);
    std::vector<float> mask(std::size_t(c.B) * c.S, 0.f);
    for (int b = 0; b < c.B; ++b)
      for (int j = lens[b]; j < c.S; ++j) mask[std::size_t(b) * c.S + j] = -INFINITY;
    XF_CUDA_CHECK(cudaMemcpy(d_lens.data(), lens.data(), d_lens.bytes(), cudaMemcpyHostToDevice));
    XF_CUDA_CHECK(cudaMemcpy(d_mask.data(), mask.data(), d_mask.bytes(), cudaMemcpyHostToDevice));
  }

  std::int64_t off(int which) const { return xk::qkv_offset(layout, which, desc.NH, desc.HD); }
  const T* ptr(int which) const { return d_qkv.get() + off(which); }
  T* grad(int which) const { return dqkv.get() + off(which); }

  void reference(xk::Dropout drop) {
    const auto& d = desc;
    auto q = gather(qkv, off(0), d.q, d.B, d.NH, d.Sq, d.HD);
    auto k = gather(qkv, off(1), d.k, d.B, d.NH, d.Sk, d.HD);
    auto v = gather(qkv, off(2), d.v, d.B, d.NH, d.Sk, d.HD);
    auto dO = gather(dout, 0, d.o, d.B, d.NH, d.Sq, d.HD);
    xk::ref::AttentionRef a{d.B,
                            d.NH,
                            d.Sq,
                            d.Sk,
                            d.HD,
                            d.softmax_scale(),
                            d.causal,
                            d.padding_mask ? lens.data() : nullptr,
                            d.bias ? bias.data() : nullptr,
                            drop};
    r_o.resize(q.size()), r_dq.resize(q.size()), r_dk.resize(k.size()), r_dv.resize(v.size());
    xk::ref::attention_forward(r_o.data(), q.data(), k.data(), v.data(), a);
    xk::ref::attention_backward(r_dq.data(), r_dk.data(), r_dv.data(), dO.data(), q.data(),
                                k.data(), v.data(), a);
  }

  void expect_matches_reference() {
    const auto& d = desc;
    const auto oh = o.host(), gh = dqkv.host();
    EXPECT_TRUE(close_scaled<T>("O", gather(oh, 0, d.o, d.B, d.NH, d.Sq, d.HD), r_o, 4));
    EXPECT_TRUE(close_scaled<T>("dQ", gather(gh, off(0), d.q, d.B, d.NH, d.Sq, d.HD), r_dq, 8));
    EXPECT_TRUE(close_scaled<T>("dK", gather(gh, off(1), d.k, d.B, d.NH, d.Sk, d.HD), r_dk, 8));
    EXPECT_TRUE(close_scaled<T>("dV", gather(gh, off(2), d.v, d.B, d.NH, d.Sk, d.HD), r_dv, 8));
  }

  // The bias gradient summed over the batch and along each diagonal j - i ([NH, Sq + Sk - 1], as
  // FlashAttention returns it) in float64: the reference softmax's backward with respect to the
  // biased scores (scale 1 there), no padding mask.
  std::vector<double> bias_grad_diagonals(xk::Dropout drop) const {
    const auto& d = desc;
    const auto q = gather(qkv, off(0), d.q, d.B, d.NH, d.Sq, d.HD);
    const auto k = gather(qkv, off(1), d.k, d.B, d.NH, d.Sk, d.HD);
    const auto v = gather(qkv, off(2), d.v, d.B, d.NH, d.Sk, d.HD);
    const auto dO = gather(dout, 0, d.o, d.B, d.NH, d.Sq, d.HD);
    const std::size_t n = std::size_t(d.B) * d.NH * d.Sq * d.Sk;
    std::vector<double> scores(n), dprobs(n), probs(n), dscores(n);
    for (int bh = 0; bh < d.B * d.NH; ++bh)
      for (int i = 0; i < d.Sq; ++i)
        for (int j = 0; j < d.Sk; ++j) {
          double s = 0, g = 0;
          for (int e = 0; e < d.HD; ++e) {
            s += q[(std::size_t(bh) * d.Sq + i) * d.HD + e] *
                 k[(std::size_t(bh) * d.Sk + j) * d.HD + e];
            g += dO[(std::size_t(bh) * d.Sq + i) * d.HD + e] *
                 v[(std::size_t(bh) * d.Sk + j) * d.HD + e];
          }
          scores[(std::size_t(bh) * d.Sq + i) * d.Sk + j] = s;
          dprobs[(std::size_t(bh) * d.Sq + i) * d.Sk + j] = g;
        }
    xk::ref::attention_softmax_forward(probs.data(), nullptr, scores.data(), nullptr, bias.data(),
                                       d.softmax_scale(), d.causal, drop, d.B, d.NH, d.Sq, d.Sk);
    xk::ref::attention_softmax_backward(dscores.data(), dprobs.data(), probs.data(), 1.0, drop, d.B,
                                        d.NH, d.Sq, d.Sk);
    const int diagonals = d.Sq + d.Sk - 1;
    std::vector<double> out(std::size_t(d.NH) * diagonals, 0.0);
    for (int bh = 0; bh < d.B * d.NH; ++bh)
      for (int i = 0; i < d.Sq; ++i)
        for (int j = 0; j < d.Sk; ++j)
          out[std::size_t(bh % d.NH) * diagonals + j - i + d.Sq - 1] +=
              dscores[(std::size_t(bh) * d.Sq + i) * d.Sk + j];
    return out;
  }
};

template <class T>
void check_unfused(const Case& c) {
  SCOPED_TRACE(c.str());
  Problem<T> pr(c);
  xk::UnfusedAttention attn(pr.desc);
  Dev<T> probs(attn.probs_elements()), work(attn.probs_elements());
  const xk::Dropout drop{c.p, 5, 6};
  attn.forward(pr.o.get(), probs.get(), work.get(), pr.ptr(0), pr.ptr(1), pr.ptr(2),
               pr.d_mask.data(), pr.d_bias.get(), drop, nullptr);
  attn.backward(pr.grad(0), pr.grad(1), pr.grad(2), work.get(), pr.d_dout.get(), probs.get(),
                pr.ptr(0), pr.ptr(1), pr.ptr(2), drop, nullptr);
  pr.reference(drop);
  pr.expect_matches_reference();
}

TYPED_TEST(Attention, UnfusedMatchesReference) {
  for (auto layout : {xk::QkvLayout::bshd, xk::QkvLayout::sbhd}) {
    check_unfused<TypeParam>({2, 3, 64, 64, layout, true, false, false, 0.f});
    check_unfused<TypeParam>({3, 2, 64, 32, layout, false, true, false, 0.1f});
    check_unfused<TypeParam>({2, 2, 128, 64, layout, true, false, true, 0.2f});
    check_unfused<TypeParam>({1, 4, 40, 16, layout, false, false, false, 0.f});
  }
}

template <class T>
std::unique_ptr<xk::CudnnAttention> make_cudnn(const xk::AttentionDesc& d) {
  try {
    return std::make_unique<xk::CudnnAttention>(d);
  } catch (const xfbench::Unsupported& e) {
    ADD_FAILURE() << "cuDNN SDPA unsupported on this GPU: " << e.what();
    return nullptr;
  }
}

template <class T>
void check_cudnn(const Case& c) {
  SCOPED_TRACE(c.str());
  Problem<T> pr(c);
  auto attn = make_cudnn<T>(pr.desc);
  if (!attn) return;
  xfbench::DeviceBuffer<char> ws(std::max<std::size_t>(attn->workspace_bytes(), 1));
  xfbench::DeviceBuffer<float> stats(attn->stats_elements());
  attn->forward(pr.o.get(), stats.data(), pr.ptr(0), pr.ptr(1), pr.ptr(2), pr.d_lens.data(),
                pr.d_bias.get(), {}, ws.data(), nullptr);
  attn->backward(pr.grad(0), pr.grad(1), pr.grad(2), pr.d_dout.get(), pr.o.get(), stats.data(),
                 pr.ptr(0), pr.ptr(1), pr.ptr(2), pr.d_lens.data(), pr.d_bias.get(), {}, ws.data(),
                 nullptr);
  pr.reference({});
  pr.expect_matches_reference();
}

TYPED_TEST(Attention, CudnnMatchesReference) {
  for (auto layout : {xk::QkvLayout::bshd, xk::QkvLayout::sbhd}) {
    check_cudnn<TypeParam>({2, 3, 64, 64, layout, true, false, false, 0.f});
    check_cudnn<TypeParam>({3, 2, 128, 64, layout, false, true, false, 0.f});
    check_cudnn<TypeParam>({2, 2, 128, 64, layout, false, false, true, 0.f});
    check_cudnn<TypeParam>({2, 2, 64, 128, layout, true, false, false, 0.f});
  }
}

// cuDNN dropout: same (seed, offset) gives the same output, another seed another one, and the
// output moves off the no-dropout one by the amount dropout implies (not 0, not everything).
TYPED_TEST(Attention, CudnnDropoutIsSeeded) {
  using T = TypeParam;
  const Case c{2, 4, 128, 64, xk::QkvLayout::bshd, false, false, false, 0.1f};
  Problem<T> pr(c);
  auto attn = make_cudnn<T>(pr.desc);
  if (!attn) return;
  xk::AttentionDesc d0 = pr.desc;
  d0.dropout = 0.f;
  auto plain = make_cudnn<T>(d0);
  xfbench::DeviceBuffer<char> ws(
      std::max<std::size_t>(std::max(attn->workspace_bytes(), plain->workspace_bytes()), 1));
  xfbench::DeviceBuffer<float> stats(attn->stats_elements());
  auto run = [&](xk::CudnnAttention& a, xk::Dropout drop) {
    a.forward(pr.o.get(), stats.data(), pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr, nullptr, drop,
              ws.data(), nullptr);
    return pr.o.host();
  };
  const auto a1 = run(*attn, {0.1f, 7, 0}), a2 = run(*attn, {0.1f, 7, 0}),
             b = run(*attn, {0.1f, 8, 0}), ref = run(*plain, {});
  EXPECT_EQ(a1, a2);
  EXPECT_NE(a1, b);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    num += (a1[i] - ref[i]) * (a1[i] - ref[i]), den += ref[i] * ref[i];
  const double rel = std::sqrt(num / den);
  EXPECT_GT(rel, 0.01);
  EXPECT_LT(rel, 1.0);
}

// With a bias, the backward's bias gradient too (its diagonal sums, against float64), and it is
// the same bit for bit when run again.
template <class T>
void check_flash(const Case& c, xk::FlashKernel kernel) {
  SCOPED_TRACE(c.str());
  Problem<T> pr(c);
  xk::FlashAttention attn(pr.desc, kernel);
  SCOPED_TRACE(attn.uses_wgmma() ? "wgmma" : "mma.sync");
  const xk::Dropout drop{c.p, 11, 3};
  const void* bias = c.bias ? pr.d_bias.get() : nullptr;
  xfbench::DeviceBuffer<float> lse(attn.stats_elements()), scratch(attn.scratch_elements());
  Dev<float> dbias(std::max<std::size_t>(attn.bias_grad_elements(), 1));  // poisoned
  xfbench::DeviceBuffer<char> keep(std::max<std::size_t>(attn.keep_bytes(), 1));
  xfbench::poison(keep.data(), keep.bytes(), nullptr);  // bits the forward skips stay poisoned
  // Saved keep bits on one layout, drawn again by the backward on the other: both paths tested.
  const bool save_bits = pr.layout == xk::QkvLayout::bshd;
  const xk::FlashSaved saved{lse.data(), save_bits ? keep.data() : nullptr};
  attn.forward(pr.o.get(), saved, pr.ptr(0), pr.ptr(1), pr.ptr(2), pr.d_lens.data(), bias, drop,
               nullptr);
  pr.reference(drop);
  if (!attn.has_backward()) {
    const auto& d = pr.desc;
    EXPECT_TRUE(
        close_scaled<T>("O", gather(pr.o.host(), 0, d.o, d.B, d.NH, d.Sq, d.HD), pr.r_o, 4));
    return;
  }
  auto backward = [&] {
    attn.backward(pr.grad(0), pr.grad(1), pr.grad(2), c.bias ? dbias.get() : nullptr,
                  scratch.data(), pr.d_dout.get(), pr.o.get(), saved, pr.ptr(0), pr.ptr(1),
                  pr.ptr(2), bias, drop, nullptr);
  };
  backward();
  pr.expect_matches_reference();
  if (!c.bias) return;
  const auto first = dbias.host();
  EXPECT_TRUE(close_scaled<T>("dbias diagonals", first, pr.bias_grad_diagonals(drop), 8));
  backward();
  EXPECT_EQ(dbias.host(), first);
}

// The forward (and, where it runs, the backward: Hopper, no padding mask) against float64 with the
// exact Philox mask (the unfused backend's), including a query count that leaves the last 128-row
// block half empty, several key tiles, padding (key lengths 251, 227, 203, 179 of 256: partial
// tiles, and a skipped one) and causal masks; both kernels (on a Hopper GPU `best` is the wgmma
// one).
TYPED_TEST(Attention, FlashForwardMatchesReference) {
  for (auto kernel : {xk::FlashKernel::best, xk::FlashKernel::mma})
    for (auto layout : {xk::QkvLayout::bshd, xk::QkvLayout::sbhd}) {
      check_flash<TypeParam>({2, 3, 64, 64, layout, false, false, false, 0.f}, kernel);
      check_flash<TypeParam>({2, 2, 192, 64, layout, false, false, false, 0.1f}, kernel);
      check_flash<TypeParam>({1, 2, 256, 64, layout, false, false, false, 0.3f}, kernel);
      check_flash<TypeParam>({4, 2, 256, 64, layout, true, false, false, 0.1f}, kernel);
      check_flash<TypeParam>({2, 2, 256, 64, layout, false, true, false, 0.1f}, kernel);
      check_flash<TypeParam>({1, 3, 128, 64, layout, false, true, false, 0.f}, kernel);
    }
}

// A score bias (T5's relative position bias, here random), forward and backward, against float64
// with the exact Philox mask: T5's unscaled scores and the default scale, one to four key tiles
// (the diagonal sums carried between query tiles), B·NH = 75, the causal mask (T5's decoder),
// dropout on and off, and the padding mask (forward only: the backward does not take it). The
// mma.sync forward with the bias from global memory too.
TYPED_TEST(Attention, FlashBiasMatchesReference) {
  for (auto layout : {xk::QkvLayout::bshd, xk::QkvLayout::sbhd}) {
    check_flash<TypeParam>({2, 3, 64, 64, layout, false, false, true, 0.f}, xk::FlashKernel::best);
    check_flash<TypeParam>({2, 2, 192, 64, layout, false, false, true, 0.1f, 1.f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({1, 3, 256, 64, layout, false, true, true, 0.1f, 1.f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({3, 25, 128, 64, layout, false, true, true, 0.f}, xk::FlashKernel::best);
    check_flash<TypeParam>({2, 2, 256, 64, layout, false, false, true, 0.2f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({4, 2, 256, 64, layout, true, false, true, 0.1f, 1.f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({2, 2, 192, 64, layout, false, true, true, 0.1f, 1.f},
                           xk::FlashKernel::mma);
    check_flash<TypeParam>({4, 2, 256, 64, layout, true, false, true, 0.f}, xk::FlashKernel::mma);
  }
}

// T5-large's attention (16 heads, seq 512, scale 1, dropout 0.1) with its bias: the flash and
// unfused forwards agree (same Philox mask), and the bias moves the output.
TYPED_TEST(Attention, FlashBiasAgreesWithUnfused) {
  using T = TypeParam;
  const Case c{2, 16, 512, 64, xk::QkvLayout::bshd, false, false, true, 0.1f, 1.f};
  Problem<T> pr(c);
  xk::FlashAttention flash(pr.desc);
  xk::UnfusedAttention unfused(pr.desc);
  Dev<T> probs(unfused.probs_elements()), work(unfused.probs_elements()), o2(pr.o_n);
  const xk::Dropout drop{0.1f, 4321, 9};
  flash.forward(pr.o.get(), {}, pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr, pr.d_bias.get(), drop,
                nullptr);
  unfused.forward(o2.get(), probs.get(), work.get(), pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr,
                  pr.d_bias.get(), drop, nullptr);
  const auto a = pr.o.host();
  EXPECT_TRUE(close_scaled<T>("O flash vs unfused", a, o2.host(), 8));
  const Dev<T> other_bias(random_values<T>(pr.bias.size(), -1, 1, 33));
  flash.forward(pr.o.get(), {}, pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr, other_bias.get(), drop,
                nullptr);
  EXPECT_NE(pr.o.host(), a);
}

bool flash_backward_here() {
  auto d = xk::self_attention_desc(xk::Precision::fp16, 1, 1, 64, 64, xk::QkvLayout::bshd);
  d.causal = true;
  return xk::FlashAttention(d).has_backward();
}

// The causal backward against float64 with the exact mask, keep bits saved (bshd) and drawn
// again (sbhd): a single tile (S = 64), the diagonal inside 128-row forward blocks with 25 heads
// (B·NH = 75 and 50, no multiple of an SM count), many tiles (S = 512), no dropout, and 550
// heads of one tile (more than the tail of BlockOrder on an H100: heads one after the other too).
TYPED_TEST(Attention, FlashCausalBackwardMatchesReference) {
  if (!flash_backward_here()) GTEST_SKIP() << "the flash backward needs an sm_90a build on Hopper";
  for (auto layout : {xk::QkvLayout::bshd, xk::QkvLayout::sbhd}) {
    check_flash<TypeParam>({3, 1, 64, 64, layout, false, true, false, 0.1f}, xk::FlashKernel::best);
    check_flash<TypeParam>({3, 25, 128, 64, layout, false, true, false, 0.1f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({2, 25, 192, 64, layout, false, true, false, 0.2f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({1, 3, 512, 64, layout, false, true, false, 0.1f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({2, 2, 256, 64, layout, false, true, false, 0.f}, xk::FlashKernel::best);
    check_flash<TypeParam>({22, 25, 64, 64, layout, false, true, false, 0.1f},
                           xk::FlashKernel::best);
  }
}

// Causality, exactly: a query sees no later key, so new queries, keys, values and output
// gradients at positions >= cut leave O and dQ of the rows before it unchanged, and new queries
// and output gradients before the cut leave O, dK and dV from the cut on unchanged (hidden scores
// add exact zeros). cut = 100 falls inside a 64-row tile and a 128-row forward block.
TYPED_TEST(Attention, FlashCausalIgnoresLaterPositions) {
  using T = TypeParam;
  if (!flash_backward_here()) GTEST_SKIP() << "the flash backward needs an sm_90a build on Hopper";
  const int cut = 100;
  const Case c{2, 3, 256, 64, xk::QkvLayout::bshd, false, true, false, 0.1f};
  Problem<T> pr(c);
  const auto& d = pr.desc;
  const std::int64_t H = std::int64_t(d.NH) * d.HD;
  xk::FlashAttention attn(d);
  const xk::Dropout drop{c.p, 21, 4};
  xfbench::DeviceBuffer<float> lse(attn.stats_elements()), delta(attn.stats_elements());
  xfbench::DeviceBuffer<char> keep(attn.keep_bytes());
  struct Result {
    std::vector<double> o, dq, dk, dv;  // dense [B, NH, S, HD]
  };
  auto run = [&] {
    const Dev<T> qkv(pr.qkv), dout(pr.dout);
    const xk::FlashSaved saved{lse.data(), keep.data()};
    const T* in = qkv.get();
    attn.forward(pr.o.get(), saved, in + pr.off(0), in + pr.off(1), in + pr.off(2), nullptr, drop,
                 nullptr);
    attn.backward(pr.grad(0), pr.grad(1), pr.grad(2), delta.data(), dout.get(), pr.o.get(), saved,
                  in + pr.off(0), in + pr.off(1), in + pr.off(2), drop, nullptr);
    const auto g = pr.dqkv.host();
    return Result{gather(pr.o.host(), 0, d.o, d.B, d.NH, d.Sq, d.HD),
                  gather(g, pr.off(0), d.q, d.B, d.NH, d.Sq, d.HD),
                  gather(g, pr.off(1), d.k, d.B, d.NH, d.Sk, d.HD),
                  gather(g, pr.off(2), d.v, d.B, d.NH, d.Sk, d.HD)};
  };
  // New random values for positions [from, to) of the packed tokens' first `width` elements
  // (bshd: a token's row is [q | k | v], width H for Q alone, 3H for all three; dO rows are H).
  std::uint64_t seed = 40;
  auto redraw = [&](std::vector<double>& x, std::int64_t row, std::int64_t width, int from,
                    int to) {
    const auto fresh = random_values<T>(x.size(), -1, 1, ++seed);
    for (int b = 0; b < d.B; ++b)
      for (int i = from; i < to; ++i)
        for (std::int64_t e = 0; e < width; ++e) {
          const std::size_t at = (std::size_t(b) * d.Sq + i) * row + e;
          x[at] = fresh[at];
        }
  };
  // Elements of dense [B, NH, S, HD] rows in [from, to) that differ between a and b.
  auto differing = [&](const std::vector<double>& a, const std::vector<double>& b, int from,
                       int to) {
    std::size_t n = 0;
    for (int bh = 0; bh < d.B * d.NH; ++bh)
      for (int i = from; i < to; ++i)
        for (int e = 0; e < d.HD; ++e) {
          const std::size_t at = (std::size_t(bh) * d.Sq + i) * d.HD + e;
          n += a[at] != b[at];
        }
    return n;
  };
  const Result base = run();
  const std::size_t before = std::size_t(d.B) * d.NH * cut * d.HD;
  const std::size_t after = std::size_t(d.B) * d.NH * (d.Sq - cut) * d.HD;

  redraw(pr.qkv, 3 * H, 3 * H, cut, d.Sq);  // later queries, keys and values
  redraw(pr.dout, H, H, cut, d.Sq);
  const Result later = run();
  EXPECT_EQ(differing(base.o, later.o, 0, cut), 0u);
  EXPECT_EQ(differing(base.dq, later.dq, 0, cut), 0u);
  // The change reaches what may see it: most later outputs, and gradients of earlier keys.
  EXPECT_GT(differing(base.o, later.o, cut, d.Sq), after / 2);
  EXPECT_GT(differing(base.dk, later.dk, 0, cut), before / 2);
  EXPECT_GT(differing(base.dv, later.dv, 0, cut), before / 2);

  redraw(pr.qkv, 3 * H, H, 0, cut);  // earlier queries
  redraw(pr.dout, H, H, 0, cut);
  const Result earlier = run();
  EXPECT_EQ(differing(later.o, earlier.o, cut, d.Sq), 0u);
  EXPECT_EQ(differing(later.dk, earlier.dk, cut, d.Sq), 0u);
  EXPECT_EQ(differing(later.dv, earlier.dv, cut, d.Sq), 0u);
  EXPECT_GT(differing(later.dq, earlier.dq, 0, cut), before / 2);
  EXPECT_GT(differing(later.dk, earlier.dk, 0, cut), before / 2);
}

// Every block gets a distinct (rank, head): heads one after the other, ranks in order, then the
// tail heads together with every head's rank r before any head's r + 1 (a tail of 25 of 75 heads,
// none, all of them, a single head).
TEST(Attention, FlashBlockOrderCoversEveryItemOnce) {
  using xk::detail::BlockOrder;
  for (const BlockOrder& order :
       {BlockOrder{32, 75, 25}, BlockOrder{8, 75, 0}, BlockOrder{8, 75, 75}, BlockOrder{2, 1, 1}}) {
    SCOPED_TRACE(testing::Message()
                 << "items " << order.items << " heads " << order.heads << " tail " << order.tail);
    std::vector<int> seen(std::size_t(order.blocks()), 0);
    const int first_tail_block = (order.heads - order.tail) * order.items;
    int last_rank = -1;
    for (int block = 0; block < order.blocks(); ++block) {
      int rank = -1, head = -1;
      order.locate(block, rank, head);
      ASSERT_TRUE(rank >= 0 && rank < order.items && head >= 0 && head < order.heads);
      ++seen[std::size_t(head) * order.items + rank];
      if (block < first_tail_block) {
        EXPECT_EQ(head, block / order.items);
        EXPECT_EQ(rank, block % order.items);
      } else {
        EXPECT_GE(head, order.heads - order.tail);
        if (block > first_tail_block) EXPECT_GE(rank, last_rank);
      }
      last_rank = rank;
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), order.blocks());
  }
}

// Same Dropout, same mask: the flash and unfused forwards agree with dropout on (bert-large heads).
TYPED_TEST(Attention, FlashAgreesWithUnfusedUnderDropout) {
  using T = TypeParam;
  const Case c{2, 16, 512, 64, xk::QkvLayout::bshd, false, false, false, 0.1f};
  Problem<T> pr(c);
  xk::FlashAttention flash(pr.desc), flash_mma(pr.desc, xk::FlashKernel::mma);
  xk::UnfusedAttention unfused(pr.desc);
  Dev<T> probs(unfused.probs_elements()), work(unfused.probs_elements()), o2(pr.o_n);
  const xk::Dropout drop{0.1f, 1234, 77};
  flash.forward(pr.o.get(), {}, pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr, drop, nullptr);
  unfused.forward(o2.get(), probs.get(), work.get(), pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr,
                  nullptr, drop, nullptr);
  const auto a = pr.o.host(), b = o2.host();
  EXPECT_TRUE(close_scaled<T>("O flash vs unfused", a, b, 8));  // each within 4 eps of exact
  flash_mma.forward(o2.get(), {}, pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr, drop, nullptr);
  EXPECT_TRUE(close_scaled<T>("O flash wgmma vs mma.sync", a, o2.host(), 8));
  // A different seed must change the output (the mask is really applied).
  flash.forward(pr.o.get(), {}, pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr, {0.1f, 1235, 77},
                nullptr);
  EXPECT_NE(pr.o.host(), a);
}

// Forward only (no training): the same O from one score-sized write less; P is not kept (the
// buffer keeps the raw scores), and a backward is refused.
TYPED_TEST(Attention, UnfusedForwardOnlyGivesTheSameOutput) {
  using T = TypeParam;
  const Case c{2, 4, 256, 64, xk::QkvLayout::bshd, false, true, false, 0.1f};  // causal: GPT-2
  Problem<T> pr(c);
  xk::UnfusedAttention train(pr.desc), infer(pr.desc, false);
  Dev<T> probs(train.probs_elements()), work(train.probs_elements()), o2(pr.o_n);
  Dev<T> probs2(train.probs_elements());
  const xk::Dropout drop{0.1f, 99, 5};
  train.forward(pr.o.get(), probs.get(), work.get(), pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr,
                nullptr, drop, nullptr);
  infer.forward(o2.get(), probs2.get(), work.get(), pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr,
                nullptr, drop, nullptr);
  EXPECT_EQ(pr.o.host(), o2.host());       // bit for bit
  EXPECT_NE(probs.host(), probs2.host());  // P was not written: the scores are still there
  EXPECT_THROW(infer.backward(o2.get(), o2.get(), o2.get(), work.get(), o2.get(), probs2.get(),
                              pr.ptr(0), pr.ptr(1), pr.ptr(2), drop, nullptr),
               xfbench::InvalidArgument);
}

TEST(Attention, FlashRejectsWhatItCannotRun) {
  auto d = xk::self_attention_desc(xk::Precision::fp16, 2, 4, 128, 64, xk::QkvLayout::bshd);
  auto with = [&](auto edit) {
    auto e = d;
    edit(e);
    return e;
  };
  EXPECT_THROW(xk::FlashAttention(with([](auto& e) { e.HD = 128; })), xfbench::Unsupported);
  EXPECT_THROW(xk::FlashAttention(with([](auto& e) { e.Sq = e.Sk = 100; })), xfbench::Unsupported);
  EXPECT_THROW(xk::FlashAttention(with([](auto& e) { e.dropout = 1.f; })),
               xfbench::InvalidArgument);
  EXPECT_NO_THROW(xk::FlashAttention{d});
  // What a caller allocates for training: statistics per row, one keep bit per score.
  auto dropped = with([](auto& e) { e.dropout = 0.1f; });
  EXPECT_EQ(xk::FlashAttention(dropped).stats_elements(), 2u * 4 * 128);
  EXPECT_EQ(xk::FlashAttention(dropped).keep_bytes(), 2u * 4 * 128 * 128 / 8);
  EXPECT_EQ(xk::FlashAttention(d).keep_bytes(), 0u);
  // The backward takes the causal mask (on Hopper), not the padding mask.
  const xk::FlashAttention causal(with([](auto& e) { e.causal = true; }));
  EXPECT_EQ(causal.has_backward(), causal.uses_wgmma());
  EXPECT_FALSE(xk::FlashAttention(with([](auto& e) { e.padding_mask = true; })).has_backward());
  // A bias: its gradient's diagonal sums, per-block sums in the scratch; the bias pointer must
  // come exactly with desc.bias (checked before any launch).
  const xk::FlashAttention biased(with([](auto& e) { e.bias = true; }));
  EXPECT_EQ(biased.bias_grad_elements(), 4u * (128 + 128 - 1));
  EXPECT_EQ(biased.scratch_elements(), 2u * 4 * 128 + 2u * 4 * 2 * 3 * 68);
  EXPECT_EQ(xk::FlashAttention(d).scratch_elements(), 2u * 4 * 128);
  EXPECT_EQ(xk::FlashAttention(d).bias_grad_elements(), 0u);
  alignas(16) static char tensor[16];  // never read: the checks come first
  void* p = tensor;
  EXPECT_THROW(biased.forward(p, {}, p, p, p, nullptr, {}, nullptr), xfbench::InvalidArgument);
  EXPECT_THROW(xk::FlashAttention(d).forward(p, {}, p, p, p, nullptr, p, {}, nullptr),
               xfbench::InvalidArgument);
}

TEST(AttentionDesc, LayoutsAndFlops) {
  auto d = xk::self_attention_desc(xk::Precision::fp16, 4, 16, 512, 64, xk::QkvLayout::bshd);
  EXPECT_EQ(d.q.s, 3 * 1024);
  EXPECT_EQ(d.q.h, 64);
  EXPECT_EQ(d.q.b, 512 * 3 * 1024);
  EXPECT_EQ(d.o.s, 1024);
  EXPECT_EQ(xk::qkv_offset(xk::QkvLayout::bshd, 2, 16, 64), 2048);
  auto m = xk::self_attention_desc(xk::Precision::fp16, 4, 16, 512, 64, xk::QkvLayout::sbhd);
  EXPECT_EQ(m.q.h, 3 * 64);
  EXPECT_EQ(m.q.b, 16 * 3 * 64);
  EXPECT_EQ(m.q.s, 4 * 3 * 1024);
  EXPECT_EQ(m.o.b, 1024);
  EXPECT_EQ(xk::qkv_offset(xk::QkvLayout::sbhd, 1, 16, 64), 64);
  EXPECT_FLOAT_EQ(m.softmax_scale(), 0.125f);
  // The seeds' 4·b·s²·h for the two attention products (h = NH·HD).
  EXPECT_DOUBLE_EQ(xk::attention_core_flops(d), 4.0 * 4 * 512.0 * 512 * 1024);
}

}  // namespace
