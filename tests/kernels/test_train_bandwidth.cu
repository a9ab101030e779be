// Bandwidth of the training-step kernels at BERT-large / GPT-2 shapes, bf16. Not a check (the
// tests are DISABLED_): run by hand on the device, they print one line per kernel with the time
// and GB/s (each byte a kernel must move counted once):
//   test_kernels --gtest_also_run_disabled_tests --gtest_filter='TrainBandwidth.*'
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "kernels/adamw.hpp"
#include "kernels/cross_entropy.hpp"
#include "kernels/embedding.hpp"
#include "kernels/grad_norm.hpp"
#include "launch_timing.hpp"
#include "train_test_util.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;
using bf16 = __nv_bfloat16;

namespace {

class TrainBandwidth : public GpuTest {};

void report(const char* kernel, const std::string& shape, double ms, double bytes) {
  std::printf("%-22s %-34s %9.1f us %7.0f GB/s\n", kernel, shape.c_str(), ms * 1e3,
              bytes / (ms * 1e-3) / 1e9);
}

// BERT-large's parameter tensors (MLM head included) as they would lie in one flat buffer;
// biases and LayerNorm parameters without decay, as HF's Trainer groups them.
std::vector<xk::ParamSegment> bert_large_segments() {
  const std::size_t h = 1024, f = 4096, V = 30522;
  std::vector<xk::ParamSegment> segs;
  std::size_t at = 0;
  auto add = [&](std::size_t count, bool decay) {
    segs.push_back({at, count, decay});
    at += (count + 7) / 8 * 8;
  };
  add(V * h, true), add(512 * h, true), add(2 * h, true), add(h, false), add(h, false);
  for (int l = 0; l < 24; ++l) {
    add(3 * h * h, true), add(3 * h, false), add(h * h, true), add(h, false);
    add(h, false), add(h, false), add(f * h, true), add(f, false), add(h * f, true);
    add(h, false), add(h, false), add(h, false);
  }
  add(h * h, true), add(h, false), add(h, false), add(h, false), add(V, false);
  return segs;
}

TEST_F(TrainBandwidth, DISABLED_Optimizer) {
  const xk::AdamWPlan plan(bert_large_segments());
  const std::size_t n = plan.total();
  xfbench::DeviceBuffer<bf16> params(n), grads(n);
  xfbench::DeviceBuffer<float> master(n), m(n), v(n);
  xfbench::fill_uniform(grads, xfbench::Dtype::bf16, 1, -1e-3, 1e-3, nullptr);
  xfbench::fill_uniform(master, xfbench::Dtype::fp32, 2, -1, 1, nullptr);
  XF_CUDA_CHECK(cudaMemset(m.data(), 0, m.bytes()));
  XF_CUDA_CHECK(cudaMemset(v.data(), 0, v.bytes()));
  xfbench::DeviceBuffer<xk::TrainScalars> scalars(1);
  xfbench::DeviceBuffer<char> norm_scratch(xk::grad_norm_scratch_bytes()),
      chain_scratch(xk::adamw_unfused_scratch_bytes(plan));
  float* partials = reinterpret_cast<float*>(norm_scratch.data());
  xk::train_scalars_init(scalars.data(), {}, nullptr);
  const std::string shape =
      std::to_string(n) + " params, " + std::to_string(plan.segments().size()) + " tensors";
  report("grad_norm_clip", shape, time_ms([&] {
           xk::grad_norm_clip<bf16>(scalars.data(), partials, grads.data(), n, 1.f, {}, nullptr);
         }),
         2.0 * n);
  const double adam_bytes = 28.0 * n;  // read g, p, m, v; write p, m, v, weights
  report("adamw_fused", shape, time_ms([&] {
           xk::adamw_fused<bf16>(params.data(), master.data(), m.data(), v.data(), grads.data(),
                                 plan, {}, scalars.data(), nullptr);
         }),
         adam_bytes);
  report("adamw_unfused (28n)", shape,
         time_ms(
             [&] {
               xk::adamw_unfused<bf16>(params.data(), master.data(), m.data(), v.data(),
                                       grads.data(), chain_scratch.data(), plan, {}, scalars.data(),
                                       nullptr);
             },
             5),
         adam_bytes);
}

TEST_F(TrainBandwidth, DISABLED_CrossEntropyAndEmbedding) {
  const int B = 64, S = 128, N = B * S, C = 1024;
  for (int V : {30522, 50257}) {
    const int ldv = (V + 7) / 8 * 8;
    xfbench::DeviceBuffer<bf16> logits(std::size_t(N) * ldv);
    xfbench::fill_uniform(logits, xfbench::Dtype::bf16, 3, -4, 4, nullptr);
    std::vector<int> t(N);
    for (int i = 0; i < N; ++i) t[i] = (i * 7919) % V;
    DevInts targets(t);
    xfbench::DeviceBuffer<float> losses(N);
    report("cross_entropy", std::to_string(N) + " x " + std::to_string(V), time_ms([&] {
             xk::cross_entropy_forward_backward<bf16>(losses.data(), logits.data(), targets.get(),
                                                      N, V, ldv, 1.f, N, nullptr, nullptr);
           }),
           4.0 * N * ldv);
  }
  const int V = 30522;
  std::vector<int> ids(N), types(N);
  for (int i = 0; i < N; ++i) ids[i] = i % 5 == 0 ? 103 : (i * 7919) % V, types[i] = i % 2;
  DevInts d_ids(ids), d_types(types);
  xfbench::DeviceBuffer<bf16> word(std::size_t(V) * C), pos(512 * C), type(2 * C),
      out(std::size_t(N) * C);
  xfbench::fill_uniform(word, xfbench::Dtype::bf16, 4, -1, 1, nullptr);
  xfbench::fill_uniform(pos, xfbench::Dtype::bf16, 5, -1, 1, nullptr);
  xfbench::fill_uniform(type, xfbench::Dtype::bf16, 6, -1, 1, nullptr);
  const std::string shape = "b64 s128 h1024 V30522";
  report("embedding_forward", shape, time_ms([&] {
           xk::embedding_forward<bf16>(out.data(), d_ids.get(), d_types.get(), word.data(),
                                       pos.data(), type.data(), B, S, C, V, nullptr);
         }),
         2.0 * 2 * N * C);
  xfbench::DeviceBuffer<char> scratch(xk::embedding_backward_scratch_bytes(B, S, C, V, 2));
  report("embedding_backward", shape + " (20% one id)", time_ms([&] {
           xk::embedding_backward<bf16>(word.data(), pos.data(), type.data(), scratch.data(),
                                        out.data(), d_ids.get(), d_types.get(), B, S, C, V, 2,
                                        nullptr);
         }),
         2.0 * 3 * N * C);  // dout once, the touched word rows read and written (at most)
}

}  // namespace
