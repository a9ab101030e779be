#include "kernels/models/detail/language_model_layout.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "kernels/embedding.hpp"
#include "kernels/gemm.hpp"
#include "kernels/grad_norm.hpp"
#include "kernels/layernorm.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels::detail {
namespace {

constexpr std::size_t kAlign = 256;       // bytes: GEMM operands (gemm.hpp's default)
constexpr std::size_t kParamAlign = 128;  // elements: 256 bytes of fp16/bf16, 512 of fp32
std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

bool decays(const std::string& name) {
  const std::string local = name.substr(name.find('.') + 1);  // "layer3.bqkv" -> "bqkv"
  const bool bias =
      local[0] == 'b' || local.size() > 2 && local.compare(local.size() - 2, 2, "_b") == 0;
  return !bias && local.find("ln") == std::string::npos;
}

struct Builder {
  ModelLayout& l;
  std::map<std::string, std::string> part_of;  // arena key -> memory plan part
  std::map<std::string, std::size_t> part_bytes;

  std::size_t next_order = 0;  // of the parameters outside the blocks, in the one-GPU order
  void param(const std::string& name, std::size_t elements, std::size_t used = 0) {
    put(name, elements, used, next_order++);
  }
  void put(const std::string& name, std::size_t elements, std::size_t used, std::size_t order) {
    ParamSlot s{name, l.param_elements, elements, used ? used : elements, decays(name), order};
    l.params.push_back(s);
    l.param_elements = round_up(l.param_elements + elements, kParamAlign);
  }
  // Starts a group of parameters whose gradients the backward finishes together, at a multiple
  // of `align` elements.
  void group(std::size_t align) {
    l.param_elements = round_up(l.param_elements, align);
    l.groups.push_back(l.param_elements);
  }
  // A slot of at least `bytes` under `key` (shared keys take the largest request).
  void slot(const std::string& key, std::size_t bytes, const std::string& part) {
    auto it = l.arena.find(key);
    if (it != l.arena.end()) {
      if (bytes > it->second.bytes) it->second.bytes = bytes;
      return;
    }
    l.arena[key] = {0, bytes};
    part_of[key] = part;
  }
  void finish() {  // offsets in key order; parts summed
    for (auto& kv : l.arena) {
      kv.second.offset = l.arena_bytes;
      l.arena_bytes += round_up(kv.second.bytes, kAlign);
      part_bytes[part_of[kv.first]] += round_up(kv.second.bytes, kAlign);
    }
  }
};

const char* part_of_role(TensorRole r) {
  switch (r) {
    case TensorRole::input:
    case TensorRole::output:
      return "layer inputs and outputs";
    case TensorRole::input_grad:
    case TensorRole::output_grad:
      return "gradients between layers";
    case TensorRole::saved:
      return "saved activations";
    default:
      return "scratch";
  }
}

}  // namespace

std::vector<BlockTensor> probe_block_tensors(const BlockConfig& c) {
  std::vector<BlockTensor> out;
  std::uintptr_t next = std::uintptr_t(1) << 44;  // never backed, never dereferenced
  TransformerBlock probe(c, BlockPart::layer,
                         [&](const std::string& name, TensorRole role, std::size_t bytes) {
                           out.push_back({name, role, bytes});
                           void* p = reinterpret_cast<void*>(next);
                           next += round_up(bytes, kAlign);
                           return p;
                         });
  return out;
}

const ParamSlot& ModelLayout::param(const std::string& name) const {
  for (const ParamSlot& p : params)
    if (p.name == name) return p;
  XF_THROW(InvalidArgument, "language model: no parameter '" + name + "'");
}

const ArenaSlot& ModelLayout::slot(const std::string& key) const {
  auto it = arena.find(key);
  if (it == arena.end()) XF_THROW(InvalidArgument, "language model: no buffer '" + key + "'");
  return it->second;
}

std::string arena_key(int layer, int layers, bool checkpointing, const BlockTensor& t) {
  switch (t.role) {
    case TensorRole::input:
      return "boundary" + std::to_string(layer);
    case TensorRole::output:
      return "boundary" + std::to_string(layer + 1);
    case TensorRole::output_grad:
      return "dgrad" + std::to_string((layers - 1 - layer) % 2);
    case TensorRole::input_grad:
      return "dgrad" + std::to_string((layers - layer) % 2);
    case TensorRole::saved:
      return checkpointing ? "saved." + t.name : "layer" + std::to_string(layer) + "." + t.name;
    case TensorRole::scratch:
      return "scratch." + t.name;
    default:
      return "";  // parameters and gradients: the flat buffers
  }
}

