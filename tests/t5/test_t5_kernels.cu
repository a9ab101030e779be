// T5's GPU kernels against the float64 references (skipped without a GPU): the relative position
// bias and its table gradient (bitwise reproducible), the ReLU and gated-GELU FFN activations with
// their dropout, and the bias gradient of the unfused and cuDNN attention backward.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "kernels/activation.hpp"
#include "kernels/attention.hpp"
#include "kernels/reference/reference.hpp"
#include "kernels/relative_position.hpp"
#include "kernels/test_util.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

template <class T>
class T5Kernels : public GpuTest {};
using Types = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(T5Kernels, Types);

template <class T>
xk::Precision precision_of() {
  return std::is_same<T, __half>::value ? xk::Precision::fp16 : xk::Precision::bf16;
}

// The gather is exact; the table gradient (fp32 sums of T values, rounded to T) within 2 units of
// T's last place, and the same bits on every run; likewise from the sums along the diagonals.
TYPED_TEST(T5Kernels, RelativeBiasMatchesReference) {
  using T = TypeParam;
  const int heads = 3;
  for (bool bidirectional : {true, false}) {
    for (auto [sq, sk] : {std::pair{512, 512}, std::pair{64, 200}, std::pair{1, 328}}) {
      SCOPED_TRACE(std::to_string(sq) + "x" + std::to_string(sk) +
                   (bidirectional ? " bidirectional" : " causal"));
      xk::RelativePositionBias rpb(heads, sq, sk, bidirectional);
      const std::vector<double> table = random_values<T>(rpb.table_elements(), -1, 1, 1);
      const std::vector<double> dbias = random_values<T>(rpb.bias_elements(), -1, 1, 2);
      Dev<T> d_table(table), d_dbias(dbias), bias(rpb.bias_elements()),
          dtable(rpb.table_elements()), again(rpb.table_elements());
      xfbench::DeviceBuffer<char> scratch(rpb.scratch_bytes());
      rpb.forward(bias.get(), d_table.get(), nullptr);
      EXPECT_EQ(bias.host(), xk::t5_bias_reference(table, heads, sq, sk, bidirectional));
      rpb.backward(dtable.get(), d_dbias.get(), scratch.data(), nullptr);
      rpb.backward(again.get(), d_dbias.get(), scratch.data(), nullptr);
      const std::vector<double> got = dtable.host();
      EXPECT_TRUE(close("dtable", got,
                        xk::t5_bias_table_grad_reference(dbias, heads, sq, sk, bidirectional),
                        storage_tol<T>(2)));
      EXPECT_EQ(got, again.host());
      // From sums along the diagonals (flash attention's bias gradient), fp32 [heads, sq + sk - 1].
      std::vector<float> diagonals(std::size_t(heads) * (sq + sk - 1), 0.f);
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < sq; ++i)
          for (int j = 0; j < sk; ++j)
            diagonals[std::size_t(h) * (sq + sk - 1) + j - i + sq - 1] +=
                float(dbias[(std::size_t(h) * sq + i) * sk + j]);
      xfbench::DeviceBuffer<float> d_diagonals(diagonals.size());
      XF_CUDA_CHECK(cudaMemcpy(d_diagonals.data(), diagonals.data(), d_diagonals.bytes(),
                               cudaMemcpyHostToDevice));
      rpb.backward_from_diagonals(again.get(), d_diagonals.data(), nullptr);
      EXPECT_TRUE(close("dtable from diagonals", again.host(),
                        xk::t5_bias_table_grad_reference(dbias, heads, sq, sk, bidirectional),
                        storage_tol<T>(2)));
    }
  }
}

TEST(T5KernelsArgs, RelativeBiasRejectsBadShapes) {
  EXPECT_THROW(xk::RelativePositionBias(4, 64, 60, true), xfbench::InvalidArgument);  // sk % 8
  EXPECT_THROW(xk::RelativePositionBias(4, 8192, 8192, true), xfbench::InvalidArgument);
  EXPECT_THROW(xk::RelativePositionBias(4, 64, 64, true, 2), xfbench::InvalidArgument);
}

