// Float64 RoPE reference (see rope_ref.hpp).
#include "kernels/reference/rope_ref.hpp"

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "xfbench/error.hpp"

namespace xfbench::kernels::ref {
namespace {

// sign +1: the forward rotation by a; -1: by -a (the transpose).
void rotate(double* qkv, const RopeConfig& config, int tokens, int seq, int NH, int NKV, int D,
            double sign) {
  if (seq < 1 || tokens < 0 || tokens % seq != 0 || NH < 1 || NKV < 1)
    XF_THROW(InvalidArgument, "RoPE reference: tokens " + std::to_string(tokens) + ", seq " +
                                  std::to_string(seq) + ", NH " + std::to_string(NH) + ", NKV " +
                                  std::to_string(NKV));
  const std::vector<double> f = rope_inv_freq(config, D);  // checks D
  const int half = D / 2;
  const std::size_t width = std::size_t(NH + 2 * NKV) * D;
  std::vector<double> c(half), s(half);
  for (int r = 0; r < tokens; ++r) {
    const int p = r % seq;
    for (int i = 0; i < half; ++i) {
      c[i] = std::cos(p * f[i]);
      s[i] = sign * std::sin(p * f[i]);
    }
    for (int h = 0; h < NH + NKV; ++h) {
      double* x = qkv + r * width + std::size_t(h) * D;
      for (int i = 0; i < half; ++i) {
        const double a = x[i], b = x[i + half];
        x[i] = a * c[i] - b * s[i];
        x[i + half] = b * c[i] + a * s[i];
      }
    }
  }
}

}  // namespace

void rope_forward(double* qkv, const RopeConfig& config, int tokens, int seq, int NH, int NKV,
                  int D) {
  rotate(qkv, config, tokens, seq, NH, NKV, D, 1.0);
}

void rope_backward(double* dqkv, const RopeConfig& config, int tokens, int seq, int NH, int NKV,
                   int D) {
  rotate(dqkv, config, tokens, seq, NH, NKV, D, -1.0);
}

}  // namespace xfbench::kernels::ref
