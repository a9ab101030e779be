// The FFN's products with its activation, fused (gemm_fused.hpp: CUTLASS, the activation in the
// epilogue) against unfused (the cuBLASLt product, searched, then our activation kernel), at the
// blocks' shapes. GELU: forward (pre = x·Wiᵀ + b, act = gelu(pre)) and backward (dpre = (dy·Wout)
// ⊙ gelu'(pre)); gated (Llama's SwiGLU): forward (pre = x·[W_gate; W_up]ᵀ, act = silu(gate)·up:
// fused, the gate's product then the up one's with the gate in its epilogue) and backward (dpre
// from dy·Wout). Each pair is also checked against the other (largest difference in units of the
// output's largest value). Not a test and not the benchmark protocol (launch_timing.hpp): run by
// hand on the device to rank the two before the block chooses between them; prints one JSON
// object per line.
//   ffn_products_speed [--out=file.jsonl]
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/activation.hpp"
#include "kernels/gelu.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_fused.hpp"
#include "kernels/layernorm.hpp"
#include "launch_timing.hpp"
#include "speed_lines.hpp"
#include "xfbench/memory.hpp"

namespace xk = xfbench::kernels;

namespace {

const xftest::JsonLines* g_out = nullptr;

// One pass both ways: each run once (the fused output's largest difference from the unfused one),
// then timed alternating; a line each, named "<pass> unfused (<what>)" and "<pass> fused (<what>)".
template <class T>
void race(const std::string& label, const std::string& pass, double flop,
          const std::function<void()>& unfused, const std::string& unfused_what,
          const T* unfused_out, const std::function<void()>& fused, const std::string& fused_what,
          const T* fused_out, std::size_t n) {
  unfused(), fused();
  const double diff = xftest::max_rel_diff(fused_out, unfused_out, n);
  const auto t = xftest::best_alternating({unfused, fused}, 30);
  g_out->product(label, pass + " unfused (" + unfused_what + ")", t[0], flop, 0);
  g_out->product(label, pass + " fused (" + fused_what + ")", t[1], flop, diff);
}

template <class T>
void shape(const char* name, xk::Precision p, int T_, int H, int I, xk::Gelu kind) {
  const std::string label = std::string(name) + " " + xk::to_string(p);
  const double flop = 2.0 * T_ * H * I;
  const xfbench::Dtype dt = p == xk::Precision::bf16 ? xfbench::Dtype::bf16 : xfbench::Dtype::fp16;
  xfbench::DeviceBuffer<T> x(std::size_t(T_) * H), wi(std::size_t(I) * H), bi(I),
      wout(std::size_t(H) * I), dy(std::size_t(T_) * H), pre(std::size_t(T_) * I),
      act(std::size_t(T_) * I), pre2(std::size_t(T_) * I), act2(std::size_t(T_) * I),
      dpre(std::size_t(T_) * I), dpre2(std::size_t(T_) * I);
  auto fill = [&](void* q, std::size_t n, std::uint64_t seed, double a) {
    xfbench::fill_uniform(q, n, dt, seed, -a, a, nullptr);
  };
  fill(x.data(), x.size(), 1, 1.0), fill(wi.data(), wi.size(), 2, 0.05),
      fill(bi.data(), bi.size(), 3, 0.5), fill(wout.data(), wout.size(), 4, 0.05),
      fill(dy.data(), dy.size(), 5, 1.0);

  // Unfused forward: the block's plan (no bias epilogue; the GELU adds it), then the GELU.
  xk::GemmDesc up;
  up.precision = p, up.m = T_, up.n = I, up.k = H, up.trans_b = true;
  xk::Gemm& g_up = xk::gemm_plan(up);
  xk::GemmOperands o_up{x.data(), wi.data(), pre.data()};
  g_up.tune(nullptr, o_up);
  auto unfused_fwd = [&] {
    g_up.run(nullptr, o_up);
    xk::bias_gelu_forward<T>(act.data(), pre.data(), bi.data(), T_, I, kind, nullptr);
  };
  xk::FusedGemmDesc fd;
  fd.precision = p, fd.op = xk::FusedGemmOp::bias_gelu_aux, fd.gelu = kind;
  fd.m = T_, fd.n = I, fd.k = H;
  xk::FusedGemm f_up(fd);
  xk::FusedGemmOperands fo;
  fo.a = x.data(), fo.b = wi.data(), fo.out = act2.data(), fo.pre = pre2.data(),
  fo.bias = bi.data();
  race<T>(
      label, "fwd", flop, unfused_fwd, g_up.algo_info().label() + " + gelu", act.data(),
      [&] { f_up.run(nullptr, fo); }, f_up.label(), act2.data(), act.size());
  g_out->product(label, "fwd gemm alone", xftest::time_ms([&] { g_up.run(nullptr, o_up); }, 30),
                 flop, 0);

  // Backward: dact = dy·Wout, then the GELU backward in place (pre without bias: + bias) /
  // the fused product on the fused forward's pre (bias included).
  xk::GemmDesc dn;
  dn.precision = p, dn.m = T_, dn.n = I, dn.k = H;
  xk::Gemm& g_dn = xk::gemm_plan(dn);
  xk::GemmOperands o_dn{dy.data(), wout.data(), dpre.data()};
  g_dn.tune(nullptr, o_dn);
  xfbench::DeviceBuffer<char> scratch(xk::norm_backward_scratch_bytes(I));
  auto unfused_bwd = [&] {
    g_dn.run(nullptr, o_dn);
    xk::bias_gelu_backward<T>(dpre.data(), nullptr, reinterpret_cast<float*>(scratch.data()),
                              dpre.data(), pre.data(), bi.data(), T_, I, kind, nullptr);
  };
  xk::FusedGemmDesc bd = fd;
  bd.op = xk::FusedGemmOp::dgelu;
  xk::FusedGemm f_dn(bd);
  xk::FusedGemmOperands bo;
  bo.a = dy.data(), bo.b = wout.data(), bo.out = dpre2.data(), bo.pre = pre2.data();
  race<T>(
      label, "bwd", flop, unfused_bwd, g_dn.algo_info().label() + " + dgelu", dpre.data(),
      [&] { f_dn.run(nullptr, bo); }, f_dn.label(), dpre2.data(), dpre.size());
  g_out->product(label, "bwd gemm alone", xftest::time_ms([&] { g_dn.run(nullptr, o_dn); }, 30),
                 flop, 0);
}

template <class T>
void gated_shape(const char* name, xk::Precision p, int T_, int H, int I, xk::GateAct gate) {
  const std::string label = std::string(name) + " " + xk::to_string(p);
  const double flop_fwd = 2.0 * T_ * H * 2 * I, flop_bwd = 2.0 * T_ * H * I;
  const xfbench::Dtype dt = p == xk::Precision::bf16 ? xfbench::Dtype::bf16 : xfbench::Dtype::fp16;
  const std::size_t TI = std::size_t(T_) * I;
  xfbench::DeviceBuffer<T> x(std::size_t(T_) * H), wi(std::size_t(2) * I * H),
      wout(std::size_t(H) * I), dy(std::size_t(T_) * H), pre(2 * TI), act(TI), pre2(2 * TI),
      act2(TI), dact(TI), dpre(2 * TI), dpre2(2 * TI);
  auto fill = [&](void* q, std::size_t n, std::uint64_t seed, double a) {
    xfbench::fill_uniform(q, n, dt, seed, -a, a, nullptr);
  };
  fill(x.data(), x.size(), 1, 1.0), fill(wi.data(), wi.size(), 2, 0.05),
      fill(wout.data(), wout.size(), 4, 0.05), fill(dy.data(), dy.size(), 5, 1.0);

  // Unfused forward: the block's plan of both halves, then the gated activation.
  xk::GemmDesc up;
  up.precision = p, up.m = T_, up.n = 2 * I, up.k = H, up.trans_b = true;
  xk::Gemm& g_up = xk::gemm_plan(up);
  xk::GemmOperands o_up{x.data(), wi.data(), pre.data()};
  g_up.tune(nullptr, o_up);
  auto unfused_fwd = [&] {
    g_up.run(nullptr, o_up);
    xk::gated_dropout_forward<T>(act.data(), pre.data(), T_, I, gate, {}, nullptr);
  };
  // Fused: the gate's half (rows of pre 2I apart), then the up half with the gate in its epilogue.
  xk::GemmDesc gd = up;
  gd.n = I, gd.ldc = 2 * I;
  xk::Gemm& g_gate = xk::gemm_plan(gd);
  xk::GemmOperands o_gate{x.data(), wi.data(), pre2.data()};
  g_gate.tune(nullptr, o_gate);
  xk::FusedGemmDesc fd;
  fd.precision = p, fd.op = xk::FusedGemmOp::gated_aux, fd.gate = gate;
  fd.m = T_, fd.n = I, fd.k = H;
  xk::FusedGemm f_up(fd);
  xk::FusedGemmOperands fo;
  fo.a = x.data(), fo.b = wi.data() + std::size_t(I) * H, fo.out = act2.data(),
  fo.pre = pre2.data();
  auto fused_fwd = [&] {
    g_gate.run(nullptr, o_gate);
    f_up.run(nullptr, fo);
  };
  race<T>(label, "fwd", flop_fwd, unfused_fwd, g_up.algo_info().label() + " + gated", act.data(),
          fused_fwd, g_gate.algo_info().label() + " + " + f_up.label(), act2.data(), act.size());
  g_out->product(label, "fwd gemm alone", xftest::time_ms([&] { g_up.run(nullptr, o_up); }, 30),
                 flop_fwd, 0);
  g_out->product(label, "fwd fused up alone", xftest::time_ms([&] { f_up.run(nullptr, fo); }, 30),
                 flop_fwd / 2, 0);

  // Backward: dact = dy·Wout, then the gated backward into dpre / the fused product on the fused
  // forward's pre.
  xk::GemmDesc dn;
  dn.precision = p, dn.m = T_, dn.n = I, dn.k = H;
  xk::Gemm& g_dn = xk::gemm_plan(dn);
  xk::GemmOperands o_dn{dy.data(), wout.data(), dact.data()};
  g_dn.tune(nullptr, o_dn);
  auto unfused_bwd = [&] {
    g_dn.run(nullptr, o_dn);
    xk::gated_dropout_backward<T>(dpre.data(), dact.data(), pre.data(), T_, I, gate, {}, nullptr);
  };
  xk::FusedGemmDesc bd = fd;
  bd.op = xk::FusedGemmOp::dgated;
  xk::FusedGemm f_dn(bd);
  xk::FusedGemmOperands bo;
  bo.a = dy.data(), bo.b = wout.data(), bo.out = dpre2.data(), bo.pre = pre2.data();
  race<T>(
      label, "bwd", flop_bwd, unfused_bwd, g_dn.algo_info().label() + " + gated", dpre.data(),
      [&] { f_dn.run(nullptr, bo); }, f_dn.label(), dpre2.data(), dpre.size());
  g_out->product(label, "bwd gemm alone", xftest::time_ms([&] { g_dn.run(nullptr, o_dn); }, 30),
                 flop_bwd, 0);
}

}  // namespace

