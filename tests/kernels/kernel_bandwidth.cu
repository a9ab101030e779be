// Bandwidth of the memory-bound kernels (and throughput of both attention backends) at BERT-large
// shapes: hidden 1024, intermediate 4096, 16 heads of 64; RMSNorm also at the Llama widths. Not a
// test: run by hand on the device, prints one JSON object per kernel (GB/s count each tensor byte
// read or written once).
//   kernel_bandwidth [--out=file.jsonl]
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "kernels/attention.hpp"
#include "kernels/dropout.hpp"
#include "kernels/gelu.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/softmax.hpp"
#include "launch_timing.hpp"
#include "xfbench/memory.hpp"

namespace xk = xfbench::kernels;

namespace {

FILE* g_out = nullptr;

// The mean of 50 back-to-back launches after 5 warm-up launches.
double time_ms(cudaStream_t s, const std::function<void()>& launch) {
  return xftest::time_ms(launch, 50, 5, s);
}

void report(const std::string& name, const std::string& shape, double ms, double bytes,
            double flops = 0) {
  char line[512];
  std::snprintf(
      line, sizeof line, "{\"kernel\": \"%s\", \"shape\": \"%s\", \"us\": %.2f, \"GB/s\": %.0f%s}",
      name.c_str(), shape.c_str(), ms * 1e3, bytes / (ms * 1e-3) / 1e9,
      flops > 0 ? (", \"TFLOPS\": " + std::to_string(flops / (ms * 1e-3) / 1e12)).c_str() : "");
  std::puts(line);
  if (g_out) std::fprintf(g_out, "%s\n", line);
}

template <class T>
struct Buf {
  xfbench::DeviceBuffer<T> b;
  Buf(std::size_t n, cudaStream_t s, std::uint64_t seed, double lo = -1, double hi = 1) : b(n) {
    xfbench::fill_uniform(
        b.data(), n, std::is_same<T, __half>::value ? xfbench::Dtype::fp16 : xfbench::Dtype::bf16,
        seed, lo, hi, s);
  }
  T* get() const { return b.data(); }
};

// RMSNorm forward and backward of N rows of C (own buffers).
template <class T>
void rmsnorm(const std::string& shape, int N, int C, cudaStream_t s) {
  const std::size_t n = std::size_t(N) * C;
  const double e = sizeof(T);
  Buf<T> x(n, s, 1), out(n, s, 3), z(n, s, 4), dy(n, s, 5), dz(n, s, 7), w(C, s, 9, 0.5, 1.5),
      gw(C, s, 11);
  xfbench::DeviceBuffer<float> rstd(N);
  xfbench::DeviceBuffer<char> scratch(xk::norm_backward_scratch_bytes(C));
  float* sc = reinterpret_cast<float*>(scratch.data());
  report("rmsnorm_forward", shape,
         time_ms(s,
                 [&] {
                   xk::rmsnorm_forward<T>(out.get(), rstd.data(), x.get(), w.get(), N, C, 1e-6f, s);
                 }),
         2 * n * e);
  report("rmsnorm_backward", shape,
         time_ms(s,
                 [&] {
                   xk::rmsnorm_backward<T>(dz.get(), gw.get(), sc, dy.get(), nullptr, z.get(),
                                           w.get(), rstd.data(), N, C, s);
                 }),
         3 * n * e);
}

template <class T>
void memory_bound(const char* dt, cudaStream_t s) {
  const int N = 64 * 512, C = 1024, F = 4096;
  const std::size_t n = std::size_t(N) * C, nf = std::size_t(N) * F;
  const double e = sizeof(T);
  const std::string shape = std::string(dt) + " N=32768 C=1024";
  const xk::Dropout drop{0.1f, 1, 0};
  Buf<T> x(n, s, 1), res(n, s, 2), out(n, s, 3), z(n, s, 4), dy(n, s, 5), dy2(n, s, 6), dz(n, s, 7),
      dx(n, s, 8), w(C, s, 9, 0.5, 1.5), bias(C, s, 10), gw(C, s, 11), gb(C, s, 12), gxb(C, s, 13);
  xfbench::DeviceBuffer<float> mean(N), rstd(N);
  xfbench::DeviceBuffer<char> scratch(xk::norm_backward_scratch_bytes(F));
  float* sc = reinterpret_cast<float*>(scratch.data());

  report(std::string("layernorm_forward"), shape,
         time_ms(s,
                 [&] {
                   xk::layernorm_forward<T>(out.get(), mean.data(), rstd.data(), x.get(), w.get(),
                                            bias.get(), N, C, 1e-12f, s);
                 }),
         2 * n * e);
  report("bias_dropout_residual_layernorm_forward", shape,
         time_ms(s,
                 [&] {
                   xk::bias_dropout_residual_layernorm_forward<T>(
                       out.get(), z.get(), mean.data(), rstd.data(), x.get(), bias.get(), res.get(),
                       w.get(), bias.get(), drop, N, C, 1e-12f, s);
                 }),
         4 * n * e);
  report("layernorm_backward", shape,
         time_ms(s,
                 [&] {
                   xk::layernorm_backward<T>(dz.get(), gw.get(), gb.get(), sc, dy.get(), nullptr,
                                             z.get(), w.get(), mean.data(), rstd.data(), N, C, s);
                 }),
         3 * n * e);
  report("layernorm_backward(+dresidual)", shape,
         time_ms(s,
                 [&] {
                   xk::layernorm_backward<T>(dz.get(), gw.get(), gb.get(), sc, dy.get(), res.get(),
                                             z.get(), w.get(), mean.data(), rstd.data(), N, C, s);
                 }),
         4 * n * e);
  report("bias_dropout_residual_layernorm_backward(dz,dx,dxbias)", shape,
         time_ms(s,
                 [&] {
                   xk::bias_dropout_residual_layernorm_backward<T>(
                       dz.get(), dx.get(), gxb.get(), gw.get(), gb.get(), sc, dy.get(), nullptr,
                       nullptr, z.get(), w.get(), mean.data(), rstd.data(), drop, N, C, s);
                 }),
         4 * n * e);
  report("bias_dropout_residual_layernorm_backward(+dout2)", shape,
         time_ms(s,
                 [&] {
                   xk::bias_dropout_residual_layernorm_backward<T>(
                       dz.get(), dx.get(), gxb.get(), gw.get(), gb.get(), sc, dy.get(), dy2.get(),
                       nullptr, z.get(), w.get(), mean.data(), rstd.data(), drop, N, C, s);
                 }),
         5 * n * e);
  rmsnorm<T>(shape, N, C, s);
  report("bias_dropout_residual_forward", shape,
         time_ms(s,
                 [&] {
                   xk::bias_dropout_residual_forward<T>(out.get(), x.get(), bias.get(), res.get(),
                                                        drop, N, C, s);
                 }),
         3 * n * e);
  report("dropout_bias_backward", shape,
         time_ms(s,
                 [&] {
                   xk::dropout_bias_backward<T>(dx.get(), gb.get(), sc, dy.get(), drop, N, C, s);
                 }),
         2 * n * e);
  report("bias_backward", shape,
         time_ms(s, [&] { xk::bias_backward<T>(gb.get(), sc, dy.get(), N, C, s); }), 1 * n * e);
  report("dropout_forward", shape,
         time_ms(s, [&] { xk::dropout_forward<T>(out.get(), x.get(), n, drop, s); }), 2 * n * e);

  const std::string shape_f = std::string(dt) + " N=32768 C=4096";
  Buf<T> h(nf, s, 20), hout(nf, s, 21), dh(nf, s, 22), bf(F, s, 23), gbf(F, s, 24);
  for (auto kind : {xk::Gelu::erf, xk::Gelu::tanh}) {
    const std::string k = kind == xk::Gelu::erf ? "erf" : "tanh";
    report(
        "bias_gelu_forward(" + k + ")", shape_f,
        time_ms(s, [&] { xk::bias_gelu_forward<T>(hout.get(), h.get(), bf.get(), N, F, kind, s); }),
        2 * nf * e);
    report("bias_gelu_backward(" + k + ",dbias)", shape_f,
           time_ms(s,
                   [&] {
                     xk::bias_gelu_backward<T>(dh.get(), gbf.get(), sc, hout.get(), h.get(),
                                               bf.get(), N, F, kind, s);
                   }),
           3 * nf * e);
  }
}

template <class T>
void softmax(const char* dt, int B, int S, cudaStream_t s) {
  const int NH = 16;
  const std::size_t n = std::size_t(B) * NH * S * S;
  const double e = sizeof(T);
  const std::string shape =
      std::string(dt) + " B=" + std::to_string(B) + " NH=16 S=" + std::to_string(S);
  Buf<T> scores(n, s, 1, -4, 4), probs(n, s, 2), dropped(n, s, 3);
  xfbench::DeviceBuffer<float> mask(std::size_t(B) * S);
  XF_CUDA_CHECK(cudaMemsetAsync(mask.data(), 0, mask.bytes(), s));
  const xk::Dropout drop{0.1f, 1, 0};
  report("attention_softmax_forward(mask,dropout)", shape,
         time_ms(s,
                 [&] {
                   xk::attention_softmax_forward<T>(probs.get(), dropped.get(), scores.get(),
                                                    mask.data(), nullptr, 0.125f, false, drop, B,
                                                    NH, S, S, s);
                 }),
         3 * n * e);
  report("attention_softmax_forward(mask)", shape,
         time_ms(s,
                 [&] {
                   xk::attention_softmax_forward<T>(probs.get(), nullptr, scores.get(), mask.data(),
                                                    nullptr, 0.125f, false, {}, B, NH, S, S, s);
                 }),
         2 * n * e);
  report("attention_softmax_backward(dropout)", shape,
         time_ms(s,
                 [&] {
                   xk::attention_softmax_backward<T>(dropped.get(), scores.get(), probs.get(),
                                                     0.125f, drop, B, NH, S, S, s);
                 }),
         3 * n * e);
}

template <class T>
void attention(const char* dt, xk::Precision prec, int B, int S, xk::QkvLayout layout,
               cudaStream_t s) {
  const int NH = 16, HD = 64;
  const std::size_t qkv_n = std::size_t(B) * S * 3 * NH * HD, o_n = qkv_n / 3;
  auto desc = xk::self_attention_desc(prec, B, NH, S, HD, layout);
  desc.dropout = 0.1f;
  const xk::Dropout drop{0.1f, 1, 0};
  const std::string shape = std::string(dt) + " B=" + std::to_string(B) +
                            " S=" + std::to_string(S) + " NH=16 HD=64 " + xk::to_string(layout) +
                            " p=0.1";
  Buf<T> qkv(qkv_n, s, 1), dqkv(qkv_n, s, 2), o(o_n, s, 3), dout(o_n, s, 4);
  const T* q = qkv.get() + xk::qkv_offset(layout, 0, NH, HD);
  const T* k = qkv.get() + xk::qkv_offset(layout, 1, NH, HD);
  const T* v = qkv.get() + xk::qkv_offset(layout, 2, NH, HD);
  T* dq = dqkv.get() + xk::qkv_offset(layout, 0, NH, HD);
  T* dk = dqkv.get() + xk::qkv_offset(layout, 1, NH, HD);
  T* dv = dqkv.get() + xk::qkv_offset(layout, 2, NH, HD);
  const double f = xk::attention_core_flops(desc);
  {
    xk::UnfusedAttention un(desc);
    Buf<T> probs(un.probs_elements(), s, 5), work(un.probs_elements(), s, 6);
    report("unfused_attention_forward", shape,
           time_ms(s,
                   [&] {
                     un.forward(o.get(), probs.get(), work.get(), q, k, v, nullptr, nullptr, drop,
                                s);
                   }),
           0, f);
    report("unfused_attention_backward", shape,
           time_ms(s,
                   [&] {
                     un.backward(dq, dk, dv, work.get(), dout.get(), probs.get(), q, k, v, drop, s);
                   }),
           0, 2 * f);
  }
  try {
    xk::CudnnAttention fa(desc);
    xfbench::DeviceBuffer<char> ws(std::max<std::size_t>(fa.workspace_bytes(), 1));
    xfbench::DeviceBuffer<float> stats(fa.stats_elements());
    report("cudnn_attention_forward", shape,
           time_ms(s,
                   [&] {
                     fa.forward(o.get(), stats.data(), q, k, v, nullptr, nullptr, drop, ws.data(),
                                s);
                   }),
           0, f);
    report("cudnn_attention_backward", shape,
           time_ms(s,
                   [&] {
                     fa.backward(dq, dk, dv, dout.get(), o.get(), stats.data(), q, k, v, nullptr,
                                 nullptr, drop, ws.data(), s);
                   }),
           0, 2 * f);
  } catch (const xfbench::Error& e) {
    std::printf("cudnn attention %s: %s\n", shape.c_str(), e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--out=", 6) == 0) g_out = std::fopen(argv[i] + 6, "w");
  try {
    xfbench::Stream stream;
    memory_bound<__half>("fp16", stream);
    memory_bound<__nv_bfloat16>("bf16", stream);
    // RMSNorm at the Llama widths (llama-3.1-8b, llama-3.1-70b): 8 warps a row, 2 and 4 vectors
    // a thread.
    for (int C : {4096, 8192})
      rmsnorm<__nv_bfloat16>("bf16 N=8192 C=" + std::to_string(C), 8192, C, stream);
    softmax<__half>("fp16", 64, 512, stream);
    softmax<__half>("fp16", 128, 128, stream);
    for (auto layout : {xk::QkvLayout::bshd, xk::QkvLayout::sbhd}) {
      attention<__half>("fp16", xk::Precision::fp16, 64, 512, layout, stream);
      attention<__half>("fp16", xk::Precision::fp16, 128, 128, layout, stream);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel_bandwidth: %s\n", e.what());
    return 1;
  }
  if (g_out) std::fclose(g_out);
  return 0;
}