DeviceSizes device_sizes(const TrainConfig& c) {
  const LmModel& m = c.model;
  DeviceSizes s;
  s.norm_scratch = norm_backward_scratch_bytes(m.hidden);
  s.embedding_scratch = embedding_backward_scratch_bytes(
      c.batch, c.seq, m.hidden, m.vocab, m.kind == LmKind::masked ? m.token_types : 0);
  s.gemm_workspaces = GemmOptions{}.workspace_bytes * kGemmWorkspaces;
  return s;
}

ModelLayout make_layout(const TrainConfig& c, const std::vector<BlockTensor>& block,
                        const DeviceSizes& sizes) {
  const LmModel& m = c.model;
  const bool masked = m.kind == LmKind::masked;
  const std::size_t H = m.hidden, Vp = m.padded_vocab(), T = c.tokens(), R = c.head_rows();
  // 2: fp16/bf16 (and fp8's bf16 storage), 4: tf32/fp32
  const std::size_t e = elem_size(input_type(storage_precision(c.precision)));
  ModelLayout l;
  Builder b{l, {}, {}};

  // Layer i's k-th parameter, in the one-GPU order after the embeddings' (their count: `first`).
  std::vector<const BlockTensor*> block_params;
  for (const BlockTensor& t : block)
    if (t.role == TensorRole::parameter) block_params.push_back(&t);
  const std::size_t first = masked ? 5 : m.learned_positions() ? 2 : 1;  // embedding tables
  const std::size_t per_layer = block_params.size();
  const BlockConfig bc = c.block();
  auto split = [&](std::size_t k) {
    return c.tp_size > 1 && tp_split(bc, block_params[k]->name).split;
  };
  auto layer_param = [&](int i, std::size_t k) {
    b.put("layer" + std::to_string(i) + "." + block_params[k]->name, block_params[k]->bytes / e, 0,
          first + i * per_layer + k);
  };
  // Tensor parallel: the split parameters of every layer first (ModelLayout::tp_split_elements).
  for (int i = 0; i < m.layers; ++i)
    for (std::size_t k = 0; k < per_layer; ++k)
      if (split(k)) layer_param(i, k);
  l.tp_split_elements = l.param_elements;

  // Data parallel: groups at multiples of ranks × 128 elements (equal shards of whole groups).
  const std::size_t group_align = kParamAlign * std::size_t(c.ranks);
  b.group(group_align);
  b.param("word", Vp * H, std::size_t(m.vocab) * H);
  if (m.learned_positions()) b.param("position", std::size_t(m.positions) * H);
  if (masked)
    b.param("type", std::size_t(m.token_types) * H), b.param("emb_ln_w", H), b.param("emb_ln_b", H);
  for (int i = 0; i < m.layers; ++i) {
    b.group(group_align);
    for (std::size_t k = 0; k < per_layer; ++k)
      if (!split(k)) layer_param(i, k);
  }
  b.next_order = first + m.layers * per_layer;
  b.group(group_align);
  if (masked) {
    b.param("head_w", H * H), b.param("head_b", H), b.param("head_ln_w", H),
        b.param("head_ln_b", H);
    b.param("decoder_b", Vp);
  } else {
    b.param("lnf_w", H);
    if (!m.llama) b.param("lnf_b", H);  // Llama: RMSNorm
    if (!m.tied_head) b.param("lm_head", Vp * H, std::size_t(m.vocab) * H);
  }
  l.param_elements = round_up(l.param_elements, group_align);
  if (c.shard_weights) {  // the layers' groups: [groups[1], groups[layers + 1]), equal sizes
    ShardedRegion& z = l.sharded;
    z.begin = l.groups.at(1), z.end = l.groups.at(std::size_t(m.layers) + 1);
    z.group = (z.end - z.begin) / std::size_t(m.layers);
    z.rank = c.rank, z.ranks = c.ranks;
    for (int i = 0; i < m.layers; ++i)
      if (l.groups[std::size_t(i) + 1] != z.begin + std::size_t(i) * z.group)
        XF_THROW(InvalidArgument, "language model: layers of different sizes cannot be sharded");
  }

  for (int i = 0; i < m.layers; ++i)
    for (const BlockTensor& t : block) {
      const std::string key = arena_key(i, m.layers, c.checkpointing, t);
      if (!key.empty()) b.slot(key, t.bytes, part_of_role(t.role));
    }
  const char* head = "LM head and loss";
  const char* emb = "embeddings";
  if (masked) {
    b.slot("emb.sum", T * H * e, emb);
    b.slot("emb.mean", T * 4, emb), b.slot("emb.rstd", T * 4, emb);
    b.slot("emb.types", c.accum * T * 4, emb);
    for (const char* k : {"head.in", "head.pre", "head.act", "head.dact"})
      b.slot(k, R * H * e, head);
  }
  b.slot("emb.ids", c.accum * T * 4, emb);
  b.slot("emb.scratch", sizes.embedding_scratch, emb);
  b.slot("head.out", R * H * e, head), b.slot("head.dout", R * H * e, head);
  b.slot("head.mean", R * 4, head), b.slot("head.rstd", R * 4, head);
  b.slot("head.rows", c.accum * R * 4, head), b.slot("head.targets", c.accum * R * 4, head);
  b.slot("head.logits", std::size_t(c.head_chunk_rows()) * Vp * e, head);  // a chunk's rows
  b.slot("head.losses", R * 4, head), b.slot("head.loss", 4, head);
  b.slot("norm_scratch", sizes.norm_scratch, "scratch");
  b.slot("scalars", sizeof(TrainScalars), "optimizer");
  b.slot("grad_norm_scratch", grad_norm_scratch_bytes(), "optimizer");
  std::size_t largest = 0;
  for (const ParamSlot& p : l.params) largest = std::max(largest, p.elements);
  if (c.optimizer == OptimizerKind::unfused)  // adamw_unfused_scratch_bytes: two fp32 temporaries
    b.slot("adamw_scratch", 2 * 4 * largest, "optimizer");
  b.finish();

  const std::size_t P = l.param_elements, stored = l.sharded.stored_elements(P);
  l.plan.parts.push_back({"parameters", stored * e});
  l.plan.parts.push_back({"gradients", stored * e});
  if (c.shard_weights)  // two of a layer's weights and two of its gradients
    l.plan.parts.push_back({"ZeRO-3 layer windows", 4 * l.sharded.group * e});
  if (c.accum > 1) l.plan.parts.push_back({"gradient accumulation", P * e});
  // ZeRO-2: AdamW's state of one shard (its gradients and weights are reduced and gathered in
  // place, in the flat buffers).
  const std::size_t S = c.shard_optimizer ? P / std::size_t(c.ranks) : P;
  // tf32/fp32: the weights are the master copy (LanguageModel::Impl::weights_are_master).
  if (e == 4)
    l.plan.parts.push_back({"AdamW moments", 2 * S * 4});
  else
    l.plan.parts.push_back({"fp32 master weights and AdamW moments", 3 * S * 4});
  for (const auto& kv : b.part_bytes) l.plan.parts.push_back({kv.first, kv.second});
  // fp8: each layer's weights cast to E4M3, and their transposes (Fp8Linear's own copies).
  if (c.precision == Precision::fp8) {
    std::size_t weights = 0;
    for (const BlockTensor& t : block)
      if (t.role == TensorRole::parameter && t.name[0] == 'w') weights += t.bytes / e;
    l.plan.parts.push_back({"FP8 weight copies", 2 * weights * std::size_t(m.layers)});
  }
  l.plan.parts.push_back({"cuBLASLt workspaces", sizes.gemm_workspaces});
  return l;
}

}  // namespace xfbench::kernels::detail

