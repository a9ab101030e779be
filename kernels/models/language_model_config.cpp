#include "kernels/models/language_model_config.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "kernels/cross_entropy.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

namespace {

LmModel bert(const char* name, int layers, int hidden, int heads) {
  LmModel m;
  m.name = name, m.kind = LmKind::masked;
  m.layers = layers, m.hidden = hidden, m.heads = heads, m.intermediate = 4 * hidden;
  m.vocab = 30522, m.positions = 512, m.token_types = 2, m.eps = 1e-12f;
  return m;
}

LmModel gpt2(const char* name, int layers, int hidden, int heads) {
  LmModel m;
  m.name = name, m.kind = LmKind::causal;
  m.layers = layers, m.hidden = hidden, m.heads = heads, m.intermediate = 4 * hidden;
  m.vocab = 50257, m.positions = 1024, m.token_types = 0, m.eps = 1e-5f;
  return m;
}

// HF's published Llama configs: vocab 128256, rms_norm_eps 1e-5, rope_theta 500000 with Llama 3's
// scaling (3.1: factor 8, 3.2: 32), max_position_embeddings 131072.
LmModel llama(const char* name, int layers, int hidden, int heads, int kv_heads, int head_dim,
              int intermediate, double rope_factor, bool tied) {
  LmModel m;
  m.name = name, m.kind = LmKind::causal, m.llama = true;
  m.layers = layers, m.hidden = hidden, m.heads = heads, m.intermediate = intermediate;
  m.kv_heads = kv_heads, m.head_dim = head_dim;
  m.vocab = 128256, m.positions = 131072, m.token_types = 0, m.eps = 1e-5f;
  m.rope.theta = 500000.0, m.rope.factor = rope_factor;
  m.tied_head = tied;
  return m;
}

const std::vector<LmModel>& presets() {
  static const std::vector<LmModel> all = {
      bert("bert-base", 12, 768, 12),
      bert("bert-large", 24, 1024, 16),
      gpt2("gpt2", 12, 768, 12),
      gpt2("gpt2-medium", 24, 1024, 16),
      gpt2("gpt2-large", 36, 1280, 20),
      gpt2("gpt2-xl", 48, 1600, 25),
      llama("llama-3.2-1b", 16, 2048, 32, 8, 64, 8192, 32, true),
      llama("llama-3.2-3b", 28, 3072, 24, 8, 128, 8192, 32, true),
      llama("llama-3.1-8b", 32, 4096, 32, 8, 128, 14336, 8, false)};
  return all;
}

// splitmix64: a small, fixed generator (the same ids on every platform and compiler).
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  int below(int n) { return int(next() % std::uint64_t(n)); }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
};

}  // namespace

BlockConfig LmModel::block() const {
  if (llama) return llama_block(hidden, heads, kv_heads, head_dim, intermediate, rope);
  return kind == LmKind::masked ? bert_block(hidden, heads, intermediate)
                                : gpt2_block(hidden, heads, intermediate);
}

LmModel lm_model(const std::string& name) {
  for (const LmModel& m : presets())
    if (m.name == name) return m;
  std::string known;
  for (const std::string& n : lm_model_names()) known += (known.empty() ? "" : ", ") + n;
  XF_THROW(InvalidArgument, "unknown model '" + name + "' (known: " + known + ")");
}

std::vector<std::string> lm_model_names() {
  std::vector<std::string> out;
  for (const LmModel& m : presets()) out.push_back(m.name);
  return out;
}

const char* to_string(OptimizerKind o) { return o == OptimizerKind::fused ? "fused" : "unfused"; }

int TrainConfig::masked_per_sequence() const {
  return std::max(1, int(std::lround(mlm_probability * seq)));
}

int TrainConfig::head_rows() const {
  return model.kind == LmKind::masked ? batch * masked_per_sequence() : tokens();
}

int TrainConfig::loss_rows() const {
  return model.kind == LmKind::masked ? head_rows() : batch * (seq - 1);
}

int TrainConfig::head_chunk_rows() const {
  const int R = head_rows();
  if (model.kind == LmKind::masked) return R;  // a few rows; its bias gradient is the epilogue's
  const std::size_t row_bytes =
      std::size_t(model.padded_vocab()) * elem_size(input_type(storage_precision(precision)));
  const std::size_t fit = max_logits_bytes / row_bytes;
  if (std::size_t(R) <= fit) return R;
  int smallest = R;  // of the divisors that are multiples of 16
  for (int rows = R / 16 * 16; rows >= 16; rows -= 16) {
    if (R % rows) continue;
    if (std::size_t(rows) <= fit) return rows;
    smallest = rows;
  }
  return smallest;
}