// act = dropout(relu(pre)), and the backward from act alone, element for element with the
// reference's Philox mask.
TYPED_TEST(T5Kernels, ReluDropoutMatchesReference) {
  using T = TypeParam;
  const std::size_t n = 4096 * 24;
  const xk::Dropout drop{0.1f, 11, 3};
  const xk::DropoutMask mask(drop);
  const std::vector<double> pre = random_values<T>(n, -1, 1, 4),
                            dact = random_values<T>(n, -1, 1, 5);
  std::vector<double> act(n), dpre(n);
  for (std::size_t i = 0; i < n; ++i) {
    const bool keep = mask.keep(i);
    act[i] = keep ? std::max(pre[i], 0.0) / (1.0 - drop.p) : 0.0;
    dpre[i] = keep && pre[i] > 0 ? dact[i] / (1.0 - drop.p) : 0.0;
  }
  Dev<T> d_pre(pre), d_dact(dact), d_act(n), d_dpre(n);
  xk::relu_dropout_forward(d_act.get(), d_pre.get(), n, drop, nullptr);
  xk::relu_dropout_backward(d_dpre.get(), d_dact.get(), d_act.get(), n, drop, nullptr);
  EXPECT_TRUE(close("act", d_act.host(), act, storage_tol<T>()));
  EXPECT_TRUE(close("dpre", d_dpre.host(), dpre, storage_tol<T>()));
}

// Gated FFN activations on a [N, 2C] product: gate columns first, then the linear ones (T5 v1.1's
// tanh GELU with dropout, Llama's SiLU).
TYPED_TEST(T5Kernels, GatedDropoutMatchesReference) {
  using T = TypeParam;
  const int N = 300, C = 264;
  for (xk::GateAct gate : {xk::GateAct::gelu_tanh, xk::GateAct::silu}) {
    for (float p : {0.f, 0.1f}) {
      SCOPED_TRACE(testing::Message() << "gate " << int(gate) << ", p " << p);
      const bool silu = gate == xk::GateAct::silu;
      auto f = [&](double x) { return silu ? xk::ref::silu(x) : xk::ref::gelu(x, xk::Gelu::tanh); };
      auto df = [&](double x) {
        return silu ? xk::ref::silu_grad(x) : xk::ref::gelu_grad(x, xk::Gelu::tanh);
      };
      const xk::Dropout drop{p, 7, 9};
      const xk::DropoutMask mask(drop);
      const std::vector<double> pre = random_values<T>(std::size_t(N) * 2 * C, -3, 3, 6),
                                dact = random_values<T>(std::size_t(N) * C, -1, 1, 7);
      std::vector<double> act(dact.size()), dpre(pre.size());
      for (int r = 0; r < N; ++r)
        for (int c = 0; c < C; ++c) {
          const std::size_t o = std::size_t(r) * C + c, g = std::size_t(r) * 2 * C + c;
          const double factor = mask.active() ? (mask.keep(o) ? 1.0 / (1.0 - p) : 0.0) : 1.0;
          const double x = pre[g], lin = pre[g + C], grad = dact[o] * factor;
          act[o] = f(x) * lin * factor;
          dpre[g] = grad * lin * df(x);
          dpre[g + C] = grad * f(x);
        }
      Dev<T> d_pre(pre), d_dact(dact), d_act(act.size()), d_dpre(pre.size());
      xk::gated_dropout_forward(d_act.get(), d_pre.get(), N, C, gate, drop, nullptr);
      xk::gated_dropout_backward(d_dpre.get(), d_dact.get(), d_pre.get(), N, C, gate, drop,
                                 nullptr);
      EXPECT_TRUE(close_scaled<T>("act", d_act.host(), act, 4));
      EXPECT_TRUE(close_scaled<T>("dpre", d_dpre.host(), dpre, 4));
    }
  }
}

// Self-attention on packed bshd QKV with a [NH, S, S] bias: dbias = Σ_b dS[b] of the unfused and
// cuDNN backward against the float64 reference (T5's unscaled scores, causal or not).
struct BiasCase {
  int B, NH, S;
  bool causal;
  float scale;  // 0: 1/sqrt(HD)
};

template <class T>
struct BiasProblem {
  xk::AttentionDesc desc;
  std::vector<double> qkv, dout, bias, r_dbias;
  Dev<T> d_qkv, d_dout, d_bias, o, dqkv, dbias;

