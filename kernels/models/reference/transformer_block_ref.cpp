#include "kernels/models/reference/transformer_block_ref.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <thread>

#include "kernels/reference/reference.hpp"
#include "kernels/reference/rope_ref.hpp"
#include "kernels/relative_position.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels::ref {
namespace {

using Vec = std::vector<double>;

// Runs task(0) ... task(tasks - 1) over the host's cores (each task on one thread).
template <class Task>
void parallel_tasks(int tasks, const Task& task) {
  std::atomic<int> next{0};
  auto work = [&] {
    for (int t; (t = next++) < tasks;) task(t);
  };
  const int threads = std::min<int>(tasks, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
}

// C[m,n] = Σ_p A(i, p)·B(p, j) with A(i, p) = a[i·ai + p·ap] and B(p, j) = b[p·bp + j·bj] (any
// layout, no transposed copies), over the host's cores: the products of a Llama layer's widths are
// tens of GFLOP in float64 even at 64 tokens. Blocks of 64 x 64 of C, each a task, walk p in
// chunks of 256 (the chunk's A and B, 256 KB, stay in the L2 across the block's 4 x 4 register
// tiles: 8 loads per 16 multiply-adds); a tile's sums continue from chunk to chunk, so every
// element is the plain sequential sum over p, whatever the layout or thread count.
void matmul(double* c, const double* a, std::ptrdiff_t ai, std::ptrdiff_t ap, const double* b,
            std::ptrdiff_t bp, std::ptrdiff_t bj, int m, int n, int k) {
  constexpr int kRows = 64, kCols = 64, kDepth = 256;
  const int row_blocks = (m + kRows - 1) / kRows, col_blocks = (n + kCols - 1) / kCols;
  const int tasks = row_blocks * col_blocks;
  auto tile = [&](int i, int j, int ri, int rj, int p0, int p1) {
    double acc[4][4] = {};
    if (p0 > 0)
      for (int r = 0; r < ri; ++r)
        for (int q = 0; q < rj; ++q) acc[r][q] = c[std::size_t(i + r) * n + j + q];
    if (ri == 4 && rj == 4) {
      const double *pa = a + i * ai + p0 * ap, *pb = b + p0 * bp + j * bj;
      for (int p = p0; p < p1; ++p, pa += ap, pb += bp) {
        const double x[4] = {pa[0], pa[ai], pa[2 * ai], pa[3 * ai]};
        const double y[4] = {pb[0], pb[bj], pb[2 * bj], pb[3 * bj]};
        for (int r = 0; r < 4; ++r)
          for (int q = 0; q < 4; ++q) acc[r][q] += x[r] * y[q];
      }
    } else {  // the edges
      for (int r = 0; r < ri; ++r)
        for (int q = 0; q < rj; ++q)
          for (int p = p0; p < p1; ++p)
            acc[r][q] += a[(i + r) * ai + p * ap] * b[p * bp + (j + q) * bj];
    }
    for (int r = 0; r < ri; ++r)
      for (int q = 0; q < rj; ++q) c[std::size_t(i + r) * n + j + q] = acc[r][q];
  };
  parallel_tasks(tasks, [&](int t) {
    const int i0 = t / col_blocks * kRows, j0 = t % col_blocks * kCols;
    const int i1 = std::min(m, i0 + kRows), j1 = std::min(n, j0 + kCols);
    if (k == 0)  // an empty sum
      for (int i = i0; i < i1; ++i)
        std::fill(c + std::size_t(i) * n + j0, c + std::size_t(i) * n + j1, 0.0);
    for (int p0 = 0; p0 < k; p0 += kDepth)
      for (int i = i0; i < i1; i += 4)
        for (int j = j0; j < j1; j += 4)
          tile(i, j, std::min(4, i1 - i), std::min(4, j1 - j), p0, std::min(k, p0 + kDepth));
  });
}

// dx = dy·W and dW = dyᵀ·x through the tiles (without the transposed copy of W the few-row
// product took before: 1.29 s against 3.33 for Llama-8B's gate/up at 64 tokens on this build
// VM's two cores); y = x·Wᵀ below.
void matmul_nn(double* c, const double* a, const double* b, int m, int n, int k) {
  matmul(c, a, k, 1, b, n, 1, m, n, k);  // A [m,k], B [k,n]
}
// Both operands' rows contiguous: dot products (four partial sums each) in blocks of 16 rows x
// 128 columns beat the tiles, whose B loads would stride by k (1.15 s against 1.94, same product).
void matmul_nt(double* c, const double* a, const double* b, int m, int n, int k) {
  constexpr int kRows = 16, kCols = 128;
  const int row_blocks = (m + kRows - 1) / kRows, col_blocks = (n + kCols - 1) / kCols;
  parallel_tasks(row_blocks * col_blocks, [&](int t) {
    const int i0 = t / col_blocks * kRows, j0 = t % col_blocks * kCols;
    for (int i = i0; i < std::min(m, i0 + kRows); ++i)
      for (int j = j0; j < std::min(n, j0 + kCols); ++j) {
        const double *x = a + std::size_t(i) * k, *w = b + std::size_t(j) * k;
        double s[4] = {0, 0, 0, 0};
        int p = 0;
        for (; p + 4 <= k; p += 4)
          for (int q = 0; q < 4; ++q) s[q] += x[p + q] * w[p + q];
        for (; p < k; ++p) s[0] += x[p] * w[p];
        c[std::size_t(i) * n + j] = (s[0] + s[1]) + (s[2] + s[3]);
      }
  });
}
void matmul_tn(double* c, const double* a, const double* b, int m, int n, int k) {
  matmul(c, a, 1, m, b, n, 1, m, n, k);  // A stored [k,m], B [k,n]
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

// Heads [col, col + nh·HD) of packed rows [B·S, width] <-> dense [B, nh, S, HD] (the q, k, v of a
// packed projection: q at 0, k after NH heads, v after NH + NKV).
Vec split_heads(const Vec& packed, int width, int col, int nh, int B, int S, int HD) {
  Vec d(std::size_t(B) * nh * S * HD);
  for (int b = 0; b < B; ++b)
    for (int s = 0; s < S; ++s)
      for (int h = 0; h < nh; ++h)
        for (int e = 0; e < HD; ++e)
          d[((std::size_t(b) * nh + h) * S + s) * HD + e] =
              packed[(std::size_t(b) * S + s) * width + col + h * HD + e];
  return d;
}
void merge_heads(Vec& packed, const Vec& d, int width, int col, int nh, int B, int S, int HD) {
  for (int b = 0; b < B; ++b)
    for (int s = 0; s < S; ++s)
      for (int h = 0; h < nh; ++h)
        for (int e = 0; e < HD; ++e)
          packed[(std::size_t(b) * S + s) * width + col + h * HD + e] =
              d[((std::size_t(b) * nh + h) * S + s) * HD + e];
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
  int T, H, I, B, S, NH, HD, A;  // A = NH·HD, the attention width (T5's inner_dim)
  int KV, QW;                    // key/value heads (grouped-query), the QKV projection's width
};

// A linear layer's bias, or nullptr when the block's linears have none (T5) or `name` is null.
const double* linear_bias(const BlockConfig& c, const Tensors& in, const char* name) {
  return c.linear_bias && name ? get(in, name).data() : nullptr;
}

AttentionRef attention_ref(const BlockConfig& c, bool causal, const double* bias) {
  const double scale = c.scale_scores ? 1.0 / std::sqrt(double(c.head_dim())) : 1.0;
  AttentionRef r{c.batch, c.heads, c.seq,   c.seq, c.head_dim(),
                 scale,   causal,  nullptr, bias,  Dropout{}};
  r.NKV = c.kv_head_count();
  return r;
}

// The relative position bias [NH, S, S] from the table (T5's first block), or an empty vector.
Vec relative_bias(const BlockConfig& c, const Tensors& in) {
  if (!c.relative_bias) return {};
  return t5_bias_reference(get(in, "rel_bias"), c.heads, c.seq, c.seq, !c.causal);
}

// out[T, n] = a[T, k]·Wᵀ (+ bias).
Vec linear(const double* a, const Vec& w, const double* bias, int T, int n, int k) {
  Vec y(std::size_t(T) * n);
  matmul_nt(y.data(), a, w.data(), T, n, k);
  if (bias) add_bias(y.data(), bias, T, n);
  return y;
}

// Its backward: dW = dyᵀ·a into out[dw], db (when the layer has one) into out[db]; returns dy·W.
Vec linear_bwd(const Vec& dy, const double* a, const Vec& w, int T, int n, int k, Tensors& out,
               const std::string& dw, const std::string& db) {
  Vec dwv(std::size_t(n) * k), da(std::size_t(T) * k);
  matmul_tn(dwv.data(), dy.data(), a, n, k, T);
  out[dw] = std::move(dwv);
  if (!db.empty()) out[db] = column_sums(dy.data(), T, n);
  matmul_nn(da.data(), dy.data(), w.data(), T, k, n);
  return da;
}

// The self-attention sublayer's core: a -> proj = attention(a·Wqkvᵀ + bqkv)·Woᵀ (no bo yet);
// Llama: q and k rotated first.
Vec attention_fwd(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& a,
                  Tensors& keep) {
  Vec qkv = linear(a.data(), get(in, "wqkv"), linear_bias(c, in, "bqkv"), z.T, z.QW, z.H);
  if (c.rotary) rope_forward(qkv.data(), c.rope, z.T, z.S, z.NH, z.KV, z.HD);
  Vec q = split_heads(qkv, z.QW, 0, z.NH, z.B, z.S, z.HD),
      k = split_heads(qkv, z.QW, z.A, z.KV, z.B, z.S, z.HD),
      v = split_heads(qkv, z.QW, z.A + z.KV * z.HD, z.KV, z.B, z.S, z.HD);
  const Vec bias = relative_bias(c, in);
  Vec o(q.size());
  attention_forward(o.data(), q.data(), k.data(), v.data(),
                    attention_ref(c, c.causal, bias.empty() ? nullptr : bias.data()));
  Vec ctx = heads_to_tokens(o, z.B, z.S, z.NH, z.HD);
  keep["q"] = q, keep["k"] = k, keep["v"] = v, keep["ctx"] = ctx, keep["bias"] = bias;
  return linear(ctx.data(), get(in, "wo"), nullptr, z.T, z.H, z.A);
}

// dproj -> the gradient of a (+ dwo, dwqkv, dbqkv, drel_bias into `out`).
Vec attention_bwd(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& a,
                  const Vec& dproj, const Tensors& keep, Tensors& out) {
  const Vec dctx =
      linear_bwd(dproj, get(keep, "ctx").data(), get(in, "wo"), z.T, z.H, z.A, out, "dwo", "");
  Vec dO = tokens_to_heads(dctx, z.B, z.S, z.NH, z.HD);
  const std::size_t kv_size = std::size_t(z.B) * z.KV * z.S * z.HD;
  Vec dq(dO.size()), dk(kv_size), dv(kv_size);
  const Vec& bias = get(keep, "bias");
  Vec dbias(bias.size());
  attention_backward(dq.data(), dk.data(), dv.data(), bias.empty() ? nullptr : dbias.data(),
                     dO.data(), get(keep, "q").data(), get(keep, "k").data(), get(keep, "v").data(),
                     attention_ref(c, c.causal, bias.empty() ? nullptr : bias.data()));
  if (c.relative_bias)
    out["drel_bias"] = t5_bias_table_grad_reference(dbias, c.heads, c.seq, c.seq, !c.causal);
  Vec dqkv(std::size_t(z.T) * z.QW);
  merge_heads(dqkv, dq, z.QW, 0, z.NH, z.B, z.S, z.HD);
  merge_heads(dqkv, dk, z.QW, z.A, z.KV, z.B, z.S, z.HD);
  merge_heads(dqkv, dv, z.QW, z.A + z.KV * z.HD, z.KV, z.B, z.S, z.HD);
  if (c.rotary) rope_backward(dqkv.data(), c.rope, z.T, z.S, z.NH, z.KV, z.HD);
  return linear_bwd(dqkv, a.data(), get(in, "wqkv"), z.T, z.QW, z.H, out, "dwqkv",
                    c.linear_bias ? "dbqkv" : "");
}

// The decoder's cross-attention core: queries from a, keys and values from the encoder states
// "enc", no mask, no position bias -> proj = attention(...)·Wo_crossᵀ.
Vec cross_attention_fwd(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& a,
                        Tensors& keep) {
  const Vec& enc = get(in, "enc");
  Vec q = tokens_to_heads(linear(a.data(), get(in, "wq_cross"), nullptr, z.T, z.A, z.H), z.B, z.S,
                          z.NH, z.HD);
  const Vec kv = linear(enc.data(), get(in, "wkv_cross"), nullptr, z.T, 2 * z.A, z.H);
  Vec k = split_heads(kv, 2 * z.A, 0, z.NH, z.B, z.S, z.HD),
      v = split_heads(kv, 2 * z.A, z.A, z.NH, z.B, z.S, z.HD);
  Vec o(q.size());
  attention_forward(o.data(), q.data(), k.data(), v.data(), attention_ref(c, false, nullptr));
  Vec ctx = heads_to_tokens(o, z.B, z.S, z.NH, z.HD);
  keep["xq"] = q, keep["xk"] = k, keep["xv"] = v, keep["xctx"] = ctx;
  return linear(ctx.data(), get(in, "wo_cross"), nullptr, z.T, z.H, z.A);
}

// dproj -> the gradient of a; "denc" and the cross-attention weight gradients into `out`.
Vec cross_attention_bwd(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& a,
                        const Vec& dproj, const Tensors& keep, Tensors& out) {
  const Vec dctx = linear_bwd(dproj, get(keep, "xctx").data(), get(in, "wo_cross"), z.T, z.H, z.A,
                              out, "dwo_cross", "");
  Vec dO = tokens_to_heads(dctx, z.B, z.S, z.NH, z.HD);
  Vec dq(dO.size()), dk(dO.size()), dv(dO.size());
  attention_backward(dq.data(), dk.data(), dv.data(), dO.data(), get(keep, "xq").data(),
                     get(keep, "xk").data(), get(keep, "xv").data(),
                     attention_ref(c, false, nullptr));
  Vec dkv(std::size_t(z.T) * 2 * z.A);
  merge_heads(dkv, dk, 2 * z.A, 0, z.NH, z.B, z.S, z.HD);
  merge_heads(dkv, dv, 2 * z.A, z.A, z.NH, z.B, z.S, z.HD);
  out["denc"] = linear_bwd(dkv, get(in, "enc").data(), get(in, "wkv_cross"), z.T, 2 * z.A, z.H, out,
                           "dwkv_cross", "");
  return linear_bwd(heads_to_tokens(dq, z.B, z.S, z.NH, z.HD), a.data(), get(in, "wq_cross"), z.T,
                    z.A, z.H, out, "dwq_cross", "");
}

Gelu gelu_kind(const BlockConfig& c) {
  return c.activation == Activation::gelu_tanh ? Gelu::tanh : Gelu::erf;
}
// A gated FFN's gate: GELU (T5 v1.1) or SiLU (Llama), and its derivative.
double gate(const BlockConfig& c, double x) {
  return c.activation == Activation::silu ? silu(x) : gelu(x, gelu_kind(c));
}
double gate_grad(const BlockConfig& c, double x) {
  return c.activation == Activation::silu ? silu_grad(x) : gelu_grad(x, gelu_kind(c));
}
// Columns of the FFN's first product: I, or 2I for a gated FFN (gate | linear).
int up_width(const BlockConfig& c) { return c.gated_ffn ? 2 * c.intermediate : c.intermediate; }

// The FFN sublayer's core: a -> o2 = act(a·Wiᵀ + bi)·Woutᵀ (no bout yet), act GELU, ReLU or the
// gated GELU(pre_gate)·pre_linear; the dense parts' outputs are [T, I].
Vec ffn_fwd(const BlockConfig& c, BlockPart part, const Sizes& z, const Tensors& in, const Vec& a,
            Tensors& keep) {
  const int U = up_width(c);
  Vec pre = linear(a.data(), get(in, "wi"), linear_bias(c, in, "bi"), z.T, U, z.H);
  if (part == BlockPart::dense) return pre;
  Vec act(std::size_t(z.T) * z.I);
  for (int t = 0; t < z.T; ++t)
    for (int i = 0; i < z.I; ++i) {
      const double x = pre[std::size_t(t) * U + i];
      double& y = act[std::size_t(t) * z.I + i];
      if (c.gated_ffn)
        y = gate(c, x) * pre[std::size_t(t) * U + z.I + i];
      else
        y = c.activation == Activation::relu ? std::max(x, 0.0) : gelu(x, gelu_kind(c));
    }
  if (part == BlockPart::dense_gelu) return act;
  keep["pre"] = pre, keep["act"] = act;
  return linear(act.data(), get(in, "wout"), nullptr, z.T, z.H, z.I);
}

// do2 -> the gradient of a (+ dwout, dwi, dbi into `out`).
Vec ffn_bwd(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& a, const Vec& do2,
            const Tensors& keep, Tensors& out) {
  const int U = up_width(c);
  const Vec dact =
      linear_bwd(do2, get(keep, "act").data(), get(in, "wout"), z.T, z.H, z.I, out, "dwout", "");
  const Vec& pre = get(keep, "pre");
  const auto given = in.find("relu_mask");
  const Vec* mask = given == in.end() ? nullptr : &given->second;
  Vec dpre(pre.size());
  for (int t = 0; t < z.T; ++t)
    for (int i = 0; i < z.I; ++i) {
      const double g = dact[std::size_t(t) * z.I + i], x = pre[std::size_t(t) * U + i];
      if (c.gated_ffn) {
        const double lin = pre[std::size_t(t) * U + z.I + i];
        dpre[std::size_t(t) * U + i] = g * lin * gate_grad(c, x);
        dpre[std::size_t(t) * U + z.I + i] = g * gate(c, x);
      } else {
        const double relu = mask ? (*mask)[std::size_t(t) * z.I + i] : x > 0 ? 1.0 : 0.0;
        const double grad = c.activation == Activation::relu ? relu : gelu_grad(x, gelu_kind(c));
        dpre[std::size_t(t) * U + i] = g * grad;
      }
    }
  return linear_bwd(dpre, a.data(), get(in, "wi"), z.T, U, z.H, out, "dwi",
                    c.linear_bias ? "dbi" : "");
}

// The norm's parameter names: "ln<which>_w", "ln<which>_b" (which: "1", "2", "_cross").
std::string param(const std::string& which, const char* suffix) { return "ln" + which + suffix; }
bool rms(const BlockConfig& c) { return c.norm == NormKind::rmsnorm; }
const double* norm_bias(const BlockConfig& c, const Tensors& in, const std::string& which) {
  return rms(c) ? nullptr : get(in, param(which, "_b").c_str()).data();
}

// Post-LN residual: LN(y + bias + residual); keeps the sum as "z<which>".
Vec residual_norm(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& y,
                  const char* bias, const Vec& residual, const std::string& which, Tensors& keep) {
  Vec out(y.size()), sum(y.size()), mean(z.T), rstd(z.T);
  norm_forward(out.data(), sum.data(), mean.data(), rstd.data(), y.data(), linear_bias(c, in, bias),
               residual.data(), get(in, param(which, "_w").c_str()).data(), norm_bias(c, in, which),
               Dropout{}, z.T, z.H, c.eps, rms(c));
  keep["z" + which] = sum;
  return out;
}

// Its backward: returns the gradient of the residual; dy goes to `dy`, the bias and LN parameter
// gradients into `out`.
Vec residual_norm_bwd(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& dout,
                      const char* bias, const std::string& which, const Tensors& keep, Vec& dy,
                      Tensors& out) {
  Vec dres(dout.size()), db(z.H), dw(z.H), dnb(z.H);
  dy.assign(dout.size(), 0.0);
  norm_backward(dres.data(), dy.data(), db.data(), dw.data(), dnb.data(), dout.data(), nullptr,
                nullptr, get(keep, ("z" + which).c_str()).data(),
                get(in, param(which, "_w").c_str()).data(), Dropout{}, z.T, z.H, c.eps, rms(c));
  if (c.linear_bias) out[std::string("d") + bias] = db;
  out["d" + param(which, "_w")] = dw;
  if (!rms(c)) out["d" + param(which, "_b")] = dnb;
  return dres;
}

// Norm `which` of x, no residual (pre-LN).
Vec norm(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& x,
         const std::string& which) {
  Vec out(x.size()), mean(z.T), rstd(z.T);
  norm_forward(out.data(), nullptr, mean.data(), rstd.data(), x.data(), nullptr, nullptr,
               get(in, param(which, "_w").c_str()).data(), norm_bias(c, in, which), Dropout{}, z.T,
               z.H, c.eps, rms(c));
  return out;
}

// Its backward: dnorm(dnorm) + dresidual; the norm's parameter gradients into `out`.
Vec norm_bwd(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& x,
             const Vec& dnorm, const Vec& dresidual, const std::string& which, Tensors& out) {
  Vec dx(x.size()), dw(z.H), db(z.H);
  norm_backward(dx.data(), nullptr, nullptr, dw.data(), db.data(), dnorm.data(), nullptr,
                dresidual.data(), x.data(), get(in, param(which, "_w").c_str()).data(), Dropout{},
                z.T, z.H, c.eps, rms(c));
  out["d" + param(which, "_w")] = dw;
  if (!rms(c)) out["d" + param(which, "_b")] = db;
  return dx;
}

// residual + y (+ bias).
Vec residual_add(const BlockConfig& c, const Sizes& z, const Tensors& in, const Vec& y,
                 const char* bias, const Vec& residual) {
  Vec out(y.size());
  bias_dropout_residual(out.data(), y.data(), linear_bias(c, in, bias), residual.data(), Dropout{},
                        z.T, z.H);
  return out;
}

void add_to(Vec& a, const Vec& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
}

void post_ln(const BlockConfig& c, BlockPart part, const Sizes& z, const Tensors& in, bool backward,
             Tensors& out) {
  const Vec& x = get(in, "x");
  Tensors keep;
  switch (part) {
    case BlockPart::layer: {
      Vec h1 = residual_norm(c, z, in, attention_fwd(c, z, in, x, keep), "bo", x, "1", keep);
      out["out"] =
          residual_norm(c, z, in, ffn_fwd(c, part, z, in, h1, keep), "bout", h1, "2", keep);
      if (!backward) break;
      Vec do2, dproj;
      Vec dh1 = residual_norm_bwd(c, z, in, get(in, "dout"), "bout", "2", keep, do2, out);
      add_to(dh1, ffn_bwd(c, z, in, h1, do2, keep, out));
      Vec dx = residual_norm_bwd(c, z, in, dh1, "bo", "1", keep, dproj, out);
      add_to(dx, attention_bwd(c, z, in, x, dproj, keep, out));
      out["dx"] = dx;
      break;
    }
    case BlockPart::attention: {
      out["out"] = residual_norm(c, z, in, attention_fwd(c, z, in, x, keep), "bo", x, "1", keep);
      if (!backward) break;
      Vec dproj;
      Vec dx = residual_norm_bwd(c, z, in, get(in, "dout"), "bo", "1", keep, dproj, out);
      add_to(dx, attention_bwd(c, z, in, x, dproj, keep, out));
      out["dx"] = dx;
      break;
    }
    default: {
      Vec y = ffn_fwd(c, part, z, in, x, keep);
      if (part != BlockPart::ffn) {
        out["out"] = y;
        break;
      }
      out["out"] = residual_norm(c, z, in, y, "bout", x, "2", keep);
      if (!backward) break;
      Vec do2;
      Vec dx = residual_norm_bwd(c, z, in, get(in, "dout"), "bout", "2", keep, do2, out);
      add_to(dx, ffn_bwd(c, z, in, x, do2, keep, out));
      out["dx"] = dx;
      break;
    }
  }
}

// h1 = x + attn(LN1(x)) + bo; [decoder: h2 = h1 + cross(LN_cross(h1), enc)]; out = h + ffn(LN2(h))
// + bout. T5: RMSNorm, no biases.
void pre_ln(const BlockConfig& c, const Sizes& z, const Tensors& in, bool backward, Tensors& out) {
  const Vec& x = get(in, "x");
  Tensors keep;
  const Vec a1 = norm(c, z, in, x, "1");
  const Vec h1 = residual_add(c, z, in, attention_fwd(c, z, in, a1, keep), "bo", x);
  Vec ax, h2 = h1;
  if (c.cross_attention) {
    ax = norm(c, z, in, h1, "_cross");
    h2 = residual_add(c, z, in, cross_attention_fwd(c, z, in, ax, keep), nullptr, h1);
  }
  const Vec a2 = norm(c, z, in, h2, "2");
  out["out"] = residual_add(c, z, in, ffn_fwd(c, BlockPart::layer, z, in, a2, keep), "bout", h2);
  if (!backward) return;
  const Vec& dout = get(in, "dout");
  if (c.linear_bias) out["dbout"] = column_sums(dout.data(), z.T, z.H);
  Vec dh2 = norm_bwd(c, z, in, h2, ffn_bwd(c, z, in, a2, dout, keep, out), dout, "2", out);
  Vec dh1 = dh2;
  if (c.cross_attention)
    dh1 = norm_bwd(c, z, in, h1, cross_attention_bwd(c, z, in, ax, dh2, keep, out), dh2, "_cross",
                   out);
  if (c.linear_bias) out["dbo"] = column_sums(dh1.data(), z.T, z.H);
  out["dx"] = norm_bwd(c, z, in, x, attention_bwd(c, z, in, a1, dh1, keep, out), dh1, "1", out);
}

// A pre-norm block's parts, HF's modules alone: LlamaAttention and LlamaMLP on x, or the first norm
// and the QKV projection (norm_qkv: "out" is the projection [T, (NH + 2·NKV)·HD]).
void pre_part(const BlockConfig& c, BlockPart part, const Sizes& z, const Tensors& in,
              Tensors& out) {
  const Vec& x = get(in, "x");
  Tensors keep;
  if (part == BlockPart::attention)
    out["out"] = attention_fwd(c, z, in, x, keep);
  else if (part == BlockPart::ffn)
    out["out"] = ffn_fwd(c, BlockPart::layer, z, in, x, keep);
  else
    out["out"] = linear(norm(c, z, in, x, "1").data(), get(in, "wqkv"), linear_bias(c, in, "bqkv"),
                        z.T, z.QW, z.H);
}

}  // namespace

void transformer_block(const BlockConfig& c, BlockPart part, const Tensors& in, bool backward,
                       Tensors& out) {
  const Sizes z{c.tokens(), c.hidden,     c.intermediate,      c.batch,           c.seq,
                c.heads,    c.head_dim(), c.attention_width(), c.kv_head_count(), c.qkv_width()};
  if (c.placement == NormPlacement::pre) {
    if (part == BlockPart::layer) return pre_ln(c, z, in, backward, out);
    if (backward || part == BlockPart::dense || part == BlockPart::dense_gelu)
      XF_THROW(InvalidArgument,
               "transformer block reference: a pre-norm block's parts are attention, ffn and "
               "norm_qkv, forward only");
    pre_part(c, part, z, in, out);
  } else {
    post_ln(c, part, z, in, backward, out);
  }
}

}  // namespace xfbench::kernels::ref
