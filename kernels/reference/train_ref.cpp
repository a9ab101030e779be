// Float64 references of the training-step kernels (see train_ref.hpp).
#include "kernels/reference/train_ref.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/cross_entropy.hpp"

namespace xfbench::kernels::ref {

void embedding_forward(double* out, const int* ids, const int* type_ids, const double* word,
                       const double* position, const double* type, int B, int S, int C) {
  for (std::size_t r = 0; r < std::size_t(B) * S; ++r)
    for (int c = 0; c < C; ++c)
      out[r * C + c] = word[std::size_t(ids[r]) * C + c] +
                       (position ? position[(r % S) * C + c] : 0.0) +
                       (type ? type[std::size_t(type_ids[r]) * C + c] : 0.0);
}

void embedding_backward(double* dword, double* dposition, double* dtype, const double* dout,
                        const int* ids, const int* type_ids, int B, int S, int C) {
  for (std::size_t r = 0; r < std::size_t(B) * S; ++r)
    for (int c = 0; c < C; ++c) {
      const double d = dout[r * C + c];
      if (dword) dword[std::size_t(ids[r]) * C + c] += d;
      if (dposition) dposition[(r % S) * C + c] += d;
      if (dtype) dtype[std::size_t(type_ids[r]) * C + c] += d;
    }
}

void cross_entropy(double* losses, double* dlogits, const double* logits, const int* targets, int N,
                   int V, double scale) {
  for (int i = 0; i < N; ++i) {
    const double* x = logits + std::size_t(i) * V;
    double* d = dlogits ? dlogits + std::size_t(i) * V : nullptr;
    if (targets[i] == kIgnoreIndex) {
      losses[i] = 0;
      if (d) std::fill(d, d + V, 0.0);
      continue;
    }
    const double mx = *std::max_element(x, x + V);
    double sum = 0;
    for (int j = 0; j < V; ++j) sum += std::exp(x[j] - mx);
    losses[i] = std::log(sum) + mx - x[targets[i]];
    if (d)
      for (int j = 0; j < V; ++j)
        d[j] = (std::exp(x[j] - mx) / sum - (j == targets[i] ? 1.0 : 0.0)) * scale;
  }
}

double global_norm(const double* g, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += g[i] * g[i];
  return std::sqrt(s);
}

void adamw_step(double* p, double* m, double* v, const double* g, std::size_t n,
                const AdamWConfig& config, bool decay, int step) {
  const double lr = config.lr, b1 = config.beta1, b2 = config.beta2, eps = config.eps;
  const double wd = decay ? config.weight_decay : 0.0;
  const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] *= 1 - lr * wd;
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    p[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + eps);
  }
}

}  // namespace xfbench::kernels::ref
