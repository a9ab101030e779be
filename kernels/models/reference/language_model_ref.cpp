#include "kernels/models/reference/language_model_ref.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/cross_entropy.hpp"
#include "kernels/reference/reference.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels::ref {
namespace {

using Vec = std::vector<double>;

// C[m,n] = op(A)·op(B), row-major; A stored [m,k] ([k,m] with ta), B stored [k,n] ([n,k] with tb).
Vec matmul(const Vec& a, const Vec& b, int m, int n, int k, bool ta, bool tb) {
  Vec c(std::size_t(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p) {
      const double av = ta ? a[std::size_t(p) * m + i] : a[std::size_t(i) * k + p];
      for (int j = 0; j < n; ++j)
        c[std::size_t(i) * n + j] +=
            av * (tb ? b[std::size_t(j) * k + p] : b[std::size_t(p) * n + j]);
    }
  return c;
}

const Vec& get(const Tensors& t, const std::string& name) {
  auto it = t.find(name);
  if (it == t.end()) XF_THROW(InvalidArgument, "language model reference: missing " + name);
  return it->second;
}

// LayerNorm (RMSNorm with b null) over rows of C without residual or dropout; its backward
// returns the input gradient.
Vec layernorm(const Vec& x, const Vec& w, const Vec* b, int N, int C, double eps) {
  Vec out(x.size());
  norm_forward(out.data(), nullptr, nullptr, nullptr, x.data(), nullptr, nullptr, w.data(),
               b ? b->data() : nullptr, Dropout{}, N, C, eps, !b);
  return out;
}
Vec layernorm(const Vec& x, const Vec& w, const Vec& b, int N, int C, double eps) {
  return layernorm(x, w, &b, N, C, eps);
}
Vec layernorm_bwd(const Vec& dout, const Vec& x, const Vec& w, int N, int C, double eps, Vec& dw,
                  Vec* db) {
  Vec dx(x.size()), unused(C);
  dw.assign(C, 0.0);
  if (db) db->assign(C, 0.0);
  norm_backward(dx.data(), nullptr, nullptr, dw.data(), db ? db->data() : unused.data(),
                dout.data(), nullptr, nullptr, x.data(), w.data(), Dropout{}, N, C, eps, !db);
  return dx;
}
Vec layernorm_bwd(const Vec& dout, const Vec& x, const Vec& w, int N, int C, double eps, Vec& dw,
                  Vec& db) {
  return layernorm_bwd(dout, x, w, N, C, eps, dw, &db);
}

// A layer's parameters (those its block has: Llama's have no biases) and its input.
Tensors layer_inputs(const Tensors& params, int layer, const Vec& x) {
  Tensors in;
  in["x"] = x;
  for (const std::string& p : {"wqkv", "bqkv", "wo", "bo", "ln1_w", "ln1_b", "wi", "bi", "wout",
                               "bout", "ln2_w", "ln2_b"}) {
    auto it = params.find(layer_parameter(layer, p));
    if (it != params.end()) in[p] = it->second;
  }
  return in;
}

// Mean cross-entropy over rows whose target counts; dlogits = its gradient.
double cross_entropy(const Vec& logits, const std::vector<int>& targets, int V, Vec& dlogits) {
  const int N = int(targets.size());
  int valid = 0;
  for (int t : targets) valid += t != kIgnoreIndex;
  dlogits.assign(logits.size(), 0.0);
  double loss = 0;
  for (int i = 0; i < N; ++i) {
    if (targets[i] == kIgnoreIndex) continue;
    const double* x = &logits[std::size_t(i) * V];
    const double mx = *std::max_element(x, x + V);
    double sum = 0;
    for (int j = 0; j < V; ++j) sum += std::exp(x[j] - mx);
    loss += mx + std::log(sum) - x[targets[i]];
    for (int j = 0; j < V; ++j)
      dlogits[std::size_t(i) * V + j] =
          (std::exp(x[j] - mx) / sum - (j == targets[i] ? 1.0 : 0.0)) / valid;
  }
  return valid ? loss / valid : 0.0;
}

}  // namespace

std::string layer_parameter(int layer, const std::string& name) {
  return "layer" + std::to_string(layer) + "." + name;
}

std::vector<std::string> language_model_parameters(const LmModel& m) {
  std::vector<std::string> out = {"word"};
  if (m.learned_positions()) out.push_back("position");
  if (m.kind == LmKind::masked) out.insert(out.end(), {"type", "emb_ln_w", "emb_ln_b"});
  const std::vector<const char*> llama = {"wqkv", "wo", "ln1_w", "wi", "wout", "ln2_w"},
                                 biased = {"wqkv", "bqkv", "wo",   "bo",   "ln1_w", "ln1_b",
                                           "wi",   "bi",   "wout", "bout", "ln2_w", "ln2_b"};
  for (int l = 0; l < m.layers; ++l)
    for (const char* p : m.llama ? llama : biased) out.push_back(layer_parameter(l, p));
  if (m.kind == LmKind::masked)
    out.insert(out.end(), {"head_w", "head_b", "head_ln_w", "head_ln_b", "decoder_b"});
  else if (m.llama)
    out.push_back("lnf_w");
  else
    out.insert(out.end(), {"lnf_w", "lnf_b"});
  if (!m.tied_head) out.push_back("lm_head");
  return out;
}

double language_model(const TrainConfig& c, const TokenBatch& data, const Tensors& params,
                      Tensors* grads) {
  const LmModel& m = c.model;
  const bool masked = m.kind == LmKind::masked;
  const int T = c.tokens(), H = m.hidden, V = m.vocab, S = c.seq;
  BlockConfig bc = c.block();
  bc.set_dropout(0.f);

  // Embeddings: e = word[id] + position[s] (+ type[t]); BERT normalises them. Llama: word only.
  const Vec& word = get(params, "word");
  const Vec* position = m.learned_positions() ? &get(params, "position") : nullptr;
  Vec e(std::size_t(T) * H);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < H; ++j) {
      double v = word[std::size_t(data.ids[t]) * H + j] +
                 (position ? (*position)[std::size_t(t % S) * H + j] : 0.0);
      if (masked) v += get(params, "type")[std::size_t(data.type_ids[t]) * H + j];
      e[std::size_t(t) * H + j] = v;
    }
  std::vector<Vec> xs = {
      masked ? layernorm(e, get(params, "emb_ln_w"), get(params, "emb_ln_b"), T, H, m.eps) : e};
  for (int l = 0; l < m.layers; ++l) {
    Tensors out;
    transformer_block(bc, BlockPart::layer, layer_inputs(params, l, xs.back()), false, out);
    xs.push_back(out.at("out"));
  }