  explicit BiasProblem(const BiasCase& c)
      : desc(xk::self_attention_desc(precision_of<T>(), c.B, c.NH, c.S, 64, xk::QkvLayout::bshd)),
        qkv(random_values<T>(std::size_t(c.B) * c.S * 3 * c.NH * 64, -0.5, 0.5, 1)),
        dout(random_values<T>(std::size_t(c.B) * c.S * c.NH * 64, -1, 1, 2)),
        bias(random_values<T>(std::size_t(c.NH) * c.S * c.S, -1, 1, 3)),
        d_qkv(qkv),
        d_dout(dout),
        d_bias(bias),
        o(dout.size()),
        dqkv(qkv.size()),
        dbias(bias.size()) {
    desc.causal = c.causal, desc.scale = c.scale, desc.bias = true, desc.bias_grad = true;
    // Dense [B, NH, S, 64] views of the packed tensors for the reference.
    auto dense = [&](const std::vector<double>& packed, int which, int width) {
      std::vector<double> out(std::size_t(c.B) * c.NH * c.S * 64);
      for (int b = 0; b < c.B; ++b)
        for (int s = 0; s < c.S; ++s)
          for (int h = 0; h < c.NH; ++h)
            for (int e = 0; e < 64; ++e)
              out[((std::size_t(b) * c.NH + h) * c.S + s) * 64 + e] =
                  packed[((std::size_t(b) * c.S + s) * width + which) * c.NH * 64 + h * 64 + e];
      return out;
    };
    const auto q = dense(qkv, 0, 3), k = dense(qkv, 1, 3), v = dense(qkv, 2, 3),
               dO = dense(dout, 0, 1);
    std::vector<double> dq(q.size()), dk(q.size()), dv(q.size());
    r_dbias.resize(bias.size());
    xk::ref::attention_backward(
        dq.data(), dk.data(), dv.data(), r_dbias.data(), dO.data(), q.data(), k.data(), v.data(),
        {c.B, c.NH, c.S, c.S, 64, desc.softmax_scale(), c.causal, nullptr, bias.data(), {}});
  }
  const T* part(int which) const {
    return d_qkv.get() + xk::qkv_offset(xk::QkvLayout::bshd, which, desc.NH, 64);
  }
  T* grad(int which) const {
    return dqkv.get() + xk::qkv_offset(xk::QkvLayout::bshd, which, desc.NH, 64);
  }
};

constexpr BiasCase kBiasCases[] = {
    {3, 2, 128, false, 1.f}, {2, 3, 64, true, 1.f}, {2, 2, 128, true, 0.f}};

TYPED_TEST(T5Kernels, UnfusedBiasGradientMatchesReference) {
  using T = TypeParam;
  for (const BiasCase& c : kBiasCases) {
    SCOPED_TRACE("B=" + std::to_string(c.B) + " S=" + std::to_string(c.S) +
                 " causal=" + std::to_string(c.causal));
    BiasProblem<T> pr(c);
    xk::UnfusedAttention attn(pr.desc);
    Dev<T> probs(attn.probs_elements()), work(attn.probs_elements());
    attn.forward(pr.o.get(), probs.get(), work.get(), pr.part(0), pr.part(1), pr.part(2), nullptr,
                 pr.d_bias.get(), {}, nullptr);
    attn.backward(pr.grad(0), pr.grad(1), pr.grad(2), pr.dbias.get(), work.get(), pr.d_dout.get(),
                  probs.get(), pr.part(0), pr.part(1), pr.part(2), {}, nullptr);
    EXPECT_TRUE(close_scaled<T>("dbias", pr.dbias.host(), pr.r_dbias, 8));
  }
}

TYPED_TEST(T5Kernels, CudnnBiasGradientMatchesReference) {
  using T = TypeParam;
  for (const BiasCase& c : kBiasCases) {
    SCOPED_TRACE("B=" + std::to_string(c.B) + " S=" + std::to_string(c.S) +
                 " causal=" + std::to_string(c.causal));
    BiasProblem<T> pr(c);
    std::unique_ptr<xk::CudnnAttention> attn;
    try {
      attn = std::make_unique<xk::CudnnAttention>(pr.desc);
    } catch (const xfbench::Unsupported& e) {
      FAIL() << "cuDNN SDPA with a bias gradient unsupported here: " << e.what();
    }
    xfbench::DeviceBuffer<char> ws(std::max<std::size_t>(attn->workspace_bytes(), 1));
    xfbench::DeviceBuffer<float> stats(attn->stats_elements());
    attn->forward(pr.o.get(), stats.data(), pr.part(0), pr.part(1), pr.part(2), nullptr,
                  pr.d_bias.get(), {}, ws.data(), nullptr);
    auto backward = [&] {
      attn->backward(pr.grad(0), pr.grad(1), pr.grad(2), pr.dbias.get(), pr.d_dout.get(),
                     pr.o.get(), stats.data(), pr.part(0), pr.part(1), pr.part(2), nullptr,
                     pr.d_bias.get(), {}, ws.data(), nullptr);
      return pr.dbias.host();
    };
    const std::vector<double> first = backward();
    EXPECT_TRUE(close_scaled<T>("dbias", first, pr.r_dbias, 8));
    const bool same = first == backward();
    std::printf("  cuDNN dbias %s from run to run\n", same ? "identical" : "DIFFERS");
  }
}

TEST(T5KernelsArgs, BiasGradientNeedsABias) {
  xk::AttentionDesc d =
      xk::self_attention_desc(xk::Precision::fp16, 1, 1, 64, 64, xk::QkvLayout::bshd);
  d.bias_grad = true;
  EXPECT_THROW(xk::check_attention_desc(d), xfbench::InvalidArgument);
}

}  // namespace
