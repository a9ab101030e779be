// Attention forward/backward on the unfused and cuDNN backends, on packed QKV in both layouts,
// against the float64 reference: padding mask, causal mask, score bias and (unfused) dropout with
// the exact mask. cuDNN draws its own dropout mask, so its dropout is checked for determinism and
// effect only.
//
// Grouped-query attention (fewer K/V heads, bshd only) on both backends too, dK and dV landing in
// the packed dQKV as the sums over each K/V head's query heads; the descriptor's layouts and
// checks, and the reference's grouped-query attention. Helpers and tolerances are in
// attention_test_util.hpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "attention_test_util.hpp"
#include "kernels/attention.hpp"
#include "kernels/reference/reference.hpp"
#include "test_util.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

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