int main(int argc, char** argv) {
  const xftest::JsonLines out(argc, argv);
  g_out = &out;
  std::string why;
  if (!xk::fused_gemm_available(&why)) {
    std::fprintf(stderr, "ffn_products_speed: %s\n", why.c_str());
    return 1;
  }
  // SwiGLU: llama-3.1-8b, -3.2-3b and -3.2-1b at 8192 tokens (s4096 b2, the LlamaBlock headline),
  // first: the new products.
  const xk::GateAct silu = xk::GateAct::silu;
  gated_shape<__nv_bfloat16>("llama-3.1-8b T=8192", xk::Precision::bf16, 8192, 4096, 14336, silu);
  gated_shape<__nv_bfloat16>("llama-3.2-3b T=8192", xk::Precision::bf16, 8192, 3072, 8192, silu);
  gated_shape<__nv_bfloat16>("llama-3.2-1b T=8192", xk::Precision::bf16, 8192, 2048, 8192, silu);
  // bert-large s512 b64 and s128 b128, gpt2-medium s1024 b64 and b8, gpt2 s1024 b16, gpt2-xl
  // s1024 b8.
  shape<__half>("bert-large T=32768", xk::Precision::fp16, 32768, 1024, 4096, xk::Gelu::erf);
  shape<__nv_bfloat16>("bert-large T=32768", xk::Precision::bf16, 32768, 1024, 4096, xk::Gelu::erf);
  shape<__half>("bert-large T=16384", xk::Precision::fp16, 16384, 1024, 4096, xk::Gelu::erf);
  shape<__half>("gpt2-medium T=65536", xk::Precision::fp16, 65536, 1024, 4096, xk::Gelu::tanh);
  shape<__nv_bfloat16>("gpt2-medium T=8192", xk::Precision::bf16, 8192, 1024, 4096, xk::Gelu::tanh);
  shape<__nv_bfloat16>("gpt2 T=16384", xk::Precision::bf16, 16384, 768, 3072, xk::Gelu::tanh);
  shape<__nv_bfloat16>("gpt2-xl T=8192", xk::Precision::bf16, 8192, 1600, 6400, xk::Gelu::tanh);
  return 0;
}
