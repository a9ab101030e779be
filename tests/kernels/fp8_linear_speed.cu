// FP8 against bf16 for the linear layers of one llama-3.1-8b block at b2 s4096 (8192 tokens):
// each product alone and with its casts (Fp8Linear), against the block's bf16 GEMMs (forward NT,
// data gradient NN, weight gradient TN), every plan searched first. Not a test and not the
// benchmark protocol (launch_timing.hpp): run by hand on the device to rank the pieces before
// the layer's FP8 case exists; prints one JSON object per line.
//   fp8_linear_speed [--tokens=8192] [--out=file.jsonl]
#include <cuda_bf16.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/fp8.hpp"
#include "kernels/fp8_linear.hpp"
#include "kernels/gemm.hpp"
#include "launch_timing.hpp"
#include "speed_lines.hpp"
#include "xfbench/memory.hpp"

namespace xk = xfbench::kernels;

namespace {

const xftest::JsonLines* g_out = nullptr;

void report(const std::string& layer, const std::string& what, double ms, double flop,
            double bytes) {
  char line[400];
  std::snprintf(line, sizeof line,
                "{\"layer\": \"%s\", \"what\": \"%s\", \"ms\": %.5f, \"TFLOPS\": %.1f, "
                "\"GB/s\": %.1f}",
                layer.c_str(), what.c_str(), ms, flop ? flop / ms / 1e9 : 0.0,
                bytes ? bytes / ms / 1e6 : 0.0);
  g_out->write(line);
}

xk::GemmDesc bf16(std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb) {
  xk::GemmDesc d;
  d.precision = xk::Precision::bf16;
  d.m = m, d.n = n, d.k = k, d.trans_a = ta, d.trans_b = tb;
  return d;
}

void fill(void* p, std::size_t n, std::uint64_t seed) {
  xfbench::fill_uniform(p, n, xfbench::Dtype::bf16, seed, -1.0, 1.0, nullptr);
}

void layer(const char* name, int T, int K, int M) {
  const double flop = 2.0 * T * K * M;
  xfbench::DeviceBuffer<__nv_bfloat16> x(std::size_t(T) * K), w(std::size_t(M) * K),
      y(std::size_t(T) * M), dy(std::size_t(T) * M), dx(std::size_t(T) * K), dw(std::size_t(M) * K);
  fill(x.data(), x.size(), 1), fill(w.data(), w.size(), 2), fill(dy.data(), dy.size(), 3);

  // bf16: the block's three products.
  xk::Gemm& f = xk::gemm_plan(bf16(T, M, K, false, true));
  xk::Gemm& d = xk::gemm_plan(bf16(T, K, M, false, false));
  xk::GemmOptions side;
  side.private_workspace = true;
  xk::Gemm& g = xk::gemm_plan(bf16(M, K, T, true, false), side);
  xk::GemmOperands of{x.data(), w.data(), y.data()}, od{dy.data(), w.data(), dx.data()},
      og{dy.data(), x.data(), dw.data()};
  f.tune(nullptr, of), d.tune(nullptr, od), g.tune(nullptr, og);
  const double bf = xftest::time_ms([&] { f.run(nullptr, of); });
  const double bd = xftest::time_ms([&] { d.run(nullptr, od); });
  const double bg = xftest::time_ms([&] { g.run(nullptr, og); });
  report(name, "bf16 forward", bf, flop, 0);
  report(name, "bf16 data gradient", bd, flop, 0);
  report(name, "bf16 weight gradient", bg, flop, 0);

  // FP8 in either recipe, after one step so the delayed scales are set.
  const double b = bf + bd + bg;
  report(name, "bf16 fwd+bwd", b, 3 * flop, 0);
  for (xk::Fp8Recipe recipe : {xk::Fp8Recipe::delayed, xk::Fp8Recipe::current}) {
    const std::string r = std::string(" [") + xk::to_string(recipe) + "]";
    xk::Fp8Scales scales(xk::fp8_linear_formats(), {recipe, 1024, 0});
    xk::Fp8Linear lin(T, K, M, scales, 0);
    auto step = [&] {
      lin.cast_weight(nullptr, w.data());
      lin.forward(nullptr, x.data(), y.data());
      lin.cast_grad(nullptr, dy.data());
      lin.backward_data(nullptr, dx.data());
      lin.backward_weight(nullptr, x.data(), dw.data());
    };
    step();
    scales.update(nullptr);
    lin.tune(nullptr);
    xfbench::DeviceBuffer<std::uint8_t> xq(std::size_t(T) * K);
    const double fx = xftest::time_ms(
        [&] { xk::fp8_cast(xq.data(), x.data(), std::size_t(T) * K, scales, 0, nullptr); });
    const double ff = xftest::time_ms([&] { lin.forward(nullptr, x.data(), y.data()); });
    const double fc = xftest::time_ms([&] { lin.cast_grad(nullptr, dy.data()); });
    const double fd = xftest::time_ms([&] { lin.backward_data(nullptr, dx.data()); });
    const double fg = xftest::time_ms([&] { lin.backward_weight(nullptr, x.data(), dw.data()); });
    const double fw = xftest::time_ms([&] { lin.cast_weight(nullptr, w.data()); });
    // Bytes each cast moves once (current: plus one read of x for its amax).
    const double extra = recipe == xk::Fp8Recipe::current ? 2.0 : 0.0;
    report(name, "fp8 cast x" + r, fx, 0, (3.0 + extra) * T * K);
    report(name, "fp8 forward (cast x + product)" + r, ff, flop, 0);
    report(name, "fp8 cast dy + transpose" + r, fc, 0, (4.0 + extra) * T * M);
    report(name, "fp8 data gradient (product)" + r, fd, flop, 0);
    report(name, "fp8 weight gradient (cast x transposed + product)" + r, fg, flop, 0);
    report(name, "fp8 cast W + transpose" + r, fw, 0, (4.0 + extra) * M * K);
    const double e = ff + fc + fd + fg;
    report(name, "fp8 fwd+bwd (casts included, weight cast apart)" + r, e, 3 * flop, 0);
    std::printf("%s%s: fp8 / bf16 speed-up fwd+bwd %.3f\n", name, r.c_str(), b / e);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const xftest::JsonLines out(argc, argv);
  g_out = &out;
  int T = 8192;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--tokens=", 9) == 0) T = std::atoi(argv[i] + 9);
  // llama-3.1-8b: hidden 4096, q 32 x 128 and kv 8 x 128 (qkv 6144), SwiGLU intermediate 14336.
  layer("qkv", T, 4096, 6144);
  layer("o_proj", T, 4096, 4096);
  layer("gate_up", T, 4096, 2 * 14336);
  layer("down", T, 14336, 4096);
  return 0;
}
