// The block's configurations: names, the model factories (BERT, GPT-2, T5, Llama), the checks
// every backend relies on, tensor-parallel shards and the seeds' FLOP counts.
#include <algorithm>
#include <initializer_list>

#include "kernels/models/detail/transformer_block_impl.hpp"
#include "kernels/models/transformer_block.hpp"

namespace xfbench::kernels {

const char* to_string(AttentionBackend b) {
  switch (b) {
    case AttentionBackend::fused:
      return "fused";
    case AttentionBackend::flash:
      return "flash";
    default:
      return "unfused";
  }
}

const char* to_string(BlockPart p) {
  switch (p) {
    case BlockPart::layer:
      return "layer";
    case BlockPart::dense:
      return "dense";
    case BlockPart::dense_gelu:
      return "dense_gelu";
    case BlockPart::ffn:
      return "ffn";
    case BlockPart::attention:
      return "attention";
    case BlockPart::norm_qkv:
      return "norm_qkv";
  }
  return "?";
}

const char* to_string(NormPlacement p) { return p == NormPlacement::pre ? "pre-LN" : "post-LN"; }

const char* to_string(TensorRole r) {
  switch (r) {
    case TensorRole::input:
      return "input";
    case TensorRole::output:
      return "output";
    case TensorRole::input_grad:
      return "input gradient";
    case TensorRole::output_grad:
      return "output gradient";
    case TensorRole::parameter:
      return "parameter";
    case TensorRole::gradient:
      return "gradient";
    case TensorRole::saved:
      return "saved";
    case TensorRole::scratch:
      return "scratch";
  }
  return "?";
}

std::string BlockConfig::describe() const {
  return name + " hidden " + std::to_string(hidden) + ", heads " + std::to_string(heads) +
         (kv_head_count() != heads ? ", kv heads " + std::to_string(kv_head_count()) : "") +
         (head_size && head_size * heads != hidden ? ", head dim " + std::to_string(head_size)
                                                   : "") +
         ", intermediate " + std::to_string(intermediate) + ", batch " + std::to_string(batch) +
         ", seq " + std::to_string(seq) + ", " + to_string(precision) + ", " + to_string(backend) +
         (tp_size != 1 ? ", tensor-parallel rank " + std::to_string(tp_rank) + " of " +
                             std::to_string(tp_size)
                       : "");
}

BlockConfig BlockConfig::shard() const {
  if (tp_size <= 1) return *this;
  BlockConfig s = *this;
  s.head_size = head_dim();
  s.heads = heads / tp_size;
  s.kv_heads = kv_heads / tp_size;  // 0 (as many as heads) stays 0
  s.intermediate = intermediate / tp_size;
  return s;
}

TpSplit tp_split(const BlockConfig& c, const std::string& name) {
  const std::int64_t H = c.hidden, A = c.attention_width(), I = c.intermediate,
                     KV = std::int64_t(c.kv_head_count()) * c.head_dim();
  auto rows = [](std::initializer_list<std::int64_t> part_rows, std::int64_t k) {
    TpSplit s{true, int(part_rows.size())};
    std::copy(part_rows.begin(), part_rows.end(), s.part_rows);
    s.cols = k;
    return s;
  };
  auto cols = [](std::int64_t r, std::int64_t k) { return TpSplit{true, 1, {r}, k, true}; };
  if (name == "wqkv") return rows({A, KV, KV}, H);
  if (name == "bqkv") return rows({A, KV, KV}, 1);
  if (name == "wq_cross") return rows({A}, H);
  if (name == "wkv_cross") return rows({A, A}, H);
  if (name == "wi") return c.gated_ffn ? rows({I, I}, H) : rows({I}, H);
  if (name == "bi") return rows({I}, 1);
  if (name == "wo" || name == "wo_cross") return cols(H, A);
  if (name == "wout") return cols(H, I);
  constexpr int kBuckets = 32;  // the table's rows: RelativePositionBias's default num_buckets
  if (name == "rel_bias") return cols(kBuckets, c.heads);
  return TpSplit{};
}

BlockConfig bert_block(int hidden, int heads, int intermediate) {
  BlockConfig c;
  c.hidden = hidden, c.heads = heads, c.intermediate = intermediate;
  return c;
}

BlockConfig gpt2_block(int hidden, int heads, int inner) {
  BlockConfig c;
  c.name = "GPT2Block";
  c.hidden = hidden, c.heads = heads, c.intermediate = inner;
  c.placement = NormPlacement::pre;
  c.eps = 1e-5f;
  c.activation = Activation::gelu_tanh;
  c.causal = true;
  return c;
}

BlockConfig t5_block(int d_model, int heads, int d_kv, int d_ff, bool decoder, bool gated) {
  BlockConfig c;
  c.name = decoder ? "T5Decoder" : "T5Encoder";
  c.hidden = d_model, c.heads = heads, c.head_size = d_kv, c.intermediate = d_ff;
  c.placement = NormPlacement::pre;
  c.norm = NormKind::rmsnorm;
  c.eps = 1e-6f;
  c.activation = gated ? Activation::gelu_tanh : Activation::relu;  // "gated-gelu" is gelu_new
  c.gated_ffn = gated;
  c.ffn_dropout = true;
  c.linear_bias = false;
  c.scale_scores = false;
  c.relative_bias = true;
  c.causal = decoder;
  c.cross_attention = decoder;
  return c;
}

BlockConfig llama_block(int hidden, int heads, int kv_heads, int head_dim, int intermediate,
                        const RopeConfig& rope) {
  BlockConfig c;
  c.name = "LlamaBlock";
  c.hidden = hidden, c.heads = heads, c.kv_heads = kv_heads, c.head_size = head_dim;
  c.intermediate = intermediate;
  c.placement = NormPlacement::pre;
  c.norm = NormKind::rmsnorm;
  c.eps = 1e-5f;
  c.activation = Activation::silu;
  c.gated_ffn = true;
  c.linear_bias = false;
  c.causal = true;
  c.set_dropout(0.f);
  c.rotary = true;
  c.rope = rope;
  return c;
}

void check_block_config(const BlockConfig& c, BlockPart part) {
  auto bad = [&](const std::string& why) { XF_THROW(InvalidArgument, c.describe() + ": " + why); };
  const bool fp32_storage = c.precision == Precision::tf32 || c.precision == Precision::fp32;
  if (!fp32_storage && c.precision != Precision::fp16 && c.precision != Precision::bf16 &&
      c.precision != Precision::fp8)
    bad("precision must be fp16, bf16, fp8, tf32 or fp32");
  if (c.precision == Precision::fp8) {
    if (c.tp_size > 1)
      XF_THROW(Unsupported, c.describe() + ": fp8 runs without tensor parallelism so far");
    if (c.linear_bias && c.qkv_width() > kMaxBiasGradWidth)  // no bias-gradient epilogue in FP8
      XF_THROW(Unsupported, c.describe() + ": fp8 with linear biases takes QKV widths up to " +
                                std::to_string(kMaxBiasGradWidth));
    for (long long v : {(long long)c.tokens(), (long long)c.hidden, (long long)c.intermediate,
                        (long long)c.qkv_width(), (long long)c.attention_width()})
      if (v % 16 != 0)
        bad("fp8 products need tokens, hidden, intermediate and the projections' widths in "
            "multiples of 16");
  }
  if (c.hidden <= 0 || c.heads <= 0 || c.intermediate <= 0 || c.batch <= 0 || c.seq <= 0)
    bad("sizes must be positive");
  if (c.head_size < 0) bad("head size must be positive (0: hidden / heads)");
  if (c.head_size == 0 && c.hidden % c.heads != 0) bad("hidden is not divisible by heads");
  if (c.head_dim() % 8 != 0)
    bad("head dim " + std::to_string(c.head_dim()) + " is not a multiple of 8");
  if (c.hidden % 8 != 0 || c.intermediate % 8 != 0)
    bad("hidden and intermediate must be multiples of 8");
  if (c.hidden > kMaxNormWidth)
    bad("hidden above " + std::to_string(kMaxNormWidth) + " (LayerNorm width)");
  if (c.linear_bias && c.intermediate > kMaxBiasGradWidth)
    bad("intermediate above " + std::to_string(kMaxBiasGradWidth) + " (bias-gradient width)");
  if (c.attention_dropout < 0.f || c.attention_dropout >= 1.f || c.residual_dropout < 0.f ||
      c.residual_dropout >= 1.f)
    bad("dropout must be in [0, 1)");
  // T5's parts come together: RMSNorm means a pre-norm block without linear biases (the fused
  // kernels of each kind assume as much), and only such a block takes the rest of T5.
  if (t5_like(c) && (c.placement != NormPlacement::pre || c.linear_bias))
    bad("RMSNorm is implemented for pre-norm blocks without linear biases (T5)");
  if (!t5_like(c) && (!c.linear_bias || c.activation == Activation::relu || c.gated_ffn ||
                      c.ffn_dropout || c.relative_bias || c.cross_attention))
    bad("linears without biases, ReLU or gated FFNs, FFN dropout, the relative position bias "
        "and cross-attention come with the T5 block (RMSNorm, pre-norm): t5_block()");
  if (c.gated_ffn && c.activation == Activation::relu) bad("a gated FFN takes a GELU or SiLU");
  if (!c.gated_ffn && c.activation == Activation::silu)
    bad("SiLU is implemented as the gate of a gated FFN (Llama's SwiGLU)");
  if (c.kv_heads < 0 || c.heads % c.kv_head_count() != 0)
    bad(std::to_string(c.heads) + " query heads do not split into groups over " +
        std::to_string(c.kv_heads) + " key/value heads");
  const bool gqa = c.kv_head_count() != c.heads;
  if (gqa && (c.cross_attention || c.relative_bias || !t5_like(c)))
    bad("grouped-query attention is implemented for the Llama block (no cross-attention or "
        "relative position bias)");
  if (c.rotary && (c.relative_bias || c.head_dim() % 2 != 0))
    bad("rotary embeddings need an even head dim and no relative position bias");
  if (c.rotary) rope_inv_freq(c.rope, c.head_dim());  // throws InvalidArgument for a bad config
  if (c.tp_size < 1 || c.tp_rank < 0 || c.tp_rank >= c.tp_size)
    bad("tensor-parallel rank " + std::to_string(c.tp_rank) + " of " + std::to_string(c.tp_size));
  if (c.tp_size > 1) {
    if (c.heads % c.tp_size != 0)
      bad(std::to_string(c.heads) + " heads do not split over tensor-parallel size " +
          std::to_string(c.tp_size));
    if (c.kv_head_count() % c.tp_size != 0)
      bad(std::to_string(c.kv_head_count()) +
          " key/value heads do not split over tensor-parallel size " + std::to_string(c.tp_size));
    if (c.intermediate % (8 * c.tp_size) != 0)
      bad("intermediate " + std::to_string(c.intermediate) +
          " does not split over tensor-parallel size " + std::to_string(c.tp_size) +
          " into multiples of 8");
    if (part != BlockPart::layer)
      bad(std::string("tensor parallelism takes the whole layer, not part ") + to_string(part));
  }
  const bool pre_part =
      part == BlockPart::attention || part == BlockPart::ffn || part == BlockPart::norm_qkv;
  if (c.placement == NormPlacement::pre && part != BlockPart::layer &&
      (!pre_part || c.backward || c.cross_attention || c.relative_bias || c.linear_bias))
    bad(std::string("part ") + to_string(part) +
        " of a pre-norm block: attention, ffn and norm_qkv forward only, of a block without "
        "biases, cross-attention or position bias (Llama's; the dense parts are BERT's)");
  if (c.placement == NormPlacement::post && part == BlockPart::norm_qkv)
    bad("part norm_qkv is of a pre-norm block");
  if (c.backend == AttentionBackend::unfused && c.seq % 8 != 0)
    bad("the unfused backend needs seq % 8 == 0");
  if (c.backend == AttentionBackend::unfused && c.seq > kMaxSoftmaxWidth)
    XF_THROW(Unsupported, "the unfused backend's softmax takes seq <= " +
                              std::to_string(kMaxSoftmaxWidth) + ", not " + std::to_string(c.seq));
  if (fp32_storage && c.backend != AttentionBackend::unfused)
    XF_THROW(Unsupported, std::string(to_string(c.precision)) +
                              ": cuDNN SDPA (fused) and xfbench's flash attention take fp16 and "
                              "bf16 only; the unfused attention backend runs tf32 and fp32");
  if (c.backend == AttentionBackend::fused && c.head_dim() > 128) {
    XF_THROW(Unsupported,
             "cuDNN SDPA takes head dims up to 128, not " + std::to_string(c.head_dim()));
  }
  if (c.backend == AttentionBackend::flash) {
    if ((c.head_dim() != 64 && c.head_dim() != 128) || c.seq % 64 != 0)
      XF_THROW(Unsupported,
               "xfbench's flash attention takes head dim 64 or 128 and seq % 64 == 0, not " +
                   std::to_string(c.head_dim()) + " and " + std::to_string(c.seq));
    if (c.head_dim() == 128 && c.relative_bias)
      XF_THROW(Unsupported, "xfbench's flash attention at head dim 128 takes no score bias");
  }
}

double block_forward_flops(const BlockConfig& c, BlockPart part, bool causal_half) {
  const double T = c.tokens(), h = c.hidden, I = c.intermediate, A = c.attention_width();
  const double kv = double(c.kv_head_count()) * c.head_dim();  // A without grouped-query
  const double scores = (causal_half && c.causal ? 2.0 : 4.0) * c.batch * double(c.seq) * c.seq * A;
  const double attention = 2 * T * h * (A + 2 * kv) + 2 * T * h * A + scores;
  const double ffn = (c.gated_ffn ? 6 : 4) * T * h * I;
  switch (part) {
    case BlockPart::norm_qkv:
      return 2 * T * h * (A + 2 * kv);
    case BlockPart::dense:
    case BlockPart::dense_gelu:
      return 2 * T * h * I;
    case BlockPart::ffn:
      return ffn;
    case BlockPart::attention:
      return attention;
    case BlockPart::layer:
      return (c.cross_attention ? 2 : 1) * attention + ffn;
  }
  return 0;
}

}  // namespace xfbench::kernels
