#include "kernels/reference/bert_layer_ref.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/reference/reference.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels::ref {
namespace {

using Vec = std::vector<double>;

// C[m,n] (+)= A[m,k]·B[n,k]ᵀ : y = x·Wᵀ.
void matmul_nt(double* c, const double* a, const double* b, int m, int n, int k, bool add = false) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) s += a[std::size_t(i) * k + p] * b[std::size_t(j) * k + p];
      c[std::size_t(i) * n + j] = add ? c[std::size_t(i) * n + j] + s : s;
    }
  }
}
// C[m,n] (+)= A[m,k]·B[k,n] : dx = dy·W.
void matmul_nn(double* c, const double* a, const double* b, int m, int n, int k, bool add = false) {
  if (!add) std::fill(c, c + std::size_t(m) * n, 0.0);
  for (int i = 0; i < m; ++i) {
    for (int p = 0; p < k; ++p) {
      const double av = a[std::size_t(i) * k + p];
      for (int j = 0; j < n; ++j) c[std::size_t(i) * n + j] += av * b[std::size_t(p) * n + j];
    }
  }
}
// C[m,n] = A[k,m]ᵀ·B[k,n] : dW = dyᵀ·x.
void matmul_tn(double* c, const double* a, const double* b, int m, int n, int k) {
  std::fill(c, c + std::size_t(m) * n, 0.0);
  for (int p = 0; p < k; ++p) {
    for (int i = 0; i < m; ++i) {
      const double av = a[std::size_t(p) * m + i];
      for (int j = 0; j < n; ++j) c[std::size_t(i) * n + j] += av * b[std::size_t(p) * n + j];
    }
  }
}
void add_bias(double* y, const double* b, int rows, int cols) {
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) y[std::size_t(i) * cols + j] += b[j];
}
Vec column_sums(const double* y, int rows, int cols) {
  Vec s(cols, 0.0);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) s[j] += y[std::size_t(i) * cols + j];
  return s;
}

const Vec& get(const Tensors& t, const char* name) {
  auto it = t.find(name);
  if (it == t.end())
    XF_THROW(InvalidArgument, std::string("bert reference: missing tensor ") + name);
  return it->second;
}

// Packed [B, S, 3, NH, HD] qkv <-> dense [B, NH, S, HD] q, k, v.
void unpack(const Vec& qkv, Vec& q, Vec& k, Vec& v, int B, int S, int NH, int HD) {
  Vec* dst[3] = {&q, &k, &v};
  for (auto* d : dst) d->assign(std::size_t(B) * NH * S * HD, 0.0);
  for (int b = 0; b < B; ++b)
    for (int s = 0; s < S; ++s)
      for (int w = 0; w < 3; ++w)
        for (int h = 0; h < NH; ++h)
          for (int e = 0; e < HD; ++e)
            (*dst[w])[((std::size_t(b) * NH + h) * S + s) * HD + e] =
                qkv[(((std::size_t(b) * S + s) * 3 + w) * NH + h) * HD + e];
}
void pack(Vec& qkv, const Vec& q, const Vec& k, const Vec& v, int B, int S, int NH, int HD) {
  const Vec* src[3] = {&q, &k, &v};
  qkv.assign(std::size_t(B) * S * 3 * NH * HD, 0.0);
  for (int b = 0; b < B; ++b)
    for (int s = 0; s < S; ++s)
      for (int w = 0; w < 3; ++w)
        for (int h = 0; h < NH; ++h)
          for (int e = 0; e < HD; ++e)
            qkv[(((std::size_t(b) * S + s) * 3 + w) * NH + h) * HD + e] =
                (*src[w])[((std::size_t(b) * NH + h) * S + s) * HD + e];
}
// [B, NH, S, HD] <-> [B, S, NH, HD] (= [T, H]).
Vec heads_to_tokens(const Vec& o, int B, int S, int NH, int HD) {
  Vec t(o.size());
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int s = 0; s < S; ++s)
        for (int e = 0; e < HD; ++e)
          t[((std::size_t(b) * S + s) * NH + h) * HD + e] =
              o[((std::size_t(b) * NH + h) * S + s) * HD + e];
  return t;
}
Vec tokens_to_heads(const Vec& t, int B, int S, int NH, int HD) {
  Vec o(t.size());
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int s = 0; s < S; ++s)
        for (int e = 0; e < HD; ++e)
          o[((std::size_t(b) * NH + h) * S + s) * HD + e] =
              t[((std::size_t(b) * S + s) * NH + h) * HD + e];
  return o;
}