  // LM head on its rows: BERT's transform (dense, GELU, LayerNorm) and the decoder with its bias;
  // GPT-2's final LayerNorm and the tied head without bias.
  const int R = int(data.head_rows.size());
  Vec hin(std::size_t(R) * H);  // the head's input rows of the last layer's output
  for (int r = 0; r < R; ++r)
    std::copy_n(&xs.back()[std::size_t(data.head_rows[r]) * H], H, &hin[std::size_t(r) * H]);
  Vec pre, act, hidden;
  if (masked) {
    pre = matmul(hin, get(params, "head_w"), R, H, H, false, true);
    const Vec& hb = get(params, "head_b");
    act.resize(pre.size());
    for (std::size_t i = 0; i < pre.size(); ++i) {
      pre[i] += hb[i % H];
      act[i] = gelu(pre[i], Gelu::erf);
    }
    hidden = layernorm(act, get(params, "head_ln_w"), get(params, "head_ln_b"), R, H, m.eps);
  } else {  // Llama: RMSNorm
    hidden = layernorm(hin, get(params, "lnf_w"), m.llama ? nullptr : &get(params, "lnf_b"), R, H,
                       m.eps);
  }
  const Vec& head = m.tied_head ? word : get(params, "lm_head");
  Vec logits = matmul(hidden, head, R, V, H, false, true);
  if (masked) {
    const Vec& db = get(params, "decoder_b");
    for (std::size_t i = 0; i < logits.size(); ++i) logits[i] += db[i % V];
  }
  Vec dlogits;
  const double loss = cross_entropy(logits, data.head_targets, V, dlogits);
  if (!grads) return loss;

  Tensors& g = *grads;
  g.clear();
  Vec dhead = matmul(dlogits, hidden, V, H, R, true, false);
  if (m.tied_head) {
    g["word"] = std::move(dhead);  // the tied decoder's share
  } else {
    g["lm_head"] = std::move(dhead);
    g["word"].assign(word.size(), 0.0);
  }
  Vec dhidden = matmul(dlogits, head, R, H, V, false, false);
  Vec dhin;
  if (masked) {
    Vec dbias(V, 0.0);
    for (std::size_t i = 0; i < dlogits.size(); ++i) dbias[i % V] += dlogits[i];
    g["decoder_b"] = dbias;
    Vec dact = layernorm_bwd(dhidden, act, get(params, "head_ln_w"), R, H, m.eps, g["head_ln_w"],
                             g["head_ln_b"]);
    Vec dhb(H, 0.0);
    for (std::size_t i = 0; i < dact.size(); ++i) {
      dact[i] *= gelu_grad(pre[i], Gelu::erf);
      dhb[i % H] += dact[i];
    }
    g["head_b"] = dhb;
    g["head_w"] = matmul(dact, hin, H, H, R, true, false);
    dhin = matmul(dact, get(params, "head_w"), R, H, H, false, false);
  } else {
    dhin = layernorm_bwd(dhidden, hin, get(params, "lnf_w"), R, H, m.eps, g["lnf_w"],
                         m.llama ? nullptr : &g["lnf_b"]);
  }
  Vec dx(std::size_t(T) * H, 0.0);
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < H; ++j)
      dx[std::size_t(data.head_rows[r]) * H + j] += dhin[std::size_t(r) * H + j];

  for (int l = m.layers - 1; l >= 0; --l) {
    Tensors in = layer_inputs(params, l, xs[l]), out;
    in["dout"] = dx;
    transformer_block(bc, BlockPart::layer, in, true, out);
    dx = out.at("dx");
    for (const auto& kv : out)
      if (kv.first[0] == 'd' && kv.first != "dx")
        g[layer_parameter(l, kv.first.substr(1))] = kv.second;
  }

  Vec de = masked ? layernorm_bwd(dx, e, get(params, "emb_ln_w"), T, H, m.eps, g["emb_ln_w"],
                                  g["emb_ln_b"])
                  : dx;
  Vec dposition(position ? position->size() : 0, 0.0);
  Vec dtype(masked ? get(params, "type").size() : 0, 0.0);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < H; ++j) {
      const double d = de[std::size_t(t) * H + j];
      g["word"][std::size_t(data.ids[t]) * H + j] += d;
      if (position) dposition[std::size_t(t % S) * H + j] += d;
      if (masked) dtype[std::size_t(data.type_ids[t]) * H + j] += d;
    }
  if (position) g["position"] = dposition;
  if (masked) g["type"] = dtype;
  return loss;
}

}  // namespace xfbench::kernels::ref
