// Attention forward/backward, all backends, on packed QKV in both layouts, against the float64
// reference: padding mask, causal mask, score bias and (unfused) dropout with the exact mask.
// cuDNN draws its own dropout mask, so its dropout is checked for determinism and effect only;
// the flash kernels use the unfused backend's mask and are checked against it exactly.
//
// Grouped-query attention (fewer K/V heads, bshd only) on every backend too, dK and dV landing
// in the packed dQKV as the sums over each K/V head's query heads.
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
  int NKV = 0;        // K/V heads (grouped-query, bshd); 0: NH
  int kv_heads() const { return NKV ? NKV : NH; }
  std::string str() const {
    return "B=" + std::to_string(B) + " NH=" + std::to_string(NH) + " S=" + std::to_string(S) +
           " HD=" + std::to_string(HD) + " " + xk::to_string(layout) +
           " pad=" + std::to_string(padding) + " causal=" + std::to_string(causal) +
           " bias=" + std::to_string(bias) + " p=" + std::to_string(p) +
           " scale=" + std::to_string(scale) + " NKV=" + std::to_string(kv_heads());
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
      : desc(xk::self_attention_desc(precision_of<T>(), c.B, c.NH, c.S, c.HD, c.layout, c.NKV)),
        layout(c.layout),
        qkv_n(std::size_t(c.B) * c.S * (c.NH + 2 * c.kv_heads()) * c.HD),
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

  std::int64_t off(int which) const {
    return xk::qkv_offset(layout, which, desc.NH, desc.HD, desc.NKV);
  }
  // Dense [B, NKV, S, HD] K or V (which 1, 2) of a packed tensor.
  std::vector<double> kv(const std::vector<double>& packed, int which) const {
    const auto& d = desc;
    return gather(packed, off(which), which == 1 ? d.k : d.v, d.B, d.kv_heads(), d.Sk, d.HD);
  }
  const T* ptr(int which) const { return d_qkv.get() + off(which); }
  T* grad(int which) const { return dqkv.get() + off(which); }

  void reference(xk::Dropout drop) {
    const auto& d = desc;
    auto q = gather(qkv, off(0), d.q, d.B, d.NH, d.Sq, d.HD);
    auto k = kv(qkv, 1), v = kv(qkv, 2);
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
                            drop,
                            d.kv_heads()};
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
    EXPECT_TRUE(close_scaled<T>("dK", kv(gh, 1), r_dk, 8));
    EXPECT_TRUE(close_scaled<T>("dV", kv(gh, 2), r_dv, 8));
  }

  // The bias gradient summed over the batch and along each diagonal j - i ([NH, Sq + Sk - 1], as
  // FlashAttention returns it) in float64: the reference softmax's backward with respect to the
  // biased scores (scale 1 there), no padding mask.
  std::vector<double> bias_grad_diagonals(xk::Dropout drop) const {
    const auto& d = desc;
    const auto q = gather(qkv, off(0), d.q, d.B, d.NH, d.Sq, d.HD);
    const auto k = kv(qkv, 1), v = kv(qkv, 2);
    const auto dO = gather(dout, 0, d.o, d.B, d.NH, d.Sq, d.HD);
    const std::size_t n = std::size_t(d.B) * d.NH * d.Sq * d.Sk;
    std::vector<double> scores(n), dprobs(n), probs(n), dscores(n);
    for (int bh = 0; bh < d.B * d.NH; ++bh)
      for (int i = 0; i < d.Sq; ++i)
        for (int j = 0; j < d.Sk; ++j) {
          const std::size_t kvh = std::size_t(bh / d.NH) * d.kv_heads() + bh % d.NH / d.group();
          double s = 0, g = 0;
          for (int e = 0; e < d.HD; ++e) {
            s += q[(std::size_t(bh) * d.Sq + i) * d.HD + e] * k[(kvh * d.Sk + j) * d.HD + e];
            g += dO[(std::size_t(bh) * d.Sq + i) * d.HD + e] * v[(kvh * d.Sk + j) * d.HD + e];
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

// Grouped-query (bshd: [q heads | k heads | v heads] rows): 4 query heads on 2 K/V heads and on
// 1, causal and not, 3 on 2 with padding, bias and dropout; B above and below NKV (the
// backend's two ways of looping over a packed layout).
TYPED_TEST(Attention, UnfusedGqaMatchesReference) {
  const auto bshd = xk::QkvLayout::bshd;
  check_unfused<TypeParam>({2, 4, 64, 64, bshd, false, false, false, 0.f, 0.f, 2});
  check_unfused<TypeParam>({2, 4, 64, 64, bshd, false, true, false, 0.f, 0.f, 1});
  check_unfused<TypeParam>({1, 4, 128, 32, bshd, false, true, false, 0.f, 0.f, 2});
  check_unfused<TypeParam>({3, 6, 64, 64, bshd, true, false, true, 0.1f, 0.f, 2});
}

// Grouped-query on dense per-head tensors (Q, O [B, NH, S, HD], K, V [B, NKV, S, HD]): there each
// product is one strided-batched GEMM per member of a group.
TYPED_TEST(Attention, UnfusedGqaDenseHeads) {
  using T = TypeParam;
  const int B = 2, NH = 6, NKV = 2, S = 64, HD = 32;
  xk::AttentionDesc d;
  d.precision = precision_of<T>();
  d.B = B, d.NH = NH, d.NKV = NKV, d.Sq = d.Sk = S, d.HD = HD;
  d.q = d.o = {std::int64_t(NH) * S * HD, std::int64_t(S) * HD, HD};
  d.k = d.v = {std::int64_t(NKV) * S * HD, std::int64_t(S) * HD, HD};
  d.causal = true;
  const std::size_t qn = std::size_t(B) * NH * S * HD, kn = std::size_t(B) * NKV * S * HD;
  const auto q = random_values<T>(qn, -1, 1, 11), k = random_values<T>(kn, -1, 1, 12),
             v = random_values<T>(kn, -1, 1, 13), dout = random_values<T>(qn, -1, 1, 14);
  const Dev<T> q_d(q), k_d(k), v_d(v), dout_d(dout);
  Dev<T> o(qn), dq(qn), dk(kn), dv(kn);
  xk::UnfusedAttention attn(d);
  Dev<T> probs(attn.probs_elements()), work(attn.probs_elements());
  attn.forward(o.get(), probs.get(), work.get(), q_d.get(), k_d.get(), v_d.get(), nullptr, nullptr,
               {}, nullptr);
  attn.backward(dq.get(), dk.get(), dv.get(), work.get(), dout_d.get(), probs.get(), q_d.get(),
                k_d.get(), v_d.get(), {}, nullptr);
  std::vector<double> r_o(qn), r_dq(qn), r_dk(kn), r_dv(kn);
  const xk::ref::AttentionRef a{B,    NH,      S,       S,  HD, d.softmax_scale(),
                                true, nullptr, nullptr, {}, NKV};
  xk::ref::attention_forward(r_o.data(), q.data(), k.data(), v.data(), a);
  xk::ref::attention_backward(r_dq.data(), r_dk.data(), r_dv.data(), dout.data(), q.data(),
                              k.data(), v.data(), a);
  EXPECT_TRUE(close_scaled<T>("O", o.host(), r_o, 4));
  EXPECT_TRUE(close_scaled<T>("dQ", dq.host(), r_dq, 8));
  EXPECT_TRUE(close_scaled<T>("dK", dk.host(), r_dk, 8));
  EXPECT_TRUE(close_scaled<T>("dV", dv.host(), r_dv, 8));
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

// Grouped-query through cuDNN's own GQA (K, V, dK, dV with NKV heads).
TYPED_TEST(Attention, CudnnGqaMatchesReference) {
  const auto bshd = xk::QkvLayout::bshd;
  check_cudnn<TypeParam>({2, 4, 128, 64, bshd, false, false, false, 0.f, 0.f, 2});
  check_cudnn<TypeParam>({2, 4, 128, 64, bshd, false, true, false, 0.f, 0.f, 1});
  check_cudnn<TypeParam>({1, 8, 64, 128, bshd, false, true, false, 0.f, 0.f, 2});
  check_cudnn<TypeParam>({2, 6, 64, 64, bshd, true, false, false, 0.f, 0.f, 3});
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
  if (!c.bias && !c.NKV) return;
  // Run again: the same gradients bit for bit (grouped dK, dV are fixed-order sums too).
  const auto grads = pr.dqkv.host();
  const auto first = dbias.host();
  if (c.bias)
    EXPECT_TRUE(close_scaled<T>("dbias diagonals", first, pr.bias_grad_diagonals(drop), 8));
  backward();
  if (c.bias) EXPECT_EQ(dbias.host(), first);
  EXPECT_EQ(pr.dqkv.host(), grads);
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

// Grouped-query, forward (both kernels) and, where it runs, the backward, whose dK/dV blocks run
// through the query tiles of each head of their group (the double-buffered loads crossing from
// one head to the next): 4 query heads on 2 and on 1 K/V heads, causal and not, several query
// tiles, dropout with the exact mask, the padding mask (forward), a bias and its gradient, and 280
// K/V heads of one tile (past the tail of BlockOrder on an H100). Gradients are checked for being
// the same bit for bit when run again.
TYPED_TEST(Attention, FlashGqaMatchesReference) {
  const auto bshd = xk::QkvLayout::bshd;
  for (auto kernel : {xk::FlashKernel::best, xk::FlashKernel::mma}) {
    check_flash<TypeParam>({2, 4, 192, 64, bshd, false, false, false, 0.f, 0.f, 2}, kernel);
    check_flash<TypeParam>({1, 4, 256, 64, bshd, false, true, false, 0.f, 0.f, 1}, kernel);
    check_flash<TypeParam>({2, 4, 128, 64, bshd, false, false, false, 0.f, 0.f, 1}, kernel);
    check_flash<TypeParam>({2, 8, 192, 64, bshd, false, true, false, 0.1f, 0.f, 2}, kernel);
    check_flash<TypeParam>({2, 4, 256, 64, bshd, true, false, false, 0.1f, 0.f, 2}, kernel);
  }
  check_flash<TypeParam>({2, 6, 192, 64, bshd, false, true, true, 0.1f, 1.f, 2},
                         xk::FlashKernel::best);
  check_flash<TypeParam>({2, 4, 128, 64, bshd, false, false, true, 0.f, 0.f, 2},
                         xk::FlashKernel::best);
  check_flash<TypeParam>({70, 8, 64, 64, bshd, false, true, false, 0.1f, 0.f, 4},
                         xk::FlashKernel::best);
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

// Grouped-query layouts: a bshd row is [NH q heads | NKV k heads | NKV v heads]; NKV 0 and NKV =
// NH are plain multi-head. Malformed groups and the sbhd layout with fewer K/V heads are refused
// by every backend before any GPU work.
TEST(AttentionDesc, GroupedQuery) {
  const auto bshd = xk::QkvLayout::bshd, sbhd = xk::QkvLayout::sbhd;
  auto d = xk::self_attention_desc(xk::Precision::bf16, 2, 8, 128, 64, bshd, 2);
  EXPECT_EQ(d.NKV, 2);
  EXPECT_EQ(d.kv_heads(), 2);
  EXPECT_EQ(d.group(), 4);
  EXPECT_EQ(d.q.s, (8 + 2 * 2) * 64);
  EXPECT_EQ(d.q.h, 64);
  EXPECT_EQ(d.q.b, 128 * (8 + 2 * 2) * 64);
  EXPECT_EQ(d.k.s, d.q.s);
  EXPECT_EQ(d.v.b, d.q.b);
  EXPECT_EQ(d.o.s, 8 * 64);
  EXPECT_EQ(d.o.b, 128 * 8 * 64);
  EXPECT_EQ(xk::qkv_offset(bshd, 0, 8, 64, 2), 0);
  EXPECT_EQ(xk::qkv_offset(bshd, 1, 8, 64, 2), 8 * 64);
  EXPECT_EQ(xk::qkv_offset(bshd, 2, 8, 64, 2), (8 + 2) * 64);
  EXPECT_EQ(xk::qkv_offset(bshd, 2, 8, 64, 1), (8 + 1) * 64);
  EXPECT_NO_THROW(xk::check_attention_desc(d));
  // NKV 0 and NH: the multi-head layout.
  for (int nkv : {0, 8}) {
    const auto m = xk::self_attention_desc(xk::Precision::bf16, 2, 8, 128, 64, bshd, nkv);
    EXPECT_EQ(m.kv_heads(), 8);
    EXPECT_EQ(m.group(), 1);
    EXPECT_EQ(m.q.s, 3 * 8 * 64);
    EXPECT_EQ(xk::qkv_offset(bshd, 2, 8, 64, nkv), 2 * 8 * 64);
  }
  EXPECT_NO_THROW(xk::self_attention_desc(xk::Precision::bf16, 2, 8, 128, 64, sbhd, 8));
  // NH % NKV != 0, NKV > NH, and grouped sbhd (q, k, v interleaved per head).
  EXPECT_THROW(xk::self_attention_desc(xk::Precision::bf16, 2, 8, 128, 64, bshd, 3),
               xfbench::InvalidArgument);
  EXPECT_THROW(xk::self_attention_desc(xk::Precision::bf16, 2, 8, 128, 64, bshd, 16),
               xfbench::InvalidArgument);
  EXPECT_THROW(xk::self_attention_desc(xk::Precision::bf16, 2, 8, 128, 64, sbhd, 2),
               xfbench::InvalidArgument);
  for (int nkv : {3, 16, -1}) {
    SCOPED_TRACE(nkv);
    auto bad = d;
    bad.NKV = nkv;
    EXPECT_THROW(xk::check_attention_desc(bad), xfbench::InvalidArgument);
    EXPECT_THROW(xk::UnfusedAttention{bad}, xfbench::InvalidArgument);
    EXPECT_THROW(xk::CudnnAttention{bad}, xfbench::InvalidArgument);
    EXPECT_THROW(xk::FlashAttention{bad}, xfbench::InvalidArgument);
  }
  // The flash kernels take it with no scratch beyond the per-query-row statistics.
  const xk::FlashAttention flash(d);
  EXPECT_EQ(flash.stats_elements(), 2u * 8 * 128);
  EXPECT_EQ(flash.scratch_elements(), 2u * 8 * 128);
}

// The float64 reference's grouped-query attention is HF's repeat_kv: multi-head attention on
// K and V with each K/V head repeated for its group's consecutive query heads, and dK, dV the
// sums of that attention's gradients over each group. Repeating them interleaved instead (query
// head h on K/V head h % NKV) gives other results, so the check tells the mappings apart.
TEST(AttentionReference, GroupedQueryIsRepeatKv) {
  const int B = 2, NH = 6, NKV = 2, G = NH / NKV, S = 8, HD = 4;
  const std::size_t head = std::size_t(S) * HD, qn = B * NH * head, kn = B * NKV * head;
  const auto q = random_values<float>(qn, -1, 1, 1), k = random_values<float>(kn, -1, 1, 2),
             v = random_values<float>(kn, -1, 1, 3), dout = random_values<float>(qn, -1, 1, 4);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal);
    const xk::Dropout drop{0.2f, 3, 4};
    xk::ref::AttentionRef a{B, NH, S, S, HD, 0.5, causal, nullptr, nullptr, drop, NKV};
    std::vector<double> o(qn), dq(qn), dk(kn), dv(kn);
    xk::ref::attention_forward(o.data(), q.data(), k.data(), v.data(), a);
    xk::ref::attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(),
                                v.data(), a);
    // Multi-head on repeated K/V; kv_head(b, h) picks the K/V head of query head h.
    auto repeated = [&](auto kv_head, std::vector<double>& ro, std::vector<double>& rdq,
                        std::vector<double>& rdk, std::vector<double>& rdv) {
      std::vector<double> kr(qn), vr(qn), dkr(qn), dvr(qn);
      for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
          for (std::size_t e = 0; e < head; ++e) {
            kr[(b * NH + h) * head + e] = k[(b * NKV + kv_head(h)) * head + e];
            vr[(b * NH + h) * head + e] = v[(b * NKV + kv_head(h)) * head + e];
          }
      xk::ref::AttentionRef m = a;
      m.NKV = 0;
      ro.resize(qn), rdq.resize(qn);
      xk::ref::attention_forward(ro.data(), q.data(), kr.data(), vr.data(), m);
      xk::ref::attention_backward(rdq.data(), dkr.data(), dvr.data(), dout.data(), q.data(),
                                  kr.data(), vr.data(), m);
      rdk.assign(kn, 0.0), rdv.assign(kn, 0.0);
      for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
          for (std::size_t e = 0; e < head; ++e) {
            rdk[(b * NKV + kv_head(h)) * head + e] += dkr[(b * NH + h) * head + e];
            rdv[(b * NKV + kv_head(h)) * head + e] += dvr[(b * NH + h) * head + e];
          }
    };
    const Tol tight{1e-12, 1e-12};
    std::vector<double> ro, rdq, rdk, rdv;
    repeated([&](int h) { return h / G; }, ro, rdq, rdk, rdv);
    EXPECT_TRUE(close("O", o, ro, tight));
    EXPECT_TRUE(close("dQ", dq, rdq, tight));
    EXPECT_TRUE(close("dK", dk, rdk, tight));
    EXPECT_TRUE(close("dV", dv, rdv, tight));
    repeated([&](int h) { return h % NKV; }, ro, rdq, rdk, rdv);
    EXPECT_FALSE(close("O", o, ro, {1e-3, 1e-3}));
    EXPECT_FALSE(close("dK", dk, rdk, {1e-3, 1e-3}));
  }
}

}  // namespace
