// Float64 CPU references (see reference.hpp). Straightforward loops: clarity over speed.
#include "kernels/reference/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace xfbench::kernels::ref {
namespace {

// 1 / (1 - p) in float64 from the Dropout itself (the kernels use the fp32 rounding of it).
double kept_factor(const Dropout& d) { return 1.0 / (1.0 - static_cast<double>(d.p)); }

}  // namespace

void norm_forward(double* out, double* z, double* mean, double* rstd, const double* x,
                  const double* xbias, const double* residual, const double* weight,
                  const double* bias, Dropout dropout, int N, int C, double eps, bool rms) {
  const DropoutMask m(dropout);
  std::vector<double> zr(C);
  for (int r = 0; r < N; ++r) {
    const std::size_t off = std::size_t(r) * C;
    double sum = 0;
    for (int c = 0; c < C; ++c) {
      double v = x[off + c] + (xbias ? xbias[c] : 0.0);
      if (m.active()) v = m.keep(off + c) ? v * kept_factor(dropout) : 0.0;
      v += residual ? residual[off + c] : 0.0;
      zr[c] = v;
      sum += v;
      if (z) z[off + c] = v;
    }
    const double mu = rms ? 0.0 : sum / C;
    double sq = 0;
    for (int c = 0; c < C; ++c) sq += (zr[c] - mu) * (zr[c] - mu);
    const double rs = 1.0 / std::sqrt(sq / C + eps);
    if (mean) mean[r] = mu;
    if (rstd) rstd[r] = rs;
    for (int c = 0; c < C; ++c)
      out[off + c] = (zr[c] - mu) * rs * weight[c] + (!rms && bias ? bias[c] : 0.0);
  }
}

void norm_backward(double* dz, double* dx, double* dxbias, double* dweight, double* dbias,
                   const double* dout, const double* dout2, const double* dresidual,
                   const double* z, const double* weight, Dropout dropout, int N, int C, double eps,
                   bool rms) {
  const DropoutMask m(dropout);
  std::vector<double> dw(C, 0.0), db(C, 0.0), dxb(C, 0.0), xh(C), dy(C);
  for (int r = 0; r < N; ++r) {
    const std::size_t off = std::size_t(r) * C;
    double sum = 0;
    for (int c = 0; c < C; ++c) sum += z[off + c];
    const double mu = rms ? 0.0 : sum / C;
    double sq = 0;
    for (int c = 0; c < C; ++c) sq += (z[off + c] - mu) * (z[off + c] - mu);
    const double rs = 1.0 / std::sqrt(sq / C + eps);
    double mg = 0, mgx = 0;
    for (int c = 0; c < C; ++c) {
      xh[c] = (z[off + c] - mu) * rs;
      dy[c] = dout[off + c] + (dout2 ? dout2[off + c] : 0.0);
      const double g = dy[c] * weight[c];
      mg += g;
      mgx += g * xh[c];
      dw[c] += dy[c] * xh[c];
      db[c] += dy[c];
    }
    mg = rms ? 0.0 : mg / C;
    mgx /= C;
    for (int c = 0; c < C; ++c) {
      double d = rs * (dy[c] * weight[c] - mg - xh[c] * mgx);
      d += dresidual ? dresidual[off + c] : 0.0;
      if (dz) dz[off + c] = d;
      if (m.active()) d = m.keep(off + c) ? d * kept_factor(dropout) : 0.0;
      if (dx) dx[off + c] = d;
      dxb[c] += d;
    }
  }
  for (int c = 0; c < C; ++c) {
    if (dweight) dweight[c] = dw[c];
    if (dbias) dbias[c] = db[c];
    if (dxbias) dxbias[c] = dxb[c];
  }
}