struct Sizes {
  int T, H, I, B, S, NH, HD;
};

AttentionRef attention_ref(const BertConfig& c) {
  return AttentionRef{
      c.batch, c.heads, c.seq,   c.seq,    c.head_dim(), 1.0 / std::sqrt(double(c.head_dim())),
      false,   nullptr, nullptr, Dropout{}};
}

// x -> h1; saves what the backward needs in `keep`.
Vec attention_fwd(const BertConfig& c, const Sizes& z, const Tensors& in, const Vec& x,
                  Tensors& keep) {
  Vec qkv(std::size_t(z.T) * 3 * z.H);
  matmul_nt(qkv.data(), x.data(), get(in, "wqkv").data(), z.T, 3 * z.H, z.H);
  add_bias(qkv.data(), get(in, "bqkv").data(), z.T, 3 * z.H);
  Vec q, k, v;
  unpack(qkv, q, k, v, z.B, z.S, z.NH, z.HD);
  Vec o(q.size());
  attention_forward(o.data(), q.data(), k.data(), v.data(), attention_ref(c));
  Vec ctx = heads_to_tokens(o, z.B, z.S, z.NH, z.HD);
  Vec proj(std::size_t(z.T) * z.H);
  matmul_nt(proj.data(), ctx.data(), get(in, "wo").data(), z.T, z.H, z.H);
  Vec h1(proj.size()), z1(proj.size()), mean(z.T), rstd(z.T);
  norm_forward(h1.data(), z1.data(), mean.data(), rstd.data(), proj.data(), get(in, "bo").data(),
               x.data(), get(in, "ln1_w").data(), get(in, "ln1_b").data(), Dropout{}, z.T, z.H,
               c.eps, false);
  keep["q"] = q, keep["k"] = k, keep["v"] = v, keep["ctx"] = ctx, keep["z1"] = z1;
  return h1;
}

// dh1 -> dx (+ parameter gradients into `out`).
Vec attention_bwd(const BertConfig& c, const Sizes& z, const Tensors& in, const Vec& x,
                  const Vec& dh1, const Tensors& keep, Tensors& out) {
  Vec dx(dh1.size()), dproj(dh1.size()), dbo(z.H), dw(z.H), db(z.H);
  norm_backward(dx.data(), dproj.data(), dbo.data(), dw.data(), db.data(), dh1.data(), nullptr,
                nullptr, get(keep, "z1").data(), get(in, "ln1_w").data(), Dropout{}, z.T, z.H,
                c.eps, false);
  out["dbo"] = dbo, out["dln1_w"] = dw, out["dln1_b"] = db;
  Vec dwo(std::size_t(z.H) * z.H), dctx(dh1.size());
  matmul_tn(dwo.data(), dproj.data(), get(keep, "ctx").data(), z.H, z.H, z.T);
  matmul_nn(dctx.data(), dproj.data(), get(in, "wo").data(), z.T, z.H, z.H);
  out["dwo"] = dwo;
  Vec dO = tokens_to_heads(dctx, z.B, z.S, z.NH, z.HD);
  Vec dq(dO.size()), dk(dO.size()), dv(dO.size());
  attention_backward(dq.data(), dk.data(), dv.data(), dO.data(), get(keep, "q").data(),
                     get(keep, "k").data(), get(keep, "v").data(), attention_ref(c));
  Vec dqkv;
  pack(dqkv, dq, dk, dv, z.B, z.S, z.NH, z.HD);
  Vec dwqkv(std::size_t(3) * z.H * z.H);
  matmul_tn(dwqkv.data(), dqkv.data(), x.data(), 3 * z.H, z.H, z.T);
  out["dwqkv"] = dwqkv;
  out["dbqkv"] = column_sums(dqkv.data(), z.T, 3 * z.H);
  matmul_nn(dx.data(), dqkv.data(), get(in, "wqkv").data(), z.T, z.H, 3 * z.H, true);
  return dx;
}

