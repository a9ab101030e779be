// Helpers of the attention tests (test_attention.cu, test_flash_attention.cu): the typed suite over
// fp16 and bf16, and one case's packed QKV on host and device with its float64 reference results.
//
// Tolerances (eps = 2^-11 fp16, 2^-8 bf16; P is rounded to storage before P·V, as in HF):
//   O           4 eps relative + 4 eps · max|ref| absolute
//   dQ, dK, dV  8 eps relative + 8 eps · max|ref| absolute
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/reference/reference.hpp"
#include "test_util.hpp"

namespace xk = xfbench::kernels;

namespace xftest {

// The typed suite Attention/0, /1 of both files: one fixture class for all its tests (gtest
// requires it), so not in a file's anonymous namespace.
template <class T>
class Attention : public GpuTest {};
using AttentionTypes = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(Attention, AttentionTypes);

template <class T>
xk::Precision precision_of() {
  return std::is_same<T, __half>::value ? xk::Precision::fp16 : xk::Precision::bf16;
}

// Dense [B, NH, S, HD] <-> a strided view at `base` of a packed host tensor.
inline std::vector<double> gather(const std::vector<double>& packed, std::int64_t base,
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

}  // namespace xftest
