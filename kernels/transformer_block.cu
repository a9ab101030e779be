#include "kernels/transformer_block.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <map>

#include "kernels/activation.hpp"
#include "kernels/dropout.hpp"
#include "kernels/fp8_linear.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/relative_position.hpp"
#include "kernels/softmax.hpp"
#include "xfbench/error.hpp"

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
  s.intermediate = intermediate / tp_size;
  return s;
}

TpSplit tp_split(const BlockConfig& c, const std::string& name) {
  const std::int64_t H = c.hidden, A = c.attention_width(), I = c.intermediate;
  auto rows = [](int parts, std::int64_t r, std::int64_t k) { return TpSplit{true, parts, r, k}; };
  auto cols = [](std::int64_t r, std::int64_t k) { return TpSplit{true, 1, r, k, true}; };
  if (name == "wqkv") return rows(3, A, H);
  if (name == "bqkv") return rows(3, A, 1);
  if (name == "wq_cross") return rows(1, A, H);
  if (name == "wkv_cross") return rows(2, A, H);
  if (name == "wi") return rows(c.gated_ffn ? 2 : 1, I, H);
  if (name == "bi") return rows(1, I, 1);
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

namespace {
// Bias gradients (column sums over tokens) up to this width run as bias_backward on the side
// stream; the QKV projection's 3·hidden above it uses cuBLASLt's bias-gradient epilogue.
constexpr int kMaxBiasGradWidth = 8192;  // bias_backward's widest row (dropout.hpp)
bool qkv_bias_by_epilogue(const BlockConfig& c) { return c.qkv_width() > kMaxBiasGradWidth; }
bool t5_like(const BlockConfig& c) { return c.norm == NormKind::rmsnorm; }
}  // namespace

void check_block_config(const BlockConfig& c, BlockPart part) {
  auto bad = [&](const std::string& why) { XF_THROW(InvalidArgument, c.describe() + ": " + why); };
  const bool fp32_storage = c.precision == Precision::tf32 || c.precision == Precision::fp32;
  if (!fp32_storage && c.precision != Precision::fp16 && c.precision != Precision::bf16 &&
      c.precision != Precision::fp8)
    bad("precision must be fp16, bf16, fp8, tf32 or fp32");
  if (c.precision == Precision::fp8) {
    if (c.placement != NormPlacement::pre || c.linear_bias || c.cross_attention || c.tp_size > 1)
      XF_THROW(Unsupported, c.describe() +
                                ": fp8 runs pre-norm blocks without linear biases, "
                                "cross-attention or tensor parallelism so far (Llama's)");
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
  if (gqa && (c.tp_size > 1 || c.cross_attention || c.relative_bias || !t5_like(c)))
    bad("grouped-query attention is implemented for the Llama block (no tensor parallelism, "
        "cross-attention or relative position bias)");
  if (c.rotary && (c.relative_bias || c.head_dim() % 2 != 0))
    bad("rotary embeddings need an even head dim and no relative position bias");
  if (c.rotary) rope_inv_freq(c.rope, c.head_dim());  // throws InvalidArgument for a bad config
  if (c.tp_size < 1 || c.tp_rank < 0 || c.tp_rank >= c.tp_size)
    bad("tensor-parallel rank " + std::to_string(c.tp_rank) + " of " + std::to_string(c.tp_size));
  if (c.tp_size > 1) {
    if (c.heads % c.tp_size != 0)
      bad(std::to_string(c.heads) + " heads do not split over tensor-parallel size " +
          std::to_string(c.tp_size));
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
    if (c.head_dim() != 64 || c.seq % 64 != 0)
      XF_THROW(Unsupported, "xfbench's flash attention takes head dim 64 and seq % 64 == 0, not " +
                                std::to_string(c.head_dim()) + " and " + std::to_string(c.seq));
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

namespace {

// Dropout sites of a step: independent Philox streams (T5 adds the cross-attention's two and the
// one inside its FFN).
enum Site : std::uint64_t {
  kAttentionProbs,
  kAttentionOut,
  kFfnOut,
  kCrossProbs,
  kCrossOut,
  kFfnInner,
  kSites
};
// Tensor parallel: the sites inside the split sublayers (attention probabilities, T5's FFN
// inner) draw other masks on each rank (Megatron's model-parallel RNG: no two ranks' heads share
// a mask); those on tensors every rank holds whole draw the same masks on every rank.
Dropout site(const BlockConfig& c, std::uint64_t step, Site s) {
  const bool probs = s == kAttentionProbs || s == kCrossProbs;
  const bool split = probs || s == kFfnInner;
  const std::uint64_t seed =
      c.dropout_seed + (split ? std::uint64_t(c.tp_rank) * 0x9E3779B97F4A7C15ULL : 0);
  return Dropout{probs ? c.attention_dropout : c.residual_dropout, seed, step * kSites + s};
}

bool has_attention(BlockPart p) {
  return p == BlockPart::layer || p == BlockPart::attention || p == BlockPart::norm_qkv;
}
bool has_ffn(BlockPart p) { return p != BlockPart::attention && p != BlockPart::norm_qkv; }

}  // namespace

struct TransformerBlock::Impl {
  BlockConfig whole;  // as given
  BlockConfig c;      // what this block computes: whole.shard()
  BlockPart part;
  TensorPlacement place;
  std::size_t elem;  // bytes per element of the storage type
  struct Tensor {
    void* p;
    std::size_t elements, bytes;
    TensorRole role;
    bool owned;  // allocated here (else placed by the caller)
  };
  std::map<std::string, Tensor> tensors;
  std::size_t bytes = 0, owned_bytes = 0;
  // An attention core on one backend: the self-attention, and T5's decoder cross-attention
  // (its buffers named with the suffix "_cross").
  struct Core {
    AttentionDesc desc;
    std::string suffix;
    std::unique_ptr<UnfusedAttention> unfused;
    std::unique_ptr<CudnnAttention> fused;
    std::unique_ptr<FlashAttention> flash;
  };
  Core self_attn, cross_attn;
  std::unique_ptr<RelativePositionBias> rel;  // T5's position bias from its table
  std::unique_ptr<RotaryEmbedding> rope;      // Llama's rotary embeddings on q and k
  // GEMM plans (cached process-wide by gemm_plan).
  Gemm *qkv = nullptr, *proj = nullptr, *up = nullptr, *down = nullptr;
  Gemm *d_down_w = nullptr, *d_down_x = nullptr, *d_up_w = nullptr, *d_up_x = nullptr;
  Gemm *d_proj_w = nullptr, *d_proj_x = nullptr, *d_qkv_w = nullptr, *d_qkv_x = nullptr;
  Gemm *q_cross = nullptr, *kv_cross = nullptr;  // the cross-attention's (proj as above)
  Gemm *d_q_cross_w = nullptr, *d_q_cross_x = nullptr, *d_kv_cross_w = nullptr,
       *d_kv_cross_x = nullptr;

  Impl(const BlockConfig& config, BlockPart p, const TensorPlacement& pl)
      : whole(config),
        c(config.shard()),
        part(p),
        place(pl),
        elem(elem_size(input_type(storage_precision(config.precision)))) {}
  ~Impl() {
    for (auto& kv : tensors)
      if (kv.second.owned) cudaFree(kv.second.p);
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    if (side) cudaStreamDestroy(side);
  }

  bool pre() const { return c.placement == NormPlacement::pre; }
  // Tensor parallel: the sum over the ranks of their partial [tokens, hidden] products at p.
  void tp_sum(void* p, cudaStream_t s) const {
    if (c.tp_size > 1)
      c.tp_reduce(p, std::size_t(c.tokens()) * c.hidden, input_type(storage_precision(c.precision)),
                  s);
  }
  void check_tp_reduce() const {
    if (c.tp_size > 1 && !c.tp_reduce)
      XF_THROW(InvalidArgument, c.describe() + ": a tensor-parallel block needs tp_reduce");
  }
  // The first rank adds a partial product to what `beta` keeps (the residual's gradient, the same
  // on every rank); the others contribute theirs alone, so the sum counts it once.
  float tp_beta(float beta) const { return c.tp_rank == 0 ? beta : 0.f; }
  bool rms() const { return c.norm == NormKind::rmsnorm; }
  Gelu gelu() const { return c.activation == Activation::gelu_tanh ? Gelu::tanh : Gelu::erf; }
  GateAct gate() const {
    return c.activation == Activation::silu ? GateAct::silu : gate_act(gelu());
  }

  // The caller's placement, else a cudaMalloc of this block's own.
  void* alloc(const std::string& name, std::size_t n, std::size_t elem_bytes, TensorRole role) {
    const std::size_t size = n * elem_bytes;
    void* p = place ? place(name, role, size) : nullptr;
    const bool owned = p == nullptr;
    if (owned) {
      cudaError_t err = cudaMalloc(&p, size);
      if (err != cudaSuccess) {
        cudaGetLastError();
        XF_THROW(Unsupported, c.describe() + ": out of device memory allocating " + name + " (" +
                                  std::to_string(size >> 20) + " MiB)");
      }
      owned_bytes += size;
    }
    tensors[name] = {p, n, size, role, owned};
    bytes += size;
    return p;
  }
  void* t(const char* name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : it->second.p;
  }
  template <class U = void>
  U* at(const char* name) const {
    return static_cast<U*>(t(name));
  }
  void* offset(void* p, std::int64_t elements) const {
    return static_cast<char*>(p) + elements * elem;
  }

  // Runs a product; while tuning, first searches its algorithms on these operands (once per plan).
  bool tuning = false;
  void run(Gemm* g, cudaStream_t s, const GemmOperands& o) {
    if (tuning && !g->tuned()) g->tune(s, o);
    g->run(s, o);
  }

  // `side`: the plan runs on the side stream (weight gradients), so it gets its own workspace.
  // fp8: none (the linear layers' Fp8Linear run the products).
  Gemm* plan(std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb, Epilogue e,
             bool side = false) {
    if (c.precision == Precision::fp8) return nullptr;
    GemmDesc d;
    d.precision = c.precision;
    d.m = m, d.n = n, d.k = k, d.trans_a = ta, d.trans_b = tb, d.epilogue = e;
    GemmOptions o;
    o.private_workspace = side;
    return &gemm_plan(d, o);
  }

  // The backward computes weight gradients on a side stream, overlapping the data-gradient chain
  // (GEMMs and memory-bound kernels) on the caller's stream; fork() hands the side stream what the
  // main stream has done so far, join() makes the main stream wait for the side's work.
  cudaStream_t side = nullptr;
  std::vector<cudaEvent_t> events;
  std::size_t next_event = 0;
  cudaEvent_t event() {
    if (next_event == events.size()) {
      cudaEvent_t e;
      XF_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      events.push_back(e);
    }
    return events[next_event++];
  }
  void fork(cudaStream_t main) {
    cudaEvent_t e = event();
    XF_CUDA_CHECK(cudaEventRecord(e, main));
    XF_CUDA_CHECK(cudaStreamWaitEvent(side, e, 0));
  }
  void join(cudaStream_t main) {
    cudaEvent_t e = event();
    XF_CUDA_CHECK(cudaEventRecord(e, side));
    XF_CUDA_CHECK(cudaStreamWaitEvent(main, e, 0));
  }

  // fp8: each linear layer's FP8 products and copies, by its weight's name, and their scales
  // (three per layer: wqkv's first, then wo, wi, wout, those the part has; make_fp8_linears).
  std::unique_ptr<Fp8Scales> fp8_scales;
  std::map<std::string, std::unique_ptr<Fp8Linear>> fp8;
  Fp8Linear* fp8_of(const char* weight) const {
    auto it = fp8.find(weight);
    return it == fp8.end() ? nullptr : it->second.get();
  }
  void make_fp8_linears(bool train);

  void make_attention(Core& core, const AttentionDesc& desc, const std::string& suffix, bool train);
  std::string n(const Core& core, const char* name) const { return name + core.suffix; }
  void* t(const Core& core, const char* name) const { return t(n(core, name).c_str()); }
};

// An attention core's backend and its saved state.
void TransformerBlock::Impl::make_attention(Core& core, const AttentionDesc& desc,
                                            const std::string& suffix, bool train) {
  core.desc = desc;
  core.suffix = suffix;
  if (c.backend == AttentionBackend::unfused) {
    core.unfused = std::make_unique<UnfusedAttention>(desc, train);
    // The scores become the probabilities in place (forward only with dropout: the scores stay,
    // nothing keeps P); the second buffer holds their dropout, and is the backward's scratch.
    alloc(n(core, "probs"), core.unfused->probs_elements(), elem, TensorRole::saved);
    // dV reads the dropped probabilities: saved when a backward follows.
    if (train || c.attention_dropout > 0.f)
      alloc(n(core, "probs_work"), core.unfused->probs_elements(), elem,
            train ? TensorRole::saved : TensorRole::scratch);
  } else if (c.backend == AttentionBackend::flash) {
    core.flash = std::make_unique<FlashAttention>(desc);
    if (train && !core.flash->has_backward())  // a fact of the backend, not of this shape
      XF_THROW(Unsupported, c.name + ": xfbench's flash attention backward " +
                                (core.flash->uses_wgmma() ? "does not take this mask here"
                                                          : "needs a Hopper GPU"));
    if (train) {
      alloc(n(core, "stats"), core.flash->stats_elements(), 4, TensorRole::saved);
      alloc(n(core, "attn_delta"), core.flash->scratch_elements(), 4, TensorRole::scratch);
      // The bias gradient summed along each diagonal (all T5's bucketed table needs).
      if (desc.bias_grad)
        alloc(n(core, "dbias_diagonals"), core.flash->bias_grad_elements(), 4, TensorRole::scratch);
      alloc(n(core, "attn_keep"), std::max<std::size_t>(core.flash->keep_bytes(), 16), 1,
            TensorRole::saved);
    }
  } else {
    core.fused = std::make_unique<CudnnAttention>(desc, train);
    if (train) alloc(n(core, "stats"), core.fused->stats_elements(), 4, TensorRole::saved);
    alloc(n(core, "attn_ws"), std::max<std::size_t>(core.fused->workspace_bytes(), 16), 1,
          TensorRole::scratch);
  }
}

namespace {

// The self-attention on the packed QKV projection; T5: unscaled, with the relative position bias
// (and its gradient when training).
AttentionDesc self_attention(const BlockConfig& c, bool train) {
  AttentionDesc d = self_attention_desc(storage_precision(c.precision), c.batch, c.heads, c.seq,
                                        c.head_dim(), QkvLayout::bshd, c.kv_head_count());
  d.dropout = c.attention_dropout;
  d.causal = c.causal;
  d.scale = c.scale_scores ? 0.f : 1.f;
  d.bias = c.relative_bias;
  d.bias_grad = c.relative_bias && train;
  return d;
}

// T5's cross-attention: queries [T, A] from the decoder stream, keys and values packed [T, 2A]
// from the encoder states (as [B, S, 2, NH, HD]); no mask, no bias.
AttentionDesc cross_attention(const BlockConfig& c) {
  AttentionDesc d;
  d.precision = storage_precision(c.precision);
  d.B = c.batch, d.NH = c.heads, d.Sq = d.Sk = c.seq, d.HD = c.head_dim();
  const std::int64_t A = c.attention_width(), S = c.seq;
  d.q = d.o = {S * A, d.HD, A};
  d.k = d.v = {S * 2 * A, d.HD, 2 * A};
  d.dropout = c.attention_dropout;
  d.scale = c.scale_scores ? 0.f : 1.f;
  return d;
}

}  // namespace

TransformerBlock::TransformerBlock(const BlockConfig& config, BlockPart part,
                                   const TensorPlacement& place)
    : impl_(std::make_unique<Impl>(config, part, place)) {
  check_block_config(config, part);
  Impl& m = *impl_;
  const BlockConfig& c = m.c;
  const std::int64_t T = c.tokens(), H = c.hidden, I = c.intermediate, A = c.attention_width();
  const std::int64_t QW = c.qkv_width();  // 3A, or A + 2·kv·d with grouped-query attention
  const bool whole =                      // a part with an output [T, H] and a backward
      part == BlockPart::layer || part == BlockPart::ffn || part == BlockPart::attention;
  // Forward only (no_grad): no gradients, and nothing saved for a backward.
  const bool train = whole && c.backward;
  constexpr TensorRole saved = TensorRole::saved, scratch = TensorRole::scratch;
  auto param = [&](const char* name, std::size_t n) {
    m.alloc(name, n, m.elem, TensorRole::parameter);
    if (train) m.alloc(std::string("d") + name, n, m.elem, TensorRole::gradient);
  };
  auto linear_bias = [&](const char* name, std::size_t n) {  // T5 has none
    if (c.linear_bias) param(name, n);
  };
  auto norm = [&](const std::string& which) {  // weight (and bias) of norm `which`; T5: RMSNorm
    param(("ln" + which + "_w").c_str(), H);
    if (!m.rms()) param(("ln" + which + "_b").c_str(), H);
  };
  auto stats = [&](const std::string& which) {  // the norm's saved statistics (RMSNorm: rstd)
    if (!m.rms()) m.alloc("mean" + which, T, 4, saved);
    m.alloc("rstd" + which, T, 4, saved);
  };
  m.alloc("x", T * H, m.elem, TensorRole::input);
  if (train) m.alloc("dx", T * H, m.elem, TensorRole::input_grad);
  // A pre-norm block's parts are HF's modules alone: LlamaAttention and LlamaMLP read x itself,
  // norm_qkv stops at the projection ("qkv" its output).
  const bool pre_part = m.pre() && part != BlockPart::layer;
  const bool core = part != BlockPart::norm_qkv;  // the attention itself and o_proj
  if (has_attention(part)) {
    param("wqkv", QW * H), linear_bias("bqkv", QW);
    if (core) param("wo", H * A), linear_bias("bo", H);
    if (c.rotary && core) m.rope = std::make_unique<RotaryEmbedding>(c.rope, c.head_dim(), c.seq);
    if (!pre_part || !core) norm("1");
    if (c.relative_bias) {  // built from the table each step; its gradient scattered back
      m.rel = std::make_unique<RelativePositionBias>(c.heads, c.seq, c.seq, !c.causal);
      param("rel_bias", m.rel->table_elements());
      m.alloc("position_bias", m.rel->bias_elements(), m.elem, saved);
      if (train && c.backend != AttentionBackend::flash) {  // flash sums along diagonals
        m.alloc("dposition_bias", m.rel->bias_elements(), m.elem, scratch);
        m.alloc("rel_scratch", m.rel->scratch_bytes(), 1, scratch);
      }
    }
    // post: h1 = LN1(z1), z1 saved; pre: norm1 = LN1(x) feeds the attention, h1 is the residual.
    if (m.pre() && (!pre_part || !core)) m.alloc("norm1", T * H, m.elem, saved);
    if (train && !m.pre()) m.alloc("z1", T * H, m.elem, saved);
    if (train) stats("1");
    m.alloc("qkv", T * QW, m.elem, core ? saved : TensorRole::output);
    m.qkv = m.plan(T, QW, H, false, true, c.linear_bias ? Epilogue::bias : Epilogue::none);
    if (core) {
      m.alloc("ctx", T * A, m.elem, saved);
      if (!pre_part) m.alloc("proj", T * H, m.elem, scratch), m.alloc("h1", T * H, m.elem, saved);
      m.make_attention(m.self_attn, self_attention(c, train), "", train);
      m.proj = m.plan(T, H, A, false, true, Epilogue::none);
    }
    if (train) {
      m.alloc("dqkv", T * QW, m.elem, scratch), m.alloc("dctx", T * A, m.elem, scratch),
          m.alloc("dproj", T * H, m.elem, scratch);
      const bool epilogue = c.linear_bias && qkv_bias_by_epilogue(c);
      m.d_qkv_w =
          m.plan(QW, H, T, true, false, epilogue ? Epilogue::bgrad_a : Epilogue::none, true);
      m.d_qkv_x = m.plan(T, H, QW, false, false, Epilogue::none);
      m.d_proj_w = m.plan(H, A, T, true, false, Epilogue::none, true);
      m.d_proj_x = m.plan(T, A, H, false, false, Epilogue::none);
    }
    if (c.cross_attention) {  // T5's decoder (a pre-norm block runs whole)
      m.alloc("enc", T * H, m.elem, TensorRole::input);
      if (train) m.alloc("denc", T * H, m.elem, TensorRole::input_grad);
      param("wq_cross", A * H), param("wkv_cross", 2 * A * H), param("wo_cross", H * A);
      norm("_cross");
      m.alloc("norm_cross", T * H, m.elem, saved);
      if (train) stats("_cross");
      m.alloc("q_cross", T * A, m.elem, saved), m.alloc("kv_cross", T * 2 * A, m.elem, saved);
      m.alloc("ctx_cross", T * A, m.elem, saved), m.alloc("proj_cross", T * H, m.elem, scratch);
      m.alloc("h2", T * H, m.elem, saved);
      m.make_attention(m.cross_attn, cross_attention(c), "_cross", train);
      m.q_cross = m.plan(T, A, H, false, true, Epilogue::none);
      m.kv_cross = m.plan(T, 2 * A, H, false, true, Epilogue::none);
      if (train) {
        for (const char* g : {"dq_cross", "dctx_cross"}) m.alloc(g, T * A, m.elem, scratch);
        m.alloc("dkv_cross", T * 2 * A, m.elem, scratch);
        m.alloc("dproj_cross", T * H, m.elem, scratch), m.alloc("dh2", T * H, m.elem, scratch);
        m.d_q_cross_w = m.plan(A, H, T, true, false, Epilogue::none, true);
        m.d_q_cross_x = m.plan(T, H, A, false, false, Epilogue::none);
        m.d_kv_cross_w = m.plan(2 * A, H, T, true, false, Epilogue::none, true);
        m.d_kv_cross_x = m.plan(T, H, 2 * A, false, false, Epilogue::none);
      }
    }
  }
  if (has_ffn(part)) {
    const std::int64_t U = c.gated_ffn ? 2 * I : I;  // the up projection's width
    param("wi", U * H), linear_bias("bi", I);
    // "pre": the dense part's output (with bias), else h1·Wiᵀ without bias (cuBLASLt's bias
    // epilogue slows this GEMM by up to 20% at 32k tokens; the GELU kernel adds it for free), kept
    // for the GELU backward. Without a backward, GELU runs in place on "act". T5's ReLU needs no
    // "pre" (its backward reads the output alone); the gated GELU's [T, 2I] feeds "act" [T, I].
    const bool dense_only = part == BlockPart::dense;
    const bool relu = c.activation == Activation::relu;
    if (dense_only || (train && !relu) || c.gated_ffn)
      m.alloc("pre", T * U, m.elem, dense_only ? TensorRole::output : train ? saved : scratch);
    if (!dense_only)
      m.alloc("act", T * I, m.elem, part == BlockPart::dense_gelu ? TensorRole::output : saved);
    m.up = m.plan(T, U, H, false, true, dense_only ? Epilogue::bias : Epilogue::none);
    if (part == BlockPart::layer || part == BlockPart::ffn) {
      param("wout", H * I), linear_bias("bout", H);
      if (!pre_part) norm("2");
      // post: out = LN2(z2), z2 saved; pre: norm2 = LN2(h1) feeds the FFN.
      if (m.pre() && !pre_part) m.alloc("norm2", T * H, m.elem, saved);
      if (train && !m.pre()) m.alloc("z2", T * H, m.elem, saved);
      if (train) stats("2");
      if (!pre_part) m.alloc("o2", T * H, m.elem, scratch);
      m.down = m.plan(T, H, I, false, true, Epilogue::none);
      if (train) {
        m.alloc("dh1", T * H, m.elem, scratch), m.alloc("do2", T * H, m.elem, scratch),
            m.alloc("dact", T * I, m.elem, scratch);
        if (c.gated_ffn) m.alloc("dpre", T * U, m.elem, scratch);
        // pre: the gradient of norm2, later of norm1 (one buffer: the first is spent by then).
        if (m.pre()) m.alloc("dnorm", T * H, m.elem, scratch);
        m.d_down_w = m.plan(H, I, T, true, false, Epilogue::none, true);
        m.d_down_x = m.plan(T, I, H, false, false, Epilogue::none);
        m.d_up_w = m.plan(U, H, T, true, false, Epilogue::none, true);
        m.d_up_x = m.plan(T, H, U, false, false, Epilogue::none);
      }
    }
  }
  if (whole) m.alloc("out", T * H, m.elem, TensorRole::output);
  if (train) m.alloc("dout", T * H, m.elem, TensorRole::output_grad);
  if (train) XF_CUDA_CHECK(cudaStreamCreateWithFlags(&m.side, cudaStreamNonBlocking));
  m.alloc("scratch", norm_backward_scratch_bytes(std::max(c.hidden, c.intermediate)), 1, scratch);
  if (c.precision == Precision::fp8) m.make_fp8_linears(train);
  if (train && c.linear_bias)  // the side stream's column sums (bias gradients) beside the main's
    m.alloc("side_scratch",
            norm_backward_scratch_bytes(
                std::min(std::max(c.qkv_width(), c.intermediate), kMaxBiasGradWidth)),
            1, scratch);
}

// One Fp8Linear per weight of this part: [out, in] as nn.Linear stores it. The step's FP8 copies of
// its input and gradient are block scratch ("fp8.<weight>.x", ...: a model shares them between
// layers); the weight's copies are the layer's own.
void TransformerBlock::Impl::make_fp8_linears(bool train) {
  const int T = c.tokens(), H = c.hidden, A = c.attention_width(), I = c.intermediate;
  const int U = c.gated_ffn ? 2 * I : I;
  const std::vector<std::pair<const char*, std::pair<int, int>>> shapes = {
      {"wqkv", {H, c.qkv_width()}}, {"wo", {A, H}}, {"wi", {H, U}}, {"wout", {I, H}}};
  std::vector<Fp8Format> formats;
  for (const auto& sh : shapes)
    if (t(sh.first))
      for (Fp8Format f : fp8_linear_formats()) formats.push_back(f);
  fp8_scales = std::make_unique<Fp8Scales>(formats, c.fp8);
  int next = 0;
  for (const auto& [w, io] : shapes)
    if (t(w)) {
      const std::string n = std::string("fp8.") + w + ".";
      const std::size_t in = std::size_t(T) * io.first, out = std::size_t(T) * io.second;
      Fp8LinearOptions o;
      o.backward = train;
      o.scratch.x = alloc(n + "x", in, 1, TensorRole::scratch);
      if (train) {
        o.scratch.xt = alloc(n + "xt", in, 1, TensorRole::scratch);
        o.scratch.dy = alloc(n + "dy", out, 1, TensorRole::scratch);
        o.scratch.dyt = alloc(n + "dyt", out, 1, TensorRole::scratch);
      }
      fp8[w] = std::make_unique<Fp8Linear>(T, io.first, io.second, *fp8_scales, next, o);
      next += 3;
      bytes += fp8[w]->device_bytes(), owned_bytes += fp8[w]->device_bytes();
    }
}

TransformerBlock::~TransformerBlock() = default;

const BlockConfig& TransformerBlock::config() const { return impl_->whole; }
BlockPart TransformerBlock::part() const { return impl_->part; }
std::size_t TransformerBlock::device_bytes() const { return impl_->bytes; }
std::size_t TransformerBlock::owned_bytes() const { return impl_->owned_bytes; }

void* TransformerBlock::tensor(const std::string& name) const { return impl_->t(name.c_str()); }
std::size_t TransformerBlock::elements(const std::string& name) const {
  auto it = impl_->tensors.find(name);
  return it == impl_->tensors.end() ? 0 : it->second.elements;
}
TensorRole TransformerBlock::role(const std::string& name) const {
  auto it = impl_->tensors.find(name);
  if (it == impl_->tensors.end())
    XF_THROW(InvalidArgument, impl_->c.name + " has no tensor '" + name + "'");
  return it->second.role;
}
std::vector<std::string> TransformerBlock::tensor_names() const {
  std::vector<std::string> out;
  for (const auto& kv : impl_->tensors) out.push_back(kv.first);
  return out;
}

std::vector<std::string> TransformerBlock::parameters() const {
  std::vector<std::string> out;
  for (const char* n :
       {"wqkv", "bqkv", "wo", "bo", "ln1_w", "ln1_b", "rel_bias", "wq_cross", "wkv_cross",
        "wo_cross", "ln_cross_w", "wi", "bi", "wout", "bout", "ln2_w", "ln2_b"}) {
    if (impl_->t(n)) out.push_back(n);
  }
  return out;
}

namespace {

template <class T>
void forward_impl(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step);
template <class T>
void backward_impl(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step);

}  // namespace

void TransformerBlock::forward(cudaStream_t stream, std::uint64_t step) {
  impl_->check_tp_reduce();
  if (impl_->c.precision == Precision::fp16) {
    forward_impl<__half>(*impl_, stream, step);
  } else if (storage_precision(impl_->c.precision) == Precision::bf16) {
    forward_impl<__nv_bfloat16>(*impl_, stream, step);
  } else {  // tf32, fp32
    forward_impl<float>(*impl_, stream, step);
  }
}

void TransformerBlock::tune(cudaStream_t stream) {
  impl_->tuning = true;
  try {
    forward(stream);
    if (impl_->t("dout")) backward(stream);
    for (auto& kv : impl_->fp8) kv.second->tune(stream);  // on the step's scaled copies
  } catch (...) {
    impl_->tuning = false;
    throw;
  }
  impl_->tuning = false;
  XF_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void TransformerBlock::reset_fp8(cudaStream_t stream) {
  if (impl_->fp8_scales) impl_->fp8_scales->reset(stream);
}

void TransformerBlock::backward(cudaStream_t stream, std::uint64_t step) {
  if (!impl_->t("dout"))
    XF_THROW(InvalidArgument,
             impl_->c.name + " part " + to_string(impl_->part) + " has no backward");
  impl_->check_tp_reduce();
  if (impl_->c.precision == Precision::fp16) {
    backward_impl<__half>(*impl_, stream, step);
  } else if (storage_precision(impl_->c.precision) == Precision::bf16) {
    backward_impl<__nv_bfloat16>(*impl_, stream, step);
  } else {  // tf32, fp32
    backward_impl<float>(*impl_, stream, step);
  }
}

namespace {

GemmOperands ops(const void* a, const void* b, void* c, const void* bias = nullptr,
                 float beta = 0.f) {
  GemmOperands o;
  o.a = a, o.b = b, o.c = c, o.bias = bias, o.beta = beta;
  return o;
}

// A linear layer's products (weight named w): y = x·Wᵀ (+ bias), dx = dy·W (+ beta·dx) and
// dW = dyᵀ·x, on their plans or, in fp8, on the layer's Fp8Linear.
const __nv_bfloat16* bf(const void* p) { return static_cast<const __nv_bfloat16*>(p); }
__nv_bfloat16* bf(void* p) { return static_cast<__nv_bfloat16*>(p); }
void linear_forward(TransformerBlock::Impl& m, cudaStream_t s, Gemm* g, const char* w,
                    const void* x, void* y, const void* bias = nullptr) {
  if (Fp8Linear* f = m.fp8_of(w)) return f->forward(s, bf(x), bf(y), bf(bias));
  m.run(g, s, ops(x, m.t(w), y, bias));
}
// fp8: dy's scaled copies, before either backward product (which may run on two streams).
void linear_grad(TransformerBlock::Impl& m, cudaStream_t s, const char* w, const void* dy) {
  if (Fp8Linear* f = m.fp8_of(w)) f->cast_grad(s, bf(dy));
}
void linear_data_grad(TransformerBlock::Impl& m, cudaStream_t s, Gemm* g, const char* w,
                      const void* dy, void* dx, float beta = 0.f) {
  if (Fp8Linear* f = m.fp8_of(w)) {
    if (beta != 0.f) XF_THROW(Unsupported, "fp8: a data gradient added to another");
    return f->backward_data(s, bf(dx));
  }
  m.run(g, s, ops(dy, m.t(w), dx, nullptr, beta));
}
// o: a = dy, b = x, c = dW (and bias_grad).
void linear_weight_grad(TransformerBlock::Impl& m, cudaStream_t s, Gemm* g, const char* w,
                        const GemmOperands& o) {
  if (Fp8Linear* f = m.fp8_of(w)) return f->backward_weight(s, bf(o.b), o.c);
  m.run(g, s, o);
}
// fp8: the weights' scaled copies (they change once per step) before the forward; the delayed
// recipe's scales after the step (the backward's end, or the forward's without one).
void fp8_begin_step(TransformerBlock::Impl& m, cudaStream_t s) {
  for (auto& [w, f] : m.fp8) f->cast_weight(s, bf(m.t(w.c_str())));
}
void fp8_end_step(TransformerBlock::Impl& m, cudaStream_t s) {
  if (m.fp8_scales) m.fp8_scales->update(s);
}

// An attention core on its backend: o = attention(q, k, v) (+ the score bias when it has one).
void core_forward(TransformerBlock::Impl& m, const TransformerBlock::Impl::Core& a, void* o,
                  const void* q, const void* k, const void* v, const void* bias, Dropout drop,
                  cudaStream_t s) {
  if (a.unfused) {
    a.unfused->forward(o, m.t(a, "probs"), m.t(a, "probs_work"), q, k, v, nullptr, bias, drop, s);
  } else if (a.flash) {
    a.flash->forward(o, {static_cast<float*>(m.t(a, "stats")), m.t(a, "attn_keep")}, q, k, v,
                     nullptr, bias, drop, s);
  } else {
    a.fused->forward(o, static_cast<float*>(m.t(a, "stats")), q, k, v, nullptr, bias, drop,
                     m.t(a, "attn_ws"), s);
  }
}

// Its backward from do (the gradient of o): dq, dk, dv, and dbias when the core learns its bias.
void core_backward(TransformerBlock::Impl& m, const TransformerBlock::Impl::Core& a, void* dq,
                   void* dk, void* dv, void* dbias, const void* dout, const void* o, const void* q,
                   const void* k, const void* v, const void* bias, Dropout drop, cudaStream_t s) {
  if (a.unfused) {
    a.unfused->backward(dq, dk, dv, dbias, m.t(a, "probs_work"), dout, m.t(a, "probs"), q, k, v,
                        drop, s);
  } else if (a.flash) {  // its bias gradient: sums along the diagonals ("dbias_diagonals")
    a.flash->backward(dq, dk, dv, static_cast<float*>(m.t(a, "dbias_diagonals")),
                      static_cast<float*>(m.t(a, "attn_delta")), dout, o,
                      {static_cast<float*>(m.t(a, "stats")), m.t(a, "attn_keep")}, q, k, v, bias,
                      drop, s);
  } else {
    a.fused->backward(dq, dk, dv, dbias, dout, o, static_cast<float*>(m.t(a, "stats")), q, k, v,
                      nullptr, bias, drop, m.t(a, "attn_ws"), s);
  }
}

// Q, K, V inside the packed self-attention projection [T, 3A] (or its gradient).
void* qkv_part(const TransformerBlock::Impl& m, void* qkv, int which) {
  return m.offset(
      qkv, qkv_offset(QkvLayout::bshd, which, m.c.heads, m.c.head_dim(), m.c.kv_head_count()));
}

// The attention sublayer without its bias, dropout, residual and norm: in -> proj = ctx·Woᵀ
// (T5: the relative position bias is built from its table first).
template <class T>
void attention_forward(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step,
                       const void* in, void* out = nullptr) {
  linear_forward(m, s, m.qkv, "wqkv", in, m.t("qkv"), m.t("bqkv"));
  if (m.rope)
    m.rope->forward<T>(m.at<T>("qkv"), m.c.tokens(), m.c.seq, m.c.heads, m.c.kv_head_count(), s);
  if (m.rel) m.rel->forward<T>(m.at<T>("position_bias"), m.at<T>("rel_bias"), s);
  void* qkv = m.t("qkv");
  core_forward(m, m.self_attn, m.t("ctx"), qkv_part(m, qkv, 0), qkv_part(m, qkv, 1),
               qkv_part(m, qkv, 2), m.t("position_bias"), site(m.c, step, kAttentionProbs), s);
  if (!out) out = m.t("proj");
  linear_forward(m, s, m.proj, "wo", m.t("ctx"), out);
  m.tp_sum(out, s);
}

// T5's cross-attention without dropout, residual and norm: in (the decoder stream), enc ->
// proj_cross = ctx_cross·Wo_crossᵀ.
template <class T>
void cross_attention_forward(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step,
                             const void* in) {
  m.run(m.q_cross, s, ops(in, m.t("wq_cross"), m.t("q_cross")));
  m.run(m.kv_cross, s, ops(m.t("enc"), m.t("wkv_cross"), m.t("kv_cross")));
  void* kv = m.t("kv_cross");
  core_forward(m, m.cross_attn, m.t("ctx_cross"), m.t("q_cross"), kv,
               m.offset(kv, m.c.attention_width()), nullptr, site(m.c, step, kCrossProbs), s);
  m.run(m.proj, s, ops(m.t("ctx_cross"), m.t("wo_cross"), m.t("proj_cross")));
  m.tp_sum(m.t("proj_cross"), s);
}

// The FFN sublayer without its output bias, dropout, residual and norm: in -> o2 = act·Woutᵀ (the
// dense and dense_gelu parts stop at "pre" and "act"). T5: act = dropout(relu(pre)) in place, or
// dropout(gelu(pre_gate)·pre_linear).
template <class T>
void ffn_forward(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step, const void* in,
                 void* out = nullptr) {
  const BlockConfig& c = m.c;
  const int N = c.tokens(), I = c.intermediate;
  if (m.part == BlockPart::dense) {
    m.run(m.up, s, ops(in, m.t("wi"), m.t("pre"), m.t("bi")));  // the part's output is "pre"
    return;
  }
  void* pre = m.t("pre") ? m.t("pre") : m.t("act");
  linear_forward(m, s, m.up, "wi", in, pre);
  const Dropout inner = c.ffn_dropout ? site(c, step, kFfnInner) : Dropout{};
  if (c.gated_ffn)
    gated_dropout_forward<T>(m.at<T>("act"), static_cast<T*>(pre), N, I, m.gate(), inner, s);
  else if (c.activation == Activation::relu)
    relu_dropout_forward<T>(m.at<T>("act"), static_cast<T*>(pre), std::size_t(N) * I, inner, s);
  else
    bias_gelu_forward<T>(m.at<T>("act"), static_cast<T*>(pre), m.at<T>("bi"), N, I, m.gelu(), s);
  if (m.part == BlockPart::dense_gelu) return;
  if (!out) out = m.t("o2");
  linear_forward(m, s, m.down, "wout", m.t("act"), out);
  m.tp_sum(out, s);
}

// out = Norm(dropout(x + xbias) + residual), the sum saved as z (post-LN's z, pre-LN's residual
// stream), with norm `which`'s parameters and statistics; T5: RMSNorm, no xbias.
template <class T>
void residual_norm_forward(TransformerBlock::Impl& m, cudaStream_t s, Dropout drop, void* out,
                           const char* z, const char* x, const char* xbias, const void* residual,
                           const std::string& which) {
  const BlockConfig& c = m.c;
  float* rstd = m.at<float>(("rstd" + which).c_str());
  const T* weight = m.at<T>(("ln" + which + "_w").c_str());
  if (m.rms()) {
    dropout_residual_rmsnorm_forward<T>(static_cast<T*>(out), m.at<T>(z), rstd, m.at<T>(x),
                                        static_cast<const T*>(residual), weight, drop, c.tokens(),
                                        c.hidden, c.eps, s);
    return;
  }
  bias_dropout_residual_layernorm_forward<T>(
      static_cast<T*>(out), m.at<T>(z), m.at<float>(("mean" + which).c_str()), rstd, m.at<T>(x),
      m.at<T>(xbias), static_cast<const T*>(residual), weight,
      m.at<T>(("ln" + which + "_b").c_str()), drop, c.tokens(), c.hidden, c.eps, s);
}

template <class T>
void forward_post(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  const Dropout attention_out = site(m.c, step, kAttentionOut), ffn_out = site(m.c, step, kFfnOut);
  const bool layer = m.part == BlockPart::layer;
  if (has_attention(m.part)) {
    attention_forward<T>(m, s, step, m.t("x"));
    residual_norm_forward<T>(m, s, attention_out, m.t(layer ? "h1" : "out"), "z1", "proj", "bo",
                             m.t("x"), "1");
    if (!layer) return;
  }
  const void* in = layer ? m.t("h1") : m.t("x");
  ffn_forward<T>(m, s, step, in);
  if (m.part == BlockPart::layer || m.part == BlockPart::ffn)
    residual_norm_forward<T>(m, s, ffn_out, m.t("out"), "z2", "o2", "bout", in, "2");
}

// Pre-LN (the whole block only): each sublayer's residual add and the next sublayer's norm are
// one kernel. T5's decoder puts the cross-attention between the two: h2 = h1 + drop(cross).
template <class T>
void forward_pre(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  const BlockConfig& c = m.c;
  const int N = c.tokens(), H = c.hidden;
  if (m.part == BlockPart::attention) return attention_forward<T>(m, s, step, m.t("x"), m.t("out"));
  if (m.part == BlockPart::ffn) return ffn_forward<T>(m, s, step, m.t("x"), m.t("out"));
  if (m.rms())
    rmsnorm_forward<T>(m.at<T>("norm1"), m.at<float>("rstd1"), m.at<T>("x"), m.at<T>("ln1_w"), N, H,
                       c.eps, s);
  else
    layernorm_forward<T>(m.at<T>("norm1"), m.at<float>("mean1"), m.at<float>("rstd1"), m.at<T>("x"),
                         m.at<T>("ln1_w"), m.at<T>("ln1_b"), N, H, c.eps, s);
  if (m.part == BlockPart::norm_qkv)
    return linear_forward(m, s, m.qkv, "wqkv", m.t("norm1"), m.t("qkv"), m.t("bqkv"));
  attention_forward<T>(m, s, step, m.t("norm1"));
  // h1 = x + dropout(proj + bo); the next norm of h1
  const char* next = c.cross_attention ? "_cross" : "2";
  residual_norm_forward<T>(m, s, site(c, step, kAttentionOut),
                           m.t((std::string("norm") + next).c_str()), "h1", "proj", "bo", m.t("x"),
                           next);
  const char* h = "h1";
  if (c.cross_attention) {
    cross_attention_forward<T>(m, s, step, m.t("norm_cross"));
    residual_norm_forward<T>(m, s, site(c, step, kCrossOut), m.t("norm2"), "h2", "proj_cross",
                             nullptr, m.t("h1"), "2");
    h = "h2";
  }
  ffn_forward<T>(m, s, step, m.t("norm2"));
  bias_dropout_residual_forward<T>(m.at<T>("out"), m.at<T>("o2"), m.at<T>("bout"), m.at<T>(h),
                                   site(c, step, kFfnOut), N, H, s);
}

template <class T>
void forward_impl(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  fp8_begin_step(m, s);
  if (m.pre())
    forward_pre<T>(m, s, step);
  else
    forward_post<T>(m, s, step);
  if (!m.t("dout")) fp8_end_step(m, s);
}

// do2 (the gradient of the FFN's output before its bias) -> din = beta·din + d(in), the FFN's
// input gradient; weight and bias gradients on the side stream.
template <class T>
void ffn_backward(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step, const void* in,
                  void* din, float beta) {
  const BlockConfig& c = m.c;
  const int N = c.tokens(), I = c.intermediate;
  linear_grad(m, s, "wout", m.t("do2"));
  m.fork(s);
  linear_weight_grad(m, m.side, m.d_down_w, "wout", ops(m.t("do2"), m.t("act"), m.t("dwout")));
  linear_data_grad(m, s, m.d_down_x, "wout", m.t("do2"), m.t("dact"));
  // The gradient of the up projection's output: [T, I] in place, the gated FFN's [T, 2I] apart.
  const char* dpre = c.gated_ffn ? "dpre" : "dact";
  const Dropout inner = c.ffn_dropout ? site(c, step, kFfnInner) : Dropout{};
  if (c.gated_ffn)
    gated_dropout_backward<T>(m.at<T>("dpre"), m.at<T>("dact"), m.at<T>("pre"), N, I, m.gate(),
                              inner, s);
  else if (c.activation == Activation::relu)
    relu_dropout_backward<T>(m.at<T>("dact"), m.at<T>("dact"), m.at<T>("act"), std::size_t(N) * I,
                             inner, s);
  else
    bias_gelu_backward<T>(m.at<T>("dact"), nullptr, m.at<float>("scratch"), m.at<T>("dact"),
                          m.at<T>("pre"), m.at<T>("bi"), N, I, m.gelu(), s);
  linear_grad(m, s, "wi", m.t(dpre));
  m.fork(s);
  // dbi = Σ_tokens dpre by our column sum on the side stream, beside the weight-gradient GEMM
  // (faster in the layer than in the GELU backward or in cuBLASLt's bias-gradient epilogue,
  // which runs as a separate, slower kernel: PERF.md).
  if (c.linear_bias)
    bias_backward<T>(m.at<T>("dbi"), m.at<float>("side_scratch"), m.at<T>(dpre), N, I, m.side);
  linear_weight_grad(m, m.side, m.d_up_w, "wi", ops(m.t(dpre), in, m.t("dwi")));
  linear_data_grad(m, s, m.d_up_x, "wi", m.t(dpre), din, m.tp_beta(beta));
  m.tp_sum(din, s);
}

// dproj (the gradient of the attention's output before its bias) -> din = beta·din + d(in); T5:
// the relative bias table's gradient from the score bias's.
template <class T>
void attention_backward(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step,
                        const void* in, void* din, float beta) {
  const BlockConfig& c = m.c;
  const int N = c.tokens();
  linear_grad(m, s, "wo", m.t("dproj"));
  m.fork(s);
  linear_weight_grad(m, m.side, m.d_proj_w, "wo", ops(m.t("dproj"), m.t("ctx"), m.t("dwo")));
  linear_data_grad(m, s, m.d_proj_x, "wo", m.t("dproj"), m.t("dctx"));
  void* qkv = m.t("qkv");
  void* dqkv = m.t("dqkv");
  core_backward(m, m.self_attn, qkv_part(m, dqkv, 0), qkv_part(m, dqkv, 1), qkv_part(m, dqkv, 2),
                m.t("dposition_bias"), m.t("dctx"), m.t("ctx"), qkv_part(m, qkv, 0),
                qkv_part(m, qkv, 1), qkv_part(m, qkv, 2), m.t("position_bias"),
                site(c, step, kAttentionProbs), s);
  // The gradients of the rotated q and k become those of the projection's output.
  if (m.rope) m.rope->backward<T>(m.at<T>("dqkv"), N, c.seq, c.heads, c.kv_head_count(), s);
  GemmOperands w = ops(m.t("dqkv"), in, m.t("dwqkv"));
  linear_grad(m, s, "wqkv", m.t("dqkv"));
  m.fork(s);
  if (m.rel && m.self_attn.flash)  // the table from the gradient's diagonal sums
    m.rel->backward_from_diagonals<T>(m.at<T>("drel_bias"), m.at<float>("dbias_diagonals"), m.side);
  else if (m.rel)  // a few MB of bias gradient: beside the weight-gradient GEMM
    m.rel->backward<T>(m.at<T>("drel_bias"), m.at<T>("dposition_bias"), m.t("rel_scratch"), m.side);
  if (c.linear_bias && qkv_bias_by_epilogue(c))
    w.bias_grad = m.t("dbqkv");
  else if (c.linear_bias)  // as dbi in ffn_backward
    bias_backward<T>(m.at<T>("dbqkv"), m.at<float>("side_scratch"), m.at<T>("dqkv"), N,
                     c.qkv_width(), m.side);
  linear_weight_grad(m, m.side, m.d_qkv_w, "wqkv", w);
  linear_data_grad(m, s, m.d_qkv_x, "wqkv", m.t("dqkv"), din, m.tp_beta(beta));
  m.tp_sum(din, s);
}

// T5's cross-attention: dproj_cross -> din = d(in) (the decoder stream's) and denc; the weight
// gradients on the side stream.
template <class T>
void cross_attention_backward(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step,
                              const void* in, void* din) {
  m.fork(s);
  m.run(m.d_proj_w, m.side, ops(m.t("dproj_cross"), m.t("ctx_cross"), m.t("dwo_cross")));
  m.run(m.d_proj_x, s, ops(m.t("dproj_cross"), m.t("wo_cross"), m.t("dctx_cross")));
  void* kv = m.t("kv_cross");
  void* dkv = m.t("dkv_cross");
  const std::int64_t A = m.c.attention_width();
  core_backward(m, m.cross_attn, m.t("dq_cross"), dkv, m.offset(dkv, A), nullptr, m.t("dctx_cross"),
                m.t("ctx_cross"), m.t("q_cross"), kv, m.offset(kv, A), nullptr,
                site(m.c, step, kCrossProbs), s);
  m.fork(s);
  m.run(m.d_kv_cross_w, m.side, ops(dkv, m.t("enc"), m.t("dwkv_cross")));
  m.run(m.d_q_cross_w, m.side, ops(m.t("dq_cross"), in, m.t("dwq_cross")));
  m.run(m.d_kv_cross_x, s, ops(dkv, m.t("wkv_cross"), m.t("denc")));
  m.tp_sum(m.t("denc"), s);
  m.run(m.d_q_cross_x, s, ops(m.t("dq_cross"), m.t("wq_cross"), din));
  m.tp_sum(din, s);
}

// The gradient `dout` of out = Norm(dropout(x + xbias) + residual) (z the sum) -> dresidual
// (written), dx, dxbias and norm `which`'s parameter gradients. dstream: pre-LN's gradient reaching
// z along the residual stream (null post-LN). T5: RMSNorm, no xbias.
template <class T>
void residual_norm_backward(TransformerBlock::Impl& m, cudaStream_t s, Dropout drop,
                            void* dresidual, const char* dx, const char* dxbias, const void* dout,
                            const void* dstream, const char* z, const std::string& which) {
  const BlockConfig& c = m.c;
  T* dweight = m.at<T>(("dln" + which + "_w").c_str());
  const T* weight = m.at<T>(("ln" + which + "_w").c_str());
  const float* rstd = m.at<float>(("rstd" + which).c_str());
  if (m.rms()) {
    dropout_residual_rmsnorm_backward<T>(static_cast<T*>(dresidual), m.at<T>(dx), dweight,
                                         m.at<float>("scratch"), static_cast<const T*>(dout),
                                         static_cast<const T*>(dstream), m.at<T>(z), weight, rstd,
                                         drop, c.tokens(), c.hidden, s);
    return;
  }
  bias_dropout_residual_layernorm_backward<T>(
      static_cast<T*>(dresidual), m.at<T>(dx), m.at<T>(dxbias), dweight,
      m.at<T>(("dln" + which + "_b").c_str()), m.at<float>("scratch"), static_cast<const T*>(dout),
      nullptr, static_cast<const T*>(dstream), m.at<T>(z), weight,
      m.at<float>(("mean" + which).c_str()), rstd, drop, c.tokens(), c.hidden, s);
}

template <class T>
void backward_post(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  const Dropout attention_out = site(m.c, step, kAttentionOut), ffn_out = site(m.c, step, kFfnOut);
  switch (m.part) {
    case BlockPart::layer:
      residual_norm_backward<T>(m, s, ffn_out, m.t("dh1"), "do2", "dbout", m.t("dout"), nullptr,
                                "z2", "2");
      ffn_backward<T>(m, s, step, m.t("h1"), m.t("dh1"), 1.f);  // dh1 += dpre·Wi
      residual_norm_backward<T>(m, s, attention_out, m.t("dx"), "dproj", "dbo", m.t("dh1"), nullptr,
                                "z1", "1");
      attention_backward<T>(m, s, step, m.t("x"), m.t("dx"), 1.f);  // dx += dqkv·Wqkv
      break;
    case BlockPart::attention:
      residual_norm_backward<T>(m, s, attention_out, m.t("dx"), "dproj", "dbo", m.t("dout"),
                                nullptr, "z1", "1");
      attention_backward<T>(m, s, step, m.t("x"), m.t("dx"), 1.f);
      break;
    case BlockPart::ffn:
      residual_norm_backward<T>(m, s, ffn_out, m.t("dx"), "do2", "dbout", m.t("dout"), nullptr,
                                "z2", "2");
      ffn_backward<T>(m, s, step, m.t("x"), m.t("dx"), 1.f);
      break;
    default:
      XF_THROW(InvalidArgument, m.c.name + " part " + to_string(m.part) + " has no backward");
  }
}

template <class T>
void backward_pre(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  const BlockConfig& c = m.c;
  const int N = c.tokens(), H = c.hidden;
  float* scratch = m.at<float>("scratch");
  // out = h + dropout(o2 + bout): do2 and dbout; dout also flows to h along the residual.
  dropout_bias_backward<T>(m.at<T>("do2"), m.at<T>("dbout"), scratch, m.at<T>("dout"),
                           site(c, step, kFfnOut), N, H, s);
  ffn_backward<T>(m, s, step, m.t("norm2"), m.t("dnorm"), 0.f);
  // norm2 = N2(h), h = h_prev + dropout(proj + bo): dh = dN2(dnorm) + dout, and the gradient of
  // the sublayer's output. T5's decoder: h = h2, the cross-attention's.
  if (c.cross_attention) {
    residual_norm_backward<T>(m, s, site(c, step, kCrossOut), m.t("dh2"), "dproj_cross", nullptr,
                              m.t("dnorm"), m.t("dout"), "h2", "2");
    cross_attention_backward<T>(m, s, step, m.t("norm_cross"), m.t("dnorm"));
    // norm_cross = N_cross(h1), h1 = x + dropout(proj): dh1 = dN_cross(dnorm) + dh2, dproj.
    residual_norm_backward<T>(m, s, site(c, step, kAttentionOut), m.t("dh1"), "dproj", nullptr,
                              m.t("dnorm"), m.t("dh2"), "h1", "_cross");
  } else {
    residual_norm_backward<T>(m, s, site(c, step, kAttentionOut), m.t("dh1"), "dproj", "dbo",
                              m.t("dnorm"), m.t("dout"), "h1", "2");
  }
  attention_backward<T>(m, s, step, m.t("norm1"), m.t("dnorm"), 0.f);
  // norm1 = N1(x): dx = dN1(dnorm) + dh1 (x reaches h1 along the residual).
  if (m.rms())
    rmsnorm_backward<T>(m.at<T>("dx"), m.at<T>("dln1_w"), scratch, m.at<T>("dnorm"), m.at<T>("dh1"),
                        m.at<T>("x"), m.at<T>("ln1_w"), m.at<float>("rstd1"), N, H, s);
  else
    layernorm_backward<T>(m.at<T>("dx"), m.at<T>("dln1_w"), m.at<T>("dln1_b"), scratch,
                          m.at<T>("dnorm"), m.at<T>("dh1"), m.at<T>("x"), m.at<T>("ln1_w"),
                          m.at<float>("mean1"), m.at<float>("rstd1"), N, H, s);
}

template <class T>
void backward_impl(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  m.next_event = 0;
  if (m.pre())
    backward_pre<T>(m, s, step);
  else
    backward_post<T>(m, s, step);
  m.join(s);  // the caller's stream sees every gradient
  fp8_end_step(m, s);
}

}  // namespace

}  // namespace xfbench::kernels
