// The fused products (gemm_fused.hpp) against float64: the GELU forward's activation (and the
// pre-activation it keeps for training), the backward's gradient through the GELU, both forms, with
// and without bias; the gated products' forward (act, and the up half of pre it keeps) and
// backward (both halves of dpre) for each gate; at a shape that is not a multiple of any tile
// (partial tiles in m, n and k); and choose_faster, by which the block picks fused or unfused.
//
// Tolerances (eps = 2^-11 fp16, 2^-8 bf16): pre and dpre are sums over k that cancel: 2 eps
// relative + 2 eps · max|ref| absolute (one rounding of an fp32 sum); act 2 eps relative + 2 eps
// absolute beside the GELU of the stored pre's reference.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/gemm_fused.hpp"
#include "kernels/reference/reference.hpp"
#include "test_util.hpp"
#include "xfbench/error.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

template <class T>
class FusedGemmGpu : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    std::string why;
    if (!IsSkipped() && !xk::fused_gemm_available(&why)) GTEST_SKIP() << why;
  }
};
using Types = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(FusedGemmGpu, Types);

template <class T>
constexpr xk::Precision precision_of() {
  return std::is_same<T, __half>::value ? xk::Precision::fp16 : xk::Precision::bf16;
}

constexpr int M = 300, N = 520, K = 200;

// c[m,n] = Σk a[m,k] · b(k, n), b(k, n) = b[n*K + k] (W [n,k]) or b[k*N + n] (W [k,n]).
std::vector<double> product(const std::vector<double>& a, const std::vector<double>& b, bool b_nk) {
  std::vector<double> c(std::size_t(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k)
        s += a[std::size_t(i) * K + k] *
             (b_nk ? b[std::size_t(j) * K + k] : b[std::size_t(k) * N + j]);
      c[std::size_t(i) * N + j] = s;
    }
  return c;
}

TYPED_TEST(FusedGemmGpu, ForwardWritesPreAndGeluOfIt) {
  using T = TypeParam;
  const auto x = random_values<T>(std::size_t(M) * K, -1, 1, 11);
  const auto w = random_values<T>(std::size_t(N) * K, -0.25, 0.25, 12);
  const auto bias = random_values<T>(N, -1, 1, 13);
  const auto xw = product(x, w, true);
  for (xk::FusedGemmOp op : {xk::FusedGemmOp::bias_gelu_aux, xk::FusedGemmOp::bias_gelu})
    for (xk::Gelu kind : {xk::Gelu::erf, xk::Gelu::tanh})
      for (bool with_bias : {true, false}) {
        const bool aux = op == xk::FusedGemmOp::bias_gelu_aux;
        SCOPED_TRACE(std::string(xk::to_string(op)) + (kind == xk::Gelu::erf ? " erf" : " tanh") +
                     (with_bias ? " bias" : " no bias"));
        xk::FusedGemmDesc d;
        d.precision = precision_of<T>(), d.op = op, d.gelu = kind;
        d.m = M, d.n = N, d.k = K;
        xk::FusedGemm g(d);
        Dev<T> dx(x), dw(w), db(bias), act(std::size_t(M) * N), pre(std::size_t(M) * N);
        xk::FusedGemmOperands o;
        o.a = dx.get(), o.b = dw.get(), o.out = act.get(), o.pre = aux ? pre.get() : nullptr;
        o.bias = with_bias ? db.get() : nullptr;
        g.run(nullptr, o);
        XF_CUDA_CHECK(cudaDeviceSynchronize());
        std::vector<double> r_pre(xw);
        for (std::size_t i = 0; i < r_pre.size(); ++i) r_pre[i] += with_bias ? bias[i % N] : 0.0;
        if (aux) EXPECT_TRUE(close_scaled<T>("pre", pre.host(), r_pre, 2));
        // The activation of the fp32 sum the kernel held (the stored pre within one rounding).
        std::vector<double> r_act(r_pre.size());
        for (std::size_t i = 0; i < r_act.size(); ++i) r_act[i] = xk::ref::gelu(r_pre[i], kind);
        EXPECT_TRUE(close_scaled<T>("act", act.host(), r_act, 3));
      }
}

