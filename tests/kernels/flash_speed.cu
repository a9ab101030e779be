// xfbench's flash attention against cuDNN's SDPA (both as the blocks call them: packed bshd QKV,
// causal, bf16, no dropout), forward (head dim 128 also without its overlap: FlashKernel::lockstep)
// and backward, at the Llama and GPT-2 shapes; the two
// outputs and gradients checked against each other (largest difference over the largest value).
// Not a test and not the benchmark protocol (launch_timing.hpp): run by hand on the device to rank
// kernel versions; prints one JSON object per line. TFLOPS count the causal half of the products
// (forward 2·B·NH·S²·HD, backward twice that: attention_core_flops / 2).
//   flash_speed [--out=file.jsonl]
#include <cuda_bf16.h>

#include <algorithm>
#include <string>

#include "kernels/attention.hpp"
#include "launch_timing.hpp"
#include "speed_lines.hpp"
#include "xfbench/memory.hpp"

namespace xk = xfbench::kernels;
using T = __nv_bfloat16;

namespace {

const xftest::JsonLines* g_out = nullptr;

void shape(const char* name, int B, int NH, int NKV, int S, int HD) {
  const xk::AttentionDesc d = [&] {
    xk::AttentionDesc a =
        xk::self_attention_desc(xk::Precision::bf16, B, NH, S, HD, xk::QkvLayout::bshd, NKV);
    a.causal = true;
    return a;
  }();
  const std::string label =
      std::string(name) + " B=" + std::to_string(B) + " S=" + std::to_string(S);
  const double fwd_flop = xk::attention_core_flops(d) / 2;  // the causal half
  const std::size_t qkv_n = std::size_t(B) * S * (NH + 2 * NKV) * HD;
  const std::size_t o_n = std::size_t(B) * S * NH * HD;
  xfbench::DeviceBuffer<T> qkv(qkv_n), o_f(o_n), o_l(o_n), o_c(o_n), dout(o_n), dqkv_f(qkv_n),
      dqkv_c(qkv_n);
  xfbench::fill_uniform(qkv.data(), qkv_n, xfbench::Dtype::bf16, 1, -1.0, 1.0, nullptr);
  xfbench::fill_uniform(dout.data(), o_n, xfbench::Dtype::bf16, 2, -1.0, 1.0, nullptr);
  const auto at = [&](T* base, int which) {
    return base + xk::qkv_offset(xk::QkvLayout::bshd, which, NH, HD, NKV);
  };
  const xk::Dropout none{0.f, 0, 0};

  xk::FlashAttention flash(d), lockstep(d, xk::FlashKernel::lockstep);
  xfbench::DeviceBuffer<float> lse(flash.stats_elements()), delta(flash.scratch_elements());
  const xk::FlashSaved saved{lse.data(), nullptr};
  xk::CudnnAttention cudnn(d);
  xfbench::DeviceBuffer<float> stats(cudnn.stats_elements());
  xfbench::DeviceBuffer<char> ws(std::max<std::size_t>(cudnn.workspace_bytes(), 1));

  auto flash_fwd = [&] {
    flash.forward(o_f.data(), saved, at(qkv.data(), 0), at(qkv.data(), 1), at(qkv.data(), 2),
                  nullptr, none, nullptr);
  };
  auto lockstep_fwd = [&] {  // head dim 128 without the overlap (at 64: the same kernel)
    lockstep.forward(o_l.data(), saved, at(qkv.data(), 0), at(qkv.data(), 1), at(qkv.data(), 2),
                     nullptr, none, nullptr);
  };
  auto cudnn_fwd = [&] {
    cudnn.forward(o_c.data(), stats.data(), at(qkv.data(), 0), at(qkv.data(), 1), at(qkv.data(), 2),
                  nullptr, nullptr, none, ws.data(), nullptr);
  };
  auto flash_bwd = [&] {
    flash.backward(at(dqkv_f.data(), 0), at(dqkv_f.data(), 1), at(dqkv_f.data(), 2), delta.data(),
                   dout.data(), o_f.data(), saved, at(qkv.data(), 0), at(qkv.data(), 1),
                   at(qkv.data(), 2), none, nullptr);
  };
  auto cudnn_bwd = [&] {
    cudnn.backward(at(dqkv_c.data(), 0), at(dqkv_c.data(), 1), at(dqkv_c.data(), 2), dout.data(),
                   o_c.data(), stats.data(), at(qkv.data(), 0), at(qkv.data(), 1),
                   at(qkv.data(), 2), nullptr, nullptr, none, ws.data(), nullptr);
  };
  flash_fwd(), lockstep_fwd(), cudnn_fwd(), flash_bwd(), cudnn_bwd();
  const double d_o = xftest::max_rel_diff(o_f.data(), o_c.data(), o_n);
  const double d_l = xftest::max_rel_diff(o_l.data(), o_c.data(), o_n);
  const double d_g = xftest::max_rel_diff(dqkv_f.data(), dqkv_c.data(), qkv_n);
  const auto t =
      xftest::best_alternating({flash_fwd, lockstep_fwd, cudnn_fwd, flash_bwd, cudnn_bwd}, 20);
  g_out->product(label, "fwd flash", t[0], fwd_flop, d_o);
  g_out->product(label, "fwd flash lockstep", t[1], fwd_flop, d_l);
  g_out->product(label, "fwd cudnn", t[2], fwd_flop, 0);
  g_out->product(label, "bwd flash", t[3], 2 * fwd_flop, d_g);
  g_out->product(label, "bwd cudnn", t[4], 2 * fwd_flop, 0);
}

}  // namespace

int main(int argc, char** argv) {
  const xftest::JsonLines out(argc, argv);
  g_out = &out;
  // llama-3.2-1b (32:8 heads of 64), llama-3.1-8b (32:8 of 128), llama-3.2-3b (24:8 of 128),
  // gpt2-medium (16 heads of 64).
  for (int s : {2048, 4096, 8192}) shape("llama-3.2-1b", 4, 32, 8, s, 64);
  shape("llama-3.1-8b", 2, 32, 8, 4096, 128);
  shape("llama-3.1-8b", 1, 32, 8, 8192, 128);
  shape("llama-3.2-3b", 1, 24, 8, 4096, 128);
  shape("gpt2-medium", 64, 16, 16, 1024, 64);
  shape("gpt2-medium", 8, 16, 16, 1024, 64);
  return 0;
}