// in -> out for the ffn half (or the dense parts, whose output is [T, I]).
Vec ffn_fwd(const BertConfig& c, BertPart part, const Sizes& z, const Tensors& in, const Vec& x,
            Tensors& keep) {
  Vec pre(std::size_t(z.T) * z.I);
  matmul_nt(pre.data(), x.data(), get(in, "wi").data(), z.T, z.I, z.H);
  add_bias(pre.data(), get(in, "bi").data(), z.T, z.I);  // pre-activation including its bias
  if (part == BertPart::dense) return pre;
  Vec act(pre.size());
  for (std::size_t i = 0; i < pre.size(); ++i) act[i] = gelu(pre[i], c.gelu);
  if (part == BertPart::dense_gelu) return act;
  Vec o2(std::size_t(z.T) * z.H);
  matmul_nt(o2.data(), act.data(), get(in, "wout").data(), z.T, z.H, z.I);
  Vec y(o2.size()), z2(o2.size()), mean(z.T), rstd(z.T);
  norm_forward(y.data(), z2.data(), mean.data(), rstd.data(), o2.data(), get(in, "bout").data(),
               x.data(), get(in, "ln2_w").data(), get(in, "ln2_b").data(), Dropout{}, z.T, z.H,
               c.eps, false);
  keep["pre"] = pre, keep["act"] = act, keep["z2"] = z2;
  return y;
}

Vec ffn_bwd(const BertConfig& c, const Sizes& z, const Tensors& in, const Vec& x, const Vec& dout,
            const Tensors& keep, Tensors& out) {
  Vec dx(dout.size()), do2(dout.size()), dbout(z.H), dw(z.H), db(z.H);
  norm_backward(dx.data(), do2.data(), dbout.data(), dw.data(), db.data(), dout.data(), nullptr,
                nullptr, get(keep, "z2").data(), get(in, "ln2_w").data(), Dropout{}, z.T, z.H,
                c.eps, false);
  out["dbout"] = dbout, out["dln2_w"] = dw, out["dln2_b"] = db;
  Vec dwout(std::size_t(z.H) * z.I), dact(std::size_t(z.T) * z.I);
  matmul_tn(dwout.data(), do2.data(), get(keep, "act").data(), z.H, z.I, z.T);
  matmul_nn(dact.data(), do2.data(), get(in, "wout").data(), z.T, z.I, z.H);
  out["dwout"] = dwout;
  const Vec& pre = get(keep, "pre");
  for (std::size_t i = 0; i < dact.size(); ++i) dact[i] *= gelu_grad(pre[i], c.gelu);
  out["dbi"] = column_sums(dact.data(), z.T, z.I);
  Vec dwi(std::size_t(z.I) * z.H);
  matmul_tn(dwi.data(), dact.data(), x.data(), z.I, z.H, z.T);
  out["dwi"] = dwi;
  matmul_nn(dx.data(), dact.data(), get(in, "wi").data(), z.T, z.H, z.I, true);
  return dx;
}

}  // namespace

void bert_layer(const BertConfig& c, BertPart part, const Tensors& in, bool backward,
                Tensors& out) {
  const Sizes z{c.tokens(), c.hidden, c.intermediate, c.batch, c.seq, c.heads, c.head_dim()};
  const Vec& x = get(in, "x");
  Tensors keep;
  switch (part) {
    case BertPart::layer: {
      Vec h1 = attention_fwd(c, z, in, x, keep);
      out["out"] = ffn_fwd(c, part, z, in, h1, keep);
      if (backward) {
        Vec dh1 = ffn_bwd(c, z, in, h1, get(in, "dout"), keep, out);
        out["dx"] = attention_bwd(c, z, in, x, dh1, keep, out);
      }
      break;
    }
    case BertPart::attention:
      out["out"] = attention_fwd(c, z, in, x, keep);
      if (backward) out["dx"] = attention_bwd(c, z, in, x, get(in, "dout"), keep, out);
      break;
    default:
      out["out"] = ffn_fwd(c, part, z, in, x, keep);
      if (backward) out["dx"] = ffn_bwd(c, z, in, x, get(in, "dout"), keep, out);
      break;
  }
}

}  // namespace xfbench::kernels::ref