TYPED_TEST(FusedGemmGpu, BackwardIsTheProductTimesGeluGradientOfPre) {
  using T = TypeParam;
  const auto dy = random_values<T>(std::size_t(M) * K, -1, 1, 21);
  const auto w = random_values<T>(std::size_t(K) * N, -0.25, 0.25, 22);  // W [k, n]
  const auto pre = random_values<T>(std::size_t(M) * N, -4, 4, 23);
  const auto dyw = product(dy, w, false);
  for (xk::Gelu kind : {xk::Gelu::erf, xk::Gelu::tanh}) {
    SCOPED_TRACE(kind == xk::Gelu::erf ? "erf" : "tanh");
    xk::FusedGemmDesc d;
    d.precision = precision_of<T>(), d.op = xk::FusedGemmOp::dgelu, d.gelu = kind;
    d.m = M, d.n = N, d.k = K;
    xk::FusedGemm g(d);
    Dev<T> ddy(dy), dw(w), dpre_in(pre), dpre(std::size_t(M) * N);
    xk::FusedGemmOperands o;
    o.a = ddy.get(), o.b = dw.get(), o.out = dpre.get(), o.pre = dpre_in.get();
    g.run(nullptr, o);
    std::vector<double> ref(dyw.size());
    for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = dyw[i] * xk::ref::gelu_grad(pre[i], kind);
    EXPECT_TRUE(close_scaled<T>("dpre", dpre.host(), ref, 2));
  }
}

// The gated FFN's pre [M, 2N]: the gate's half (columns [0, N)) and the linear part's.
constexpr std::size_t kPre = std::size_t(M) * 2 * N;
std::size_t gate_at(std::size_t i) { return i / N * 2 * N + i % N; }  // i: an element of [M, N]

double gate_ref(double x, xk::GateAct g) {
  return g == xk::GateAct::silu
             ? xk::ref::silu(x)
             : xk::ref::gelu(x, g == xk::GateAct::gelu_erf ? xk::Gelu::erf : xk::Gelu::tanh);
}
double gate_grad_ref(double x, xk::GateAct g) {
  return g == xk::GateAct::silu
             ? xk::ref::silu_grad(x)
             : xk::ref::gelu_grad(x, g == xk::GateAct::gelu_erf ? xk::Gelu::erf : xk::Gelu::tanh);
}
const char* gate_name(xk::GateAct g) {
  return g == xk::GateAct::silu ? "silu" : g == xk::GateAct::gelu_erf ? "gelu-erf" : "gelu-tanh";
}
// Columns [from, from + N) of each row of a [M, 2N] matrix.
std::vector<double> half_of(const std::vector<double>& v, std::size_t from) {
  std::vector<double> h(std::size_t(M) * N);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = v[gate_at(i) + from];
  return h;
}

TYPED_TEST(FusedGemmGpu, GatedForwardIsTheGatesActivationTimesTheUpProduct) {
  using T = TypeParam;
  const auto x = random_values<T>(std::size_t(M) * K, -1, 1, 31);
  const auto w = random_values<T>(std::size_t(N) * K, -0.25, 0.25, 32);  // the up half of W
  const auto pre_in = random_values<T>(kPre, -4, 4, 33);  // the gate's half, and a stale up half
  const auto xw = product(x, w, true);
  for (xk::FusedGemmOp op : {xk::FusedGemmOp::gated_aux, xk::FusedGemmOp::gated})
    for (xk::GateAct gate : {xk::GateAct::silu, xk::GateAct::gelu_erf, xk::GateAct::gelu_tanh}) {
      const bool aux = op == xk::FusedGemmOp::gated_aux;
      SCOPED_TRACE(std::string(xk::to_string(op)) + " " + gate_name(gate));
      xk::FusedGemmDesc d;
      d.precision = precision_of<T>(), d.op = op, d.gate = gate;
      d.m = M, d.n = N, d.k = K;
      xk::FusedGemm g(d);
      Dev<T> dx(x), dw(w), pre(pre_in), act(std::size_t(M) * N);
      xk::FusedGemmOperands o;
      o.a = dx.get(), o.b = dw.get(), o.out = act.get(), o.pre = pre.get();
      g.run(nullptr, o);
      const auto pre_out = pre.host();
      EXPECT_EQ(half_of(pre_out, 0), half_of(pre_in, 0)) << "the gate's half changed";
      if (aux)
        EXPECT_TRUE(close_scaled<T>("up", half_of(pre_out, N), xw, 2));
      else
        EXPECT_EQ(half_of(pre_out, N), half_of(pre_in, N)) << "gated wrote pre";
      std::vector<double> r_act(xw.size());
      for (std::size_t i = 0; i < r_act.size(); ++i)
        r_act[i] = gate_ref(pre_in[gate_at(i)], gate) * xw[i];
      EXPECT_TRUE(close_scaled<T>("act", act.host(), r_act, 3));
    }
}