BlockConfig TrainConfig::block() const {
  BlockConfig b = model.block();
  b.name = model.name;
  b.eps = model.eps;
  b.batch = batch, b.seq = seq;
  b.precision = precision;
  b.fp8 = fp8;
  b.backend = backend;
  b.set_dropout(dropout);
  b.backward = true;
  b.tp_rank = tp_rank, b.tp_size = tp_size, b.tp_reduce = tp_reduce;
  return b;
}

std::string TrainConfig::describe() const {
  return model.name + " batch " + std::to_string(batch) + ", seq " + std::to_string(seq) +
         ", accum " + std::to_string(accum) + ", " + to_string(precision) +
         (precision == Precision::fp8 ? std::string(" ") + to_string(fp8.recipe) : "") + ", " +
         to_string(backend) + (checkpointing ? ", checkpointing" : "") + ", " +
         to_string(optimizer) + " AdamW" +
         (tp_size != 1 ? ", tensor-parallel rank " + std::to_string(tp_rank) + " of " +
                             std::to_string(tp_size)
                       : "");
}

void check_train_config(const TrainConfig& c) {
  auto bad = [&](const std::string& why) { XF_THROW(InvalidArgument, c.describe() + ": " + why); };
  const LmModel& m = c.model;
  if (m.layers <= 0 || m.vocab <= 1 || m.positions <= 0 || c.batch <= 0 || c.seq <= 1 ||
      c.accum <= 0)
    bad("layers, batch, accumulation must be positive, vocab and seq above 1");
  if (c.seq > m.positions)
    bad("seq above the model's " + std::to_string(m.positions) + " positions");
  if (m.padded_vocab() > kMaxCrossEntropyWidth)
    bad("vocab above " + std::to_string(kMaxCrossEntropyWidth) + " (the loss kernel's width)");
  if (m.kind == LmKind::masked && (m.token_types <= 0 || m.token_types > 4))
    bad("a masked LM needs 1 to 4 token types");
  if (c.mlm_probability <= 0.f || c.mlm_probability > 1.f) bad("mlm probability must be in (0, 1]");
  if (m.llama && (m.kind != LmKind::causal || c.dropout != 0.f || m.positions < c.seq))
    bad("a Llama model is a causal LM without dropout");
  if (c.ranks < 1 || c.ranks > 4096) bad("ranks must be 1 to 4096");
  if (c.rank < 0 || c.rank >= c.ranks)
    bad("rank " + std::to_string(c.rank) + " of " + std::to_string(c.ranks));
  if (c.shard_weights && (c.ranks < 2 || !c.shard_optimizer || c.tp_size > 1))
    bad("sharded weights (ZeRO-3) take 2 or more data-parallel ranks with a sharded optimizer");
  if (c.precision == Precision::fp8 && (c.ranks > 1 || c.tp_size > 1))
    XF_THROW(Unsupported, c.describe() + ": fp8 trains on one GPU so far");
  if (c.tp_size > 1 && c.ranks > 1)
    XF_THROW(Unsupported, c.describe() + ": tensor parallelism (tp " + std::to_string(c.tp_size) +
                              ") with data parallelism (" + std::to_string(c.ranks) +
                              " ranks) is not implemented: the tensor-parallel size is the GPU "
                              "count");
  // widths, heads, the backend's limits (tf32/fp32: the unfused attention backend only)
  check_block_config(c.block());
}

double train_flops_per_sample(const TrainConfig& c) {
  BlockConfig one = c.block();
  one.batch = 1;
  const double layer = block_forward_flops(one);  // 8sh² + 4s²h + 4shI
  const double head = 2.0 * c.seq * c.model.hidden * c.model.vocab;
  return (c.checkpointing ? 4.0 : 3.0) * (c.model.layers * layer + head);
}

std::vector<TokenBatch> step_data(const TrainConfig& c, int rank) {
  std::vector<TokenBatch> out;
  for (int k = 0; k < c.accum; ++k)
    out.push_back(synthetic_batch(c, c.seed + std::uint64_t(rank) * c.accum + k));
  return out;
}