double gelu(double x, Gelu kind) {
  if (kind == Gelu::erf) return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double gelu_grad(double x, Gelu kind) {
  if (kind == Gelu::erf)
    return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) +
           x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
  const double k = std::sqrt(2.0 / M_PI);
  const double t = std::tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

double silu_grad(double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  return s * (1.0 + x * (1.0 - s));
}

void bias_dropout_residual(double* out, const double* x, const double* bias, const double* residual,
                           Dropout dropout, int N, int C) {
  const DropoutMask m(dropout);
  for (std::size_t i = 0; i < std::size_t(N) * C; ++i) {
    double v = x[i] + (bias ? bias[i % C] : 0.0);
    if (m.active()) v = m.keep(i) ? v * kept_factor(dropout) : 0.0;
    out[i] = v + (residual ? residual[i] : 0.0);
  }
}

void dropout_bias_backward(double* dx, double* dbias, const double* dout, Dropout dropout, int N,
                           int C) {
  const DropoutMask m(dropout);
  if (dbias) std::fill(dbias, dbias + C, 0.0);
  for (std::size_t i = 0; i < std::size_t(N) * C; ++i) {
    double d = dout[i];
    if (m.active()) d = m.keep(i) ? d * kept_factor(dropout) : 0.0;
    if (dx) dx[i] = d;
    if (dbias) dbias[i % C] += d;
  }
}

void attention_softmax_forward(double* probs, double* probs_dropped, const double* scores,
                               const double* mask, const double* bias, double scale, bool causal,
                               Dropout dropout, int B, int NH, int Sq, int Sk) {
  const DropoutMask m(dropout);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> x(Sk);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < Sq; ++i) {
        const std::size_t row = ((std::size_t(b) * NH + h) * Sq + i) * Sk;
        double mx = -inf;
        for (int j = 0; j < Sk; ++j) {
          x[j] = scale * scores[row + j] + (mask ? mask[std::size_t(b) * Sk + j] : 0.0) +
                 (bias ? bias[(std::size_t(h) * Sq + i) * Sk + j] : 0.0);
          if (causal && j > i + Sk - Sq) x[j] = -inf;
          mx = std::max(mx, x[j]);
        }
        if (mx == -inf) mx = 0;
        double sum = 0;
        for (int j = 0; j < Sk; ++j) sum += (x[j] = std::exp(x[j] - mx));
        for (int j = 0; j < Sk; ++j) {
          const double p = sum > 0 ? x[j] / sum : 0.0;
          if (probs) probs[row + j] = p;
          if (probs_dropped)
            probs_dropped[row + j] =
                m.active() ? (m.keep(row + j) ? p * kept_factor(dropout) : 0.0) : p;
        }
      }
}

void attention_softmax_backward(double* dscores, const double* dprobs_dropped, const double* probs,
                                double scale, Dropout dropout, int B, int NH, int Sq, int Sk) {
  const DropoutMask m(dropout);
  std::vector<double> dp(Sk);
  for (std::size_t row = 0; row < std::size_t(B) * NH * Sq * Sk; row += Sk) {
    double dot = 0;
    for (int j = 0; j < Sk; ++j) {
      dp[j] = dprobs_dropped[row + j];
      if (m.active()) dp[j] = m.keep(row + j) ? dp[j] * kept_factor(dropout) : 0.0;
      dot += dp[j] * probs[row + j];
    }
    for (int j = 0; j < Sk; ++j) dscores[row + j] = scale * probs[row + j] * (dp[j] - dot);
  }
}

namespace {

// Index of the K/V head (b, h / group) that query head bh = b·NH + h reads.
std::size_t kv_index(const AttentionRef& a, int bh) {
  const int nkv = a.NKV ? a.NKV : a.NH;
  return std::size_t(bh / a.NH) * nkv + (bh % a.NH) / (a.NH / nkv);
}

// The last key query i sees: all of them, or under the causal mask i + Sk - Sq. The products
// below skip the keys after it, whose probabilities are exactly 0: the same sums, bit for bit (a
// long causal sequence costs half as much).
int last_key(const AttentionRef& a, int i) {
  return a.causal ? std::min(a.Sk - 1, i + a.Sk - a.Sq) : a.Sk - 1;
}

// P (pre-dropout) and dropout(P) of every (b, h), [B, NH, Sq, Sk].
void attention_probs(std::vector<double>& p, std::vector<double>& pd, const double* q,
                     const double* k, const AttentionRef& a) {
  const std::size_t ss = std::size_t(a.Sq) * a.Sk;
  std::vector<double> scores(std::size_t(a.B) * a.NH * ss), mask;
  for (int bh = 0; bh < a.B * a.NH; ++bh)
    for (int i = 0; i < a.Sq; ++i)
      for (int j = 0; j <= last_key(a, i); ++j) {
        double s = 0;
        for (int d = 0; d < a.HD; ++d)
          s += q[(std::size_t(bh) * a.Sq + i) * a.HD + d] *
               k[(kv_index(a, bh) * a.Sk + j) * a.HD + d];
        scores[bh * ss + std::size_t(i) * a.Sk + j] = s;
      }
  if (a.kv_lens) {
    mask.assign(std::size_t(a.B) * a.Sk, 0.0);
    for (int b = 0; b < a.B; ++b)
      for (int j = a.kv_lens[b]; j < a.Sk; ++j)
        mask[std::size_t(b) * a.Sk + j] = -std::numeric_limits<double>::infinity();
  }
  p.resize(scores.size());
  pd.resize(scores.size());
  attention_softmax_forward(p.data(), pd.data(), scores.data(), a.kv_lens ? mask.data() : nullptr,
                            a.bias, a.scale, a.causal, a.dropout, a.B, a.NH, a.Sq, a.Sk);
}

}  // namespace