namespace xfbench::kernels {

std::size_t MemoryPlan::total() const {
  std::size_t t = 0;
  for (const Part& p : parts) t += p.bytes;
  return t;
}

std::string MemoryPlan::describe() const {
  std::string out;
  char buf[96];
  for (const Part& p : parts) {
    std::snprintf(buf, sizeof buf, "%s%s %.2f GB", out.empty() ? "" : ", ", p.what.c_str(),
                  p.bytes / 1e9);
    out += buf;
  }
  return out;
}

bool ShardedRegion::holds(std::size_t element) const {
  if (element < begin || element >= end) return true;
  const std::size_t in_group = (element - begin) % group;
  return in_group / chunk() == std::size_t(rank);
}

std::size_t ShardedRegion::stored(std::size_t element) const {
  if (element < begin) return element;
  if (element >= end) return element - (end - begin) + (end - begin) / std::size_t(ranks);
  if (!holds(element))
    XF_THROW(InvalidArgument, "language model: element " + std::to_string(element) +
                                  " is another rank's (ZeRO-3, rank " + std::to_string(rank) +
                                  " of " + std::to_string(ranks) + ")");
  const std::size_t layer = (element - begin) / group, in_group = (element - begin) % group;
  return begin + layer * chunk() + (in_group - std::size_t(rank) * chunk());
}

std::size_t ShardedRegion::stored_elements(std::size_t elements) const {
  return elements - (end - begin) + (end - begin) / std::size_t(ranks);
}

}  // namespace xfbench::kernels