TokenBatch concatenate(const std::vector<TokenBatch>& parts) {
  TokenBatch all;
  all.seq = parts.front().seq;
  for (const TokenBatch& p : parts) {
    const int offset = all.batch * all.seq;
    all.batch += p.batch;
    all.ids.insert(all.ids.end(), p.ids.begin(), p.ids.end());
    all.type_ids.insert(all.type_ids.end(), p.type_ids.begin(), p.type_ids.end());
    all.labels.insert(all.labels.end(), p.labels.begin(), p.labels.end());
    for (int r : p.head_rows) all.head_rows.push_back(r + offset);
    all.head_targets.insert(all.head_targets.end(), p.head_targets.begin(), p.head_targets.end());
  }
  return all;
}

TokenBatch synthetic_batch(const TrainConfig& c, std::uint64_t seed) {
  TokenBatch d;
  d.batch = c.batch, d.seq = c.seq;
  const int V = c.model.vocab, T = c.tokens();
  Rng rng{seed * 0x2545F4914F6CDD1DULL + 1};
  d.ids.resize(T);
  for (int& id : d.ids) id = rng.below(V);
  d.labels.assign(T, kIgnoreIndex);
  if (c.model.kind == LmKind::causal) {
    for (int t = 0; t < T; ++t) {
      if ((t + 1) % c.seq != 0) d.labels[t] = d.ids[t + 1];
      d.head_rows.push_back(t);
      d.head_targets.push_back(d.labels[t]);
    }
    return d;
  }
  d.type_ids.assign(T, 0);
  const int mask_id = std::min(kMaskTokenId, V - 1);
  std::vector<int> pos(c.seq);
  for (int b = 0; b < c.batch; ++b) {
    std::iota(pos.begin(), pos.end(), 0);
    for (int i = 0; i < c.masked_per_sequence(); ++i) {  // a partial Fisher-Yates shuffle
      std::swap(pos[i], pos[i + rng.below(c.seq - i)]);
    }
    std::sort(pos.begin(), pos.begin() + c.masked_per_sequence());
    for (int i = 0; i < c.masked_per_sequence(); ++i) {
      const int t = b * c.seq + pos[i];
      d.labels[t] = d.ids[t];
      const double u = rng.uniform();
      if (u < 0.8)
        d.ids[t] = mask_id;
      else if (u < 0.9)
        d.ids[t] = rng.below(V);
      d.head_rows.push_back(t);
      d.head_targets.push_back(d.labels[t]);
    }
  }
  return d;
}

namespace {
// Word w's id in the vocabulary, and its successors (words), fixed for every run.
int word_id(int w, int vocab) { return int(std::int64_t(w) * vocab / kLanguageWords); }
const std::vector<std::array<int, 4>>& successors() {
  static const std::vector<std::array<int, 4>> table = [] {
    std::vector<std::array<int, 4>> t(kLanguageWords);
    Rng rng{0x5eed1a9e};
    for (auto& next : t)
      for (std::size_t j = 0; j < next.size(); ++j) {
        do next[j] = rng.below(kLanguageWords);  // four different words: the entropy is exact
        while (std::find(next.begin(), next.begin() + j, next[j]) != next.begin() + j);
      }
    return t;
  }();
  return table;
}
}  // namespace

TokenBatch language_batch(const TrainConfig& c, std::uint64_t seed) {
  if (c.model.kind != LmKind::causal)
    XF_THROW(InvalidArgument, "language_batch: a causal model's data, not " + c.model.name + "'s");
  if (c.model.vocab < kLanguageWords)
    XF_THROW(InvalidArgument,
             "language_batch: a vocabulary of at least " + std::to_string(kLanguageWords) + " ids");
  TokenBatch d;
  d.batch = c.batch, d.seq = c.seq;
  const int V = c.model.vocab, T = c.tokens();
  Rng rng{seed * 0xD1B54A32D192ED03ULL + 7};
  d.ids.resize(T);
  for (int b = 0; b < c.batch; ++b) {
    int w = rng.below(kLanguageWords);
    for (int t = 0; t < c.seq; ++t) {
      d.ids[std::size_t(b) * c.seq + t] = word_id(w, V);
      double u = rng.uniform();
      int j = 0;
      while (j < 3 && u >= kLanguageOdds[j]) u -= kLanguageOdds[j++];
      w = successors()[std::size_t(w)][std::size_t(j)];
    }
  }
  d.labels.assign(T, kIgnoreIndex);
  for (int t = 0; t < T; ++t) {
    if ((t + 1) % c.seq != 0) d.labels[t] = d.ids[t + 1];
    d.head_rows.push_back(t);
    d.head_targets.push_back(d.labels[t]);
  }
  return d;
}

double language_entropy() {
  double h = 0;
  for (double p : kLanguageOdds) h -= p * std::log(p);
  return h;
}

}  // namespace xfbench::kernels
