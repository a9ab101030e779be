// The transformer block's internals shared by its source files
// (kernels/models/transformer_block*.cu*): the configuration rules both the checks and the
// construction read, the dropout sites, and the Impl every pass works on. Not for plugins: they see
// transformer_block.hpp only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <map>

#include "kernels/activation.hpp"
#include "kernels/dropout.hpp"
#include "kernels/fp8_linear.hpp"
#include "kernels/gemm_fused.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/models/transformer_block.hpp"
#include "kernels/relative_position.hpp"
#include "kernels/softmax.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

// Bias gradients (column sums over tokens) up to this width run as bias_backward on the side
// stream; the QKV projection's 3·hidden above it uses cuBLASLt's bias-gradient epilogue.
constexpr int kMaxBiasGradWidth = 16384;  // bias_backward's widest row (dropout.hpp)
inline bool qkv_bias_by_epilogue(const BlockConfig& c) { return c.qkv_width() > kMaxBiasGradWidth; }
inline bool t5_like(const BlockConfig& c) { return c.norm == NormKind::rmsnorm; }

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
inline Dropout site(const BlockConfig& c, std::uint64_t step, Site s) {
  const bool probs = s == kAttentionProbs || s == kCrossProbs;
  const bool split = probs || s == kFfnInner;
  const std::uint64_t seed =
      c.dropout_seed + (split ? std::uint64_t(c.tp_rank) * 0x9E3779B97F4A7C15ULL : 0);
  return Dropout{probs ? c.attention_dropout : c.residual_dropout, seed, step * kSites + s};
}

inline bool has_attention(BlockPart p) {
  return p == BlockPart::layer || p == BlockPart::attention || p == BlockPart::norm_qkv;
}
inline bool has_ffn(BlockPart p) { return p != BlockPart::attention && p != BlockPart::norm_qkv; }

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
  // The FFN's activation in its products' epilogues (BlockConfig::ffn_products): the up
  // projection with the GELU (keeping pre, bias included, when training) or, gated, the up half
  // with the gate's activation times it (the gate's half a plain product into pre's first half:
  // up_gate), and the down projection's data gradient through the activation. The choice is
  // shared by every block of the shape on the device (set by the first to tune). The GELU's
  // fused backward reads pre with the bias in it, which only its fused forward writes: one choice
  // for both. The gated FFN's pre is the same either way: forward and backward choose apart.
  struct FfnChoice {
    bool decided = false, fused_forward = false, fused_backward = false;
    std::string note;  // for labels
  };
  std::unique_ptr<FusedGemm> up_fused, down_fused;
  Gemm* up_gate = nullptr;  // gated and fused: x·W_gateᵀ into pre's first half (rows 2I apart)
  std::shared_ptr<FfnChoice> ffn_choice;
  bool ffn_fused_forward() const { return ffn_choice && ffn_choice->fused_forward; }
  bool ffn_fused_backward() const { return ffn_choice && ffn_choice->fused_backward; }
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
  // The FFN's activation in labels and plans-file records: "gelu", "swiglu" or "geglu".
  const char* ffn_activation() const {
    return !c.gated_ffn ? "gelu" : gate() == GateAct::silu ? "swiglu" : "geglu";
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
  // `ldc`: the output's row pitch where its rows are not packed.
  Gemm* plan(std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb, Epilogue e,
             bool side = false, std::int64_t ldc = 0) {
    if (c.precision == Precision::fp8) return nullptr;
    GemmDesc d;
    d.precision = c.precision;
    d.m = m, d.n = n, d.k = k, d.trans_a = ta, d.trans_b = tb, d.epilogue = e, d.ldc = ldc;
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
  // (three per layer: wqkv's first, then wo, T5's cross-attention's, wi, wout, those the part has;
  // make_fp8_linears).
  std::unique_ptr<Fp8Scales> fp8_scales;
  std::map<std::string, std::unique_ptr<Fp8Linear>> fp8;
  Fp8Linear* fp8_of(const char* weight) const {
    auto it = fp8.find(weight);
    return it == fp8.end() ? nullptr : it->second.get();
  }
  void make_fp8_linears(bool train);
  // fp8: the linear inputs that only FP8 products read (pre-norm blocks' norm outputs, the FFN's
  // activation but ReLU's, which its backward reads): their producers write them in FP8 (e4m3, one
  // byte each), by tensor name the weight of the linear reading them.
  std::map<std::string, std::string> fp8_inputs;
  // A tensor its producer writes in FP8 (an Fp8Output with q null otherwise).
  Fp8Output fp8_output(const char* tensor) const {
    auto it = fp8_inputs.find(tensor);
    if (it == fp8_inputs.end()) return {};
    return fp8_of(it->second.c_str())->input(t(tensor));
  }
  // fp8, a gated FFN without a bias gradient: its backward writes wi's dy in FP8 (into that
  // Fp8Linear's copy), and no bf16 "dpre" exists.
  bool fp8_gated_grad() const {
    return c.precision == Precision::fp8 && c.gated_ffn && !c.linear_bias;
  }
  // fp8, a training block's GELU or gated FFN: the activation writes "act" for wout's forward into
  // that layer's own copy and its transpose into "act", which the weight gradient reads as it is
  // (no FP8 transpose in the backward; the bytes kept are as many).
  bool fp8_act_transposed() const {
    return fp8_inputs.count("act") && t("dout") && c.activation != Activation::relu &&
           !ffn_fused_forward();
  }
  bool stored_fp8(const void* p) const {
    for (const auto& kv : fp8_inputs)
      if (t(kv.first.c_str()) == p) return true;
    return false;
  }

  void make_attention(Core& core, const AttentionDesc& desc, const std::string& suffix, bool train);
  std::string n(const Core& core, const char* name) const { return name + core.suffix; }
  void* t(const Core& core, const char* name) const { return t(n(core, name).c_str()); }
};

}  // namespace xfbench::kernels