TYPED_TEST(FusedGemmGpu, GatedBackwardWritesBothHalvesOfTheGradient) {
  using T = TypeParam;
  const auto dy = random_values<T>(std::size_t(M) * K, -1, 1, 41);
  const auto w = random_values<T>(std::size_t(K) * N, -0.25, 0.25, 42);  // W_down [k, n]
  const auto pre_in = random_values<T>(kPre, -4, 4, 43);
  const auto g = product(dy, w, false);
  for (xk::GateAct gate : {xk::GateAct::silu, xk::GateAct::gelu_erf, xk::GateAct::gelu_tanh}) {
    SCOPED_TRACE(gate_name(gate));
    xk::FusedGemmDesc d;
    d.precision = precision_of<T>(), d.op = xk::FusedGemmOp::dgated, d.gate = gate;
    d.m = M, d.n = N, d.k = K;
    xk::FusedGemm fg(d);
    Dev<T> ddy(dy), dw(w), pre(pre_in), dpre(kPre);
    xk::FusedGemmOperands o;
    o.a = ddy.get(), o.b = dw.get(), o.out = dpre.get(), o.pre = pre.get();
    fg.run(nullptr, o);
    std::vector<double> r_dgate(g.size()), r_dup(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double x = pre_in[gate_at(i)], up = pre_in[gate_at(i) + N];
      r_dgate[i] = g[i] * up * gate_grad_ref(x, gate);
      r_dup[i] = g[i] * gate_ref(x, gate);
    }
    const auto got = dpre.host();
    EXPECT_TRUE(close_scaled<T>("dgate", half_of(got, 0), r_dgate, 3));
    EXPECT_TRUE(close_scaled<T>("dup", half_of(got, N), r_dup, 3));
    EXPECT_EQ(half_of(pre.host(), 0), half_of(pre_in, 0)) << "pre changed";
  }
  // The gated products take no bias: asked for one, run says so.
  xk::FusedGemmDesc d;
  d.precision = precision_of<T>(), d.op = xk::FusedGemmOp::gated_aux, d.m = M, d.n = N, d.k = K;
  xk::FusedGemm fg(d);
  Dev<T> a(std::size_t(M) * K), b(std::size_t(N) * K), p(kPre), out(std::size_t(M) * N), bias(N);
  xk::FusedGemmOperands o;
  o.a = a.get(), o.b = b.get(), o.out = out.get(), o.pre = p.get(), o.bias = bias.get();
  EXPECT_THROW(fg.run(nullptr, o), xfbench::InvalidArgument);
}

// choose_faster (gemm.hpp), which the block's choice of products relies on: of two ways of
// different length, the shorter wins as a challenger and keeps its place as the incumbent; the
// seconds it reports rank them the same way.
__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

TEST(ChooseFasterGpu, KeepsTheIncumbentUnlessClearlyBeaten) {
  if (!xfbench::gpu_unavailable_reason().empty()) GTEST_SKIP() << xfbench::gpu_unavailable_reason();
  xfbench::select_device(0);
  auto way = [](long long cycles) { return [cycles] { spin<<<1, 32>>>(cycles); }; };
  const std::function<void()> slow = way(400000), fast = way(100000);  // ~200 and ~50 us
  std::vector<double> sec;
  EXPECT_EQ(xk::choose_faster(nullptr, {slow, fast}, &sec), 1);
  ASSERT_EQ(sec.size(), 2u);
  EXPECT_GT(sec[0], 2 * sec[1]);
  EXPECT_EQ(xk::choose_faster(nullptr, {fast, slow}), 0);
  EXPECT_EQ(xk::choose_faster(nullptr, {fast, fast}), 0);  // a tie keeps the incumbent
  XF_CUDA_CHECK(cudaGetLastError());
}

// Without a GPU: descriptions the kernels cannot take are refused before any GPU work.
TEST(FusedGemmArgs, RejectsWhatTheKernelsCannotTake) {
  xk::FusedGemmDesc d;
  d.m = 64, d.n = 100, d.k = 64;  // n not a multiple of 8
  EXPECT_THROW(xk::FusedGemm{d}, xfbench::InvalidArgument);
  d.n = 128, d.precision = xk::Precision::fp32;
  EXPECT_THROW(xk::FusedGemm{d}, xfbench::Unsupported);
  d.precision = xk::Precision::bf16, d.k = 0;
  EXPECT_THROW(xk::FusedGemm{d}, xfbench::InvalidArgument);
  d.op = xk::FusedGemmOp::dgated, d.n = 100, d.k = 64;
  EXPECT_THROW(xk::FusedGemm{d}, xfbench::InvalidArgument);
  d.n = 128, d.gate = xk::GateAct::gelu_tanh;  // the plans file keys its choices by these names
  EXPECT_EQ(d.describe(), "dgated bf16 gate:gelu-tanh m=64 n=128 k=64");
  d.op = xk::FusedGemmOp::bias_gelu;
  EXPECT_EQ(d.describe(), "bias_gelu bf16 gelu:erf m=64 n=128 k=64");
}

}  // namespace