void attention_forward(double* o, const double* q, const double* k, const double* v,
                       const AttentionRef& a) {
  std::vector<double> p, pd;
  attention_probs(p, pd, q, k, a);
  const std::size_t ss = std::size_t(a.Sq) * a.Sk;
  for (int bh = 0; bh < a.B * a.NH; ++bh)
    for (int i = 0; i < a.Sq; ++i)
      for (int d = 0; d < a.HD; ++d) {
        double s = 0;
        for (int j = 0; j <= last_key(a, i); ++j)
          s += pd[bh * ss + std::size_t(i) * a.Sk + j] * v[(kv_index(a, bh) * a.Sk + j) * a.HD + d];
        o[(std::size_t(bh) * a.Sq + i) * a.HD + d] = s;
      }
}

void attention_backward(double* dq, double* dk, double* dv, const double* dout, const double* q,
                        const double* k, const double* v, const AttentionRef& a) {
  attention_backward(dq, dk, dv, nullptr, dout, q, k, v, a);
}

void attention_backward(double* dq, double* dk, double* dv, double* dbias, const double* dout,
                        const double* q, const double* k, const double* v, const AttentionRef& a) {
  std::vector<double> p, pd;
  attention_probs(p, pd, q, k, a);
  const std::size_t ss = std::size_t(a.Sq) * a.Sk;
  std::vector<double> dpd(p.size()), ds(p.size());
  // dK, dV sum over the query heads of a K/V head: zeroed, then added to.
  const std::size_t kv_n = std::size_t(a.B) * (a.NKV ? a.NKV : a.NH) * a.Sk * a.HD;
  std::fill(dk, dk + kv_n, 0.0);
  std::fill(dv, dv + kv_n, 0.0);
  // Sums over the queries i run in ascending i into a per-head row buffer (query-major: the
  // cache-friendly order), then join dK / dV: the same sums as one (j, d) at a time.
  std::vector<double> acc(std::size_t(a.Sk) * a.HD);
  auto add_over_queries = [&](double* out, const double* rows_of_i, const double* by_i, int bh) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int i = 0; i < a.Sq; ++i)
      for (int j = 0; j <= last_key(a, i); ++j) {
        const double w = rows_of_i[bh * ss + std::size_t(i) * a.Sk + j];
        for (int d = 0; d < a.HD; ++d) acc[std::size_t(j) * a.HD + d] += w * by_i[i * a.HD + d];
      }
    for (std::size_t e = 0; e < acc.size(); ++e) out[e] += acc[e];
  };
  for (int bh = 0; bh < a.B * a.NH; ++bh) {
    const double* dO = dout + std::size_t(bh) * a.Sq * a.HD;
    const double* V = v + kv_index(a, bh) * a.Sk * a.HD;
    for (int i = 0; i < a.Sq; ++i)
      for (int j = 0; j <= last_key(a, i); ++j) {
        double s = 0;
        for (int d = 0; d < a.HD; ++d) s += dO[i * a.HD + d] * V[j * a.HD + d];
        dpd[bh * ss + std::size_t(i) * a.Sk + j] = s;
      }
    add_over_queries(dv + kv_index(a, bh) * a.Sk * a.HD, pd.data(), dO, bh);
  }
  // dS with respect to the scaled scores, then the scale of the score product.
  attention_softmax_backward(ds.data(), dpd.data(), p.data(), a.scale, a.dropout, a.B, a.NH, a.Sq,
                             a.Sk);
  if (dbias) {  // dS is the gradient of scale · scores, the bias adds to it with factor 1
    std::fill(dbias, dbias + std::size_t(a.NH) * ss, 0.0);
    for (int bh = 0; bh < a.B * a.NH; ++bh)
      for (std::size_t e = 0; e < ss; ++e) dbias[(bh % a.NH) * ss + e] += ds[bh * ss + e] / a.scale;
  }
  for (int bh = 0; bh < a.B * a.NH; ++bh) {
    const double* Q = q + std::size_t(bh) * a.Sq * a.HD;
    const double* K = k + kv_index(a, bh) * a.Sk * a.HD;
    double* dQ = dq + std::size_t(bh) * a.Sq * a.HD;
    double* dK = dk + kv_index(a, bh) * a.Sk * a.HD;
    for (int i = 0; i < a.Sq; ++i) {  // each dQ row summed over the keys in ascending j
      double* row = dQ + std::size_t(i) * a.HD;
      std::fill(row, row + a.HD, 0.0);
      for (int j = 0; j <= last_key(a, i); ++j) {
        const double w = ds[bh * ss + std::size_t(i) * a.Sk + j];
        for (int d = 0; d < a.HD; ++d) row[d] += w * K[j * a.HD + d];
      }
    }
    add_over_queries(dK, ds.data(), Q, bh);
  }
}

}  // namespace xfbench::kernels::ref
