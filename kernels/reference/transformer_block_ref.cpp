#include "kernels/reference/transformer_block_ref.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/reference/reference.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels::ref {
namespace {

using Vec = std::vector<double>;

// C[m,n] = A[m,k]·B[k,n] : dx = dy·W.
void matmul_nn(double* c, const double* a, const double* b, int m, int n, int k) {
  std::fill(c, c + std::size_t(m) * n, 0.0);
  for (int p = 0; p < k; ++p) {  // B row by row: each is read once (the tokens are few)
    for (int i = 0; i < m; ++i) {
      const double av = a[std::size_t(i) * k + p];
      for (int j = 0; j < n; ++j) c[std::size_t(i) * n + j] += av * b[std::size_t(p) * n + j];
    }
  }
}
// C[m,n] = A[m,k]·B[n,k]ᵀ : y = x·Wᵀ (through Bᵀ, so the inner loop runs along contiguous rows).
void matmul_nt(double* c, const double* a, const double* b, int m, int n, int k) {
  std::vector<double> bt(std::size_t(k) * n);
  for (int j = 0; j < n; ++j)
    for (int p = 0; p < k; ++p) bt[std::size_t(p) * n + j] = b[std::size_t(j) * k + p];
  matmul_nn(c, a, bt.data(), m, n, k);
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
    XF_THROW(InvalidArgument, std::string("transformer block reference: missing tensor ") + name);
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

AttentionRef attention_ref(const BlockConfig& c) {
  return AttentionRef{
      c.batch,  c.heads, c.seq,   c.seq,    c.head_dim(), 1.0 / std::sqrt(double(c.head_dim())),
      c.causal, nullptr, nullptr, Dropout{}};
}

// The attention sublayer's core: a -> proj = attention(a·Wqkvᵀ + bqkv)·Woᵀ (no bo yet).
Vec attention_fwd(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& a,
                  Tensors& keep) {
  Vec qkv(std::size_t(z.T) * 3 * z.H);
  matmul_nt(qkv.data(), a.data(), get(in, "wqkv").data(), z.T, 3 * z.H, z.H);
  add_bias(qkv.data(), get(in, "bqkv").data(), z.T, 3 * z.H);
  Vec q, k, v;
  unpack(qkv, q, k, v, z.B, z.S, z.NH, z.HD);
  Vec o(q.size());
  attention_forward(o.data(), q.data(), k.data(), v.data(), attention_ref(c));
  Vec ctx = heads_to_tokens(o, z.B, z.S, z.NH, z.HD);
  Vec proj(std::size_t(z.T) * z.H);
  matmul_nt(proj.data(), ctx.data(), get(in, "wo").data(), z.T, z.H, z.H);
  keep["q"] = q, keep["k"] = k, keep["v"] = v, keep["ctx"] = ctx;
  return proj;
}

// dproj -> the gradient of a (+ dwo, dwqkv, dbqkv into `out`).
Vec attention_bwd(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& a,
                  const Vec& dproj, const Tensors& keep, Tensors& out) {
  Vec dwo(std::size_t(z.H) * z.H), dctx(dproj.size());
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
  matmul_tn(dwqkv.data(), dqkv.data(), a.data(), 3 * z.H, z.H, z.T);
  out["dwqkv"] = dwqkv;
  out["dbqkv"] = column_sums(dqkv.data(), z.T, 3 * z.H);
  Vec da(dproj.size());
  matmul_nn(da.data(), dqkv.data(), get(in, "wqkv").data(), z.T, z.H, 3 * z.H);
  return da;
}

// The FFN sublayer's core: a -> o2 = gelu(a·Wiᵀ + bi)·Woutᵀ (no bout yet); the dense parts'
// outputs are [T, I].
Vec ffn_fwd(const BlockConfig& c, BlockPart part, const Sizes& z, const Tensors& in, const Vec& a,
            Tensors& keep) {
  Vec pre(std::size_t(z.T) * z.I);
  matmul_nt(pre.data(), a.data(), get(in, "wi").data(), z.T, z.I, z.H);
  add_bias(pre.data(), get(in, "bi").data(), z.T, z.I);  // pre-activation including its bias
  if (part == BlockPart::dense) return pre;
  const Gelu kind = c.activation == Activation::gelu_tanh ? Gelu::tanh : Gelu::erf;
  Vec act(pre.size());
  for (std::size_t i = 0; i < pre.size(); ++i) act[i] = gelu(pre[i], kind);
  if (part == BlockPart::dense_gelu) return act;
  Vec o2(std::size_t(z.T) * z.H);
  matmul_nt(o2.data(), act.data(), get(in, "wout").data(), z.T, z.H, z.I);
  keep["pre"] = pre, keep["act"] = act;
  return o2;
}

// do2 -> the gradient of a (+ dwout, dwi, dbi into `out`).
Vec ffn_bwd(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& a, const Vec& do2,
            const Tensors& keep, Tensors& out) {
  Vec dwout(std::size_t(z.H) * z.I), dact(std::size_t(z.T) * z.I);
  matmul_tn(dwout.data(), do2.data(), get(keep, "act").data(), z.H, z.I, z.T);
  matmul_nn(dact.data(), do2.data(), get(in, "wout").data(), z.T, z.I, z.H);
  out["dwout"] = dwout;
  const Gelu kind = c.activation == Activation::gelu_tanh ? Gelu::tanh : Gelu::erf;
  const Vec& pre = get(keep, "pre");
  for (std::size_t i = 0; i < dact.size(); ++i) dact[i] *= gelu_grad(pre[i], kind);
  out["dbi"] = column_sums(dact.data(), z.T, z.I);
  Vec dwi(std::size_t(z.I) * z.H);
  matmul_tn(dwi.data(), dact.data(), a.data(), z.I, z.H, z.T);
  out["dwi"] = dwi;
  Vec da(do2.size());
  matmul_nn(da.data(), dact.data(), get(in, "wi").data(), z.T, z.H, z.I);
  return da;
}

std::string param(const char* prefix, int which, const char* suffix) {
  return prefix + std::to_string(which) + suffix;
}

// Post-LN residual: LN(y + bias + residual); keeps the sum as "z<which>".
Vec residual_norm(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& y,
                  const char* bias, const Vec& residual, int which, Tensors& keep) {
  Vec out(y.size()), sum(y.size()), mean(z.T), rstd(z.T);
  norm_forward(out.data(), sum.data(), mean.data(), rstd.data(), y.data(), get(in, bias).data(),
               residual.data(), get(in, param("ln", which, "_w").c_str()).data(),
               get(in, param("ln", which, "_b").c_str()).data(), Dropout{}, z.T, z.H, c.eps, false);
  keep[param("z", which, "")] = sum;
  return out;
}

// Its backward: returns the gradient of the residual; dy goes to `dy`, the bias and LN parameter
// gradients into `out`.
Vec residual_norm_bwd(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& dout,
                      const char* bias, int which, const Tensors& keep, Vec& dy, Tensors& out) {
  Vec dres(dout.size()), db(z.H), dw(z.H), dnb(z.H);
  dy.assign(dout.size(), 0.0);
  norm_backward(dres.data(), dy.data(), db.data(), dw.data(), dnb.data(), dout.data(), nullptr,
                nullptr, get(keep, param("z", which, "").c_str()).data(),
                get(in, param("ln", which, "_w").c_str()).data(), Dropout{}, z.T, z.H, c.eps,
                false);
  out[std::string("d") + bias] = db;
  out[param("dln", which, "_w")] = dw, out[param("dln", which, "_b")] = dnb;
  return dres;
}

// LayerNorm `which` of x, no residual (pre-LN).
Vec norm(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& x, int which) {
  Vec out(x.size()), mean(z.T), rstd(z.T);
  norm_forward(out.data(), nullptr, mean.data(), rstd.data(), x.data(), nullptr, nullptr,
               get(in, param("ln", which, "_w").c_str()).data(),
               get(in, param("ln", which, "_b").c_str()).data(), Dropout{}, z.T, z.H, c.eps, false);
  return out;
}

// Its backward: dLN(dnorm) + dresidual; the LN parameter gradients into `out`.
Vec norm_bwd(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& x,
             const Vec& dnorm, const Vec& dresidual, int which, Tensors& out) {
  Vec dx(x.size()), dw(z.H), db(z.H);
  norm_backward(dx.data(), nullptr, nullptr, dw.data(), db.data(), dnorm.data(), nullptr,
                dresidual.data(), x.data(), get(in, param("ln", which, "_w").c_str()).data(),
                Dropout{}, z.T, z.H, c.eps, false);
  out[param("dln", which, "_w")] = dw, out[param("dln", which, "_b")] = db;
  return dx;
}

// residual + y + bias.
Vec residual_add(const Sizes& z, const Tensors& in, const Vec& y, const char* bias,
                 const Vec& residual) {
  Vec out(y.size());
  bias_dropout_residual(out.data(), y.data(), get(in, bias).data(), residual.data(), Dropout{}, z.T,
                        z.H);
  return out;
}

void post_ln(const BlockConfig& c, BlockPart part, const Sizes& z, const Tensors& in, bool backward,
             Tensors& out) {
  const Vec& x = get(in, "x");
  Tensors keep;
  switch (part) {
    case BlockPart::layer: {
      Vec h1 = residual_norm(c, z, in, attention_fwd(c, z, in, x, keep), "bo", x, 1, keep);
      out["out"] = residual_norm(c, z, in, ffn_fwd(c, part, z, in, h1, keep), "bout", h1, 2, keep);
      if (!backward) break;
      Vec do2, dproj;
      Vec dh1 = residual_norm_bwd(c, z, in, get(in, "dout"), "bout", 2, keep, do2, out);
      Vec da = ffn_bwd(c, z, in, h1, do2, keep, out);
      for (std::size_t i = 0; i < dh1.size(); ++i) dh1[i] += da[i];
      Vec dx = residual_norm_bwd(c, z, in, dh1, "bo", 1, keep, dproj, out);
      da = attention_bwd(c, z, in, x, dproj, keep, out);
      for (std::size_t i = 0; i < dx.size(); ++i) dx[i] += da[i];
      out["dx"] = dx;
      break;
    }
    case BlockPart::attention: {
      out["out"] = residual_norm(c, z, in, attention_fwd(c, z, in, x, keep), "bo", x, 1, keep);
      if (!backward) break;
      Vec dproj;
      Vec dx = residual_norm_bwd(c, z, in, get(in, "dout"), "bo", 1, keep, dproj, out);
      Vec da = attention_bwd(c, z, in, x, dproj, keep, out);
      for (std::size_t i = 0; i < dx.size(); ++i) dx[i] += da[i];
      out["dx"] = dx;
      break;
    }
    default: {
      Vec y = ffn_fwd(c, part, z, in, x, keep);
      if (part != BlockPart::ffn) {
        out["out"] = y;
        break;
      }
      out["out"] = residual_norm(c, z, in, y, "bout", x, 2, keep);
      if (!backward) break;
      Vec do2;
      Vec dx = residual_norm_bwd(c, z, in, get(in, "dout"), "bout", 2, keep, do2, out);
      Vec da = ffn_bwd(c, z, in, x, do2, keep, out);
      for (std::size_t i = 0; i < dx.size(); ++i) dx[i] += da[i];
      out["dx"] = dx;
      break;
    }
  }
}

// h1 = x + attn(LN1(x)) + bo; out = h1 + ffn(LN2(h1)) + bout.
void pre_ln(const BlockConfig& c, const Sizes& z, const Tensors& in, bool backward, Tensors& out) {
  const Vec& x = get(in, "x");
  Tensors keep;
  const Vec a1 = norm(c, z, in, x, 1);
  const Vec h1 = residual_add(z, in, attention_fwd(c, z, in, a1, keep), "bo", x);
  const Vec a2 = norm(c, z, in, h1, 2);
  out["out"] = residual_add(z, in, ffn_fwd(c, BlockPart::layer, z, in, a2, keep), "bout", h1);
  if (!backward) return;
  const Vec& dout = get(in, "dout");
  out["dbout"] = column_sums(dout.data(), z.T, z.H);
  const Vec dh1 = norm_bwd(c, z, in, h1, ffn_bwd(c, z, in, a2, dout, keep, out), dout, 2, out);
  out["dbo"] = column_sums(dh1.data(), z.T, z.H);
  out["dx"] = norm_bwd(c, z, in, x, attention_bwd(c, z, in, a1, dh1, keep, out), dh1, 1, out);
}

}  // namespace

void transformer_block(const BlockConfig& c, BlockPart part, const Tensors& in, bool backward,
                       Tensors& out) {
  const Sizes z{c.tokens(), c.hidden, c.intermediate, c.batch, c.seq, c.heads, c.head_dim()};
  if (c.placement == NormPlacement::pre) {
    if (part != BlockPart::layer)
      XF_THROW(InvalidArgument, "transformer block reference: a pre-LN block runs whole");
    pre_ln(c, z, in, backward, out);
  } else {
    post_ln(c, part, z, in, backward, out);
  }
}

}  // namespace xfbench::kernels::ref
