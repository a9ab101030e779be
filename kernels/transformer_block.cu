#include "kernels/transformer_block.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <map>

#include "kernels/dropout.hpp"
#include "kernels/layernorm.hpp"
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
         ", intermediate " + std::to_string(intermediate) + ", batch " + std::to_string(batch) +
         ", seq " + std::to_string(seq) + ", " + to_string(precision) + ", " + to_string(backend);
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

namespace {
// Bias gradients (column sums over tokens) up to this width run as bias_backward on the side
// stream; the QKV projection's 3·hidden above it uses cuBLASLt's bias-gradient epilogue.
constexpr int kMaxBiasGradWidth = 8192;  // bias_backward's widest row (dropout.hpp)
bool qkv_bias_by_epilogue(const BlockConfig& c) { return 3 * c.hidden > kMaxBiasGradWidth; }
}  // namespace

void check_block_config(const BlockConfig& c, BlockPart part) {
  auto bad = [&](const std::string& why) { XF_THROW(InvalidArgument, c.describe() + ": " + why); };
  if (c.precision != Precision::fp16 && c.precision != Precision::bf16)
    bad("precision must be fp16 or bf16");
  if (c.hidden <= 0 || c.heads <= 0 || c.intermediate <= 0 || c.batch <= 0 || c.seq <= 0)
    bad("sizes must be positive");
  if (c.hidden % c.heads != 0) bad("hidden is not divisible by heads");
  if (c.head_dim() % 8 != 0)
    bad("head dim " + std::to_string(c.head_dim()) + " is not a multiple of 8");
  if (c.hidden % 8 != 0 || c.intermediate % 8 != 0)
    bad("hidden and intermediate must be multiples of 8");
  if (c.hidden > kMaxNormWidth)
    bad("hidden above " + std::to_string(kMaxNormWidth) + " (LayerNorm width)");
  if (c.intermediate > kMaxBiasGradWidth)
    bad("intermediate above " + std::to_string(kMaxBiasGradWidth) + " (bias-gradient width)");
  if (c.attention_dropout < 0.f || c.attention_dropout >= 1.f || c.residual_dropout < 0.f ||
      c.residual_dropout >= 1.f)
    bad("dropout must be in [0, 1)");
  if (c.norm != NormKind::layernorm || c.activation == Activation::relu || !c.linear_bias ||
      !c.scale_scores || c.gated_ffn || c.ffn_dropout != 0.f || c.relative_bias ||
      c.cross_attention)
    bad("RMSNorm, ReLU or gated FFNs, FFN dropout, linears without bias, unscaled scores, "
        "relative-position bias and cross-attention are not implemented yet");
  if (c.placement == NormPlacement::pre && part != BlockPart::layer)
    bad(std::string("part ") + to_string(part) + " is of a post-LN block (BERT's breakdown)");
  if (c.backend == AttentionBackend::unfused && (c.seq % 8 != 0 || c.seq > kMaxSoftmaxWidth)) {
    bad("the unfused backend needs seq % 8 == 0 and seq <= " + std::to_string(kMaxSoftmaxWidth));
  }
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

double block_forward_flops(const BlockConfig& c, BlockPart part) {
  const double T = c.tokens(), h = c.hidden, I = c.intermediate;
  const double attention = 8 * T * h * h + 4.0 * c.batch * double(c.seq) * c.seq * h;
  switch (part) {
    case BlockPart::dense:
    case BlockPart::dense_gelu:
      return 2 * T * h * I;
    case BlockPart::ffn:
      return 4 * T * h * I;
    case BlockPart::attention:
      return attention;
    case BlockPart::layer:
      return attention + 4 * T * h * I;
  }
  return 0;
}

namespace {

// Dropout sites of a step: independent Philox streams.
enum Site : std::uint64_t { kAttentionProbs, kAttentionOut, kFfnOut, kSites };
Dropout site(const BlockConfig& c, std::uint64_t step, Site s) {
  return Dropout{s == kAttentionProbs ? c.attention_dropout : c.residual_dropout, c.dropout_seed,
                 step * kSites + s};
}

bool has_attention(BlockPart p) { return p == BlockPart::layer || p == BlockPart::attention; }
bool has_ffn(BlockPart p) { return p != BlockPart::attention; }

}  // namespace

struct TransformerBlock::Impl {
  BlockConfig c;
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
  std::unique_ptr<UnfusedAttention> unfused;
  std::unique_ptr<CudnnAttention> fused;
  std::unique_ptr<FlashAttention> flash;
  AttentionDesc attn;
  // GEMM plans (cached process-wide by gemm_plan).
  Gemm *qkv = nullptr, *proj = nullptr, *up = nullptr, *down = nullptr;
  Gemm *d_down_w = nullptr, *d_down_x = nullptr, *d_up_w = nullptr, *d_up_x = nullptr;
  Gemm *d_proj_w = nullptr, *d_proj_x = nullptr, *d_qkv_w = nullptr, *d_qkv_x = nullptr;

  Impl(const BlockConfig& config, BlockPart p, const TensorPlacement& pl)
      : c(config), part(p), place(pl), elem(2) {}
  ~Impl() {
    for (auto& kv : tensors)
      if (kv.second.owned) cudaFree(kv.second.p);
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    if (side) cudaStreamDestroy(side);
  }

  bool pre() const { return c.placement == NormPlacement::pre; }
  Gelu gelu() const { return c.activation == Activation::gelu_tanh ? Gelu::tanh : Gelu::erf; }

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
  Gemm* plan(std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb, Epilogue e,
             bool side = false) {
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

  void make_attention(bool train);
};

// The attention core's description, backend and its saved state.
void TransformerBlock::Impl::make_attention(bool train) {
  attn = self_attention_desc(c.precision, c.batch, c.heads, c.seq, c.head_dim(), QkvLayout::bshd);
  attn.dropout = c.attention_dropout;
  attn.causal = c.causal;
  if (c.backend == AttentionBackend::unfused) {
    unfused = std::make_unique<UnfusedAttention>(attn, train);
    // The scores become the probabilities in place (forward only with dropout: the scores stay,
    // nothing keeps P); the second buffer holds their dropout, and is the backward's scratch.
    alloc("probs", unfused->probs_elements(), elem, TensorRole::saved);
    // dV reads the dropped probabilities: saved when a backward follows.
    if (train || c.attention_dropout > 0.f)
      alloc("probs_work", unfused->probs_elements(), elem,
            train ? TensorRole::saved : TensorRole::scratch);
  } else if (c.backend == AttentionBackend::flash) {
    flash = std::make_unique<FlashAttention>(attn);
    if (train && !flash->has_backward())  // a fact of the backend, not of this shape
      XF_THROW(Unsupported,
               c.name + ": xfbench's flash attention backward " +
                   (flash->uses_wgmma() ? "does not take this mask here" : "needs a Hopper GPU"));
    if (train) {
      alloc("stats", flash->stats_elements(), 4, TensorRole::saved);
      alloc("attn_delta", flash->stats_elements(), 4, TensorRole::scratch);
      alloc("attn_keep", std::max<std::size_t>(flash->keep_bytes(), 16), 1, TensorRole::saved);
    }
  } else {
    fused = std::make_unique<CudnnAttention>(attn, train);
    if (train) alloc("stats", fused->stats_elements(), 4, TensorRole::saved);
    alloc("attn_ws", std::max<std::size_t>(fused->workspace_bytes(), 16), 1, TensorRole::scratch);
  }
}

TransformerBlock::TransformerBlock(const BlockConfig& config, BlockPart part,
                                   const TensorPlacement& place)
    : impl_(std::make_unique<Impl>(config, part, place)) {
  check_block_config(config, part);
  Impl& m = *impl_;
  const BlockConfig& c = m.c;
  const std::int64_t T = c.tokens(), H = c.hidden, I = c.intermediate;
  const bool whole =  // a part with an output [T, H] and a backward
      part == BlockPart::layer || part == BlockPart::ffn || part == BlockPart::attention;
  // Forward only (no_grad): no gradients, and nothing saved for a backward.
  const bool train = whole && c.backward;
  constexpr TensorRole saved = TensorRole::saved, scratch = TensorRole::scratch;
  auto param = [&](const char* name, std::size_t n) {
    m.alloc(name, n, m.elem, TensorRole::parameter);
    if (train) m.alloc(std::string("d") + name, n, m.elem, TensorRole::gradient);
  };
  auto stats = [&](const char* mean, const char* rstd) {
    m.alloc(mean, T, 4, saved), m.alloc(rstd, T, 4, saved);
  };
  m.alloc("x", T * H, m.elem, TensorRole::input);
  if (train) m.alloc("dx", T * H, m.elem, TensorRole::input_grad);
  if (has_attention(part)) {
    param("wqkv", 3 * H * H), param("bqkv", 3 * H), param("wo", H * H), param("bo", H);
    param("ln1_w", H), param("ln1_b", H);
    // post: h1 = LN1(z1), z1 saved; pre: norm1 = LN1(x) feeds the attention, h1 is the residual.
    if (m.pre()) m.alloc("norm1", T * H, m.elem, saved);
    if (train && !m.pre()) m.alloc("z1", T * H, m.elem, saved);
    if (train) stats("mean1", "rstd1");
    m.alloc("qkv", T * 3 * H, m.elem, saved), m.alloc("ctx", T * H, m.elem, saved);
    m.alloc("proj", T * H, m.elem, scratch);
    m.alloc("h1", T * H, m.elem, saved);
    m.make_attention(train);
    m.qkv = m.plan(T, 3 * H, H, false, true, Epilogue::bias);
    m.proj = m.plan(T, H, H, false, true, Epilogue::none);
    if (train) {
      m.alloc("dqkv", T * 3 * H, m.elem, scratch), m.alloc("dctx", T * H, m.elem, scratch),
          m.alloc("dproj", T * H, m.elem, scratch);
      m.d_qkv_w = m.plan(3 * H, H, T, true, false,
                         qkv_bias_by_epilogue(c) ? Epilogue::bgrad_a : Epilogue::none, true);
      m.d_qkv_x = m.plan(T, H, 3 * H, false, false, Epilogue::none);
      m.d_proj_w = m.plan(H, H, T, true, false, Epilogue::none, true);
      m.d_proj_x = m.plan(T, H, H, false, false, Epilogue::none);
    }
  }
  if (has_ffn(part)) {
    param("wi", I * H), param("bi", I);
    // "pre": the dense part's output (with bias), else h1·Wiᵀ without bias (cuBLASLt's bias
    // epilogue slows this GEMM by up to 20% at 32k tokens; the GELU kernel adds it for free), kept
    // for the GELU backward. Without a backward, GELU runs in place on "act".
    const bool dense_only = part == BlockPart::dense;
    if (dense_only || train) m.alloc("pre", T * I, m.elem, dense_only ? TensorRole::output : saved);
    if (!dense_only)
      m.alloc("act", T * I, m.elem, part == BlockPart::dense_gelu ? TensorRole::output : saved);
    m.up = m.plan(T, I, H, false, true, dense_only ? Epilogue::bias : Epilogue::none);
    if (part == BlockPart::layer || part == BlockPart::ffn) {
      param("wout", H * I), param("bout", H), param("ln2_w", H), param("ln2_b", H);
      // post: out = LN2(z2), z2 saved; pre: norm2 = LN2(h1) feeds the FFN.
      if (m.pre()) m.alloc("norm2", T * H, m.elem, saved);
      if (train && !m.pre()) m.alloc("z2", T * H, m.elem, saved);
      if (train) stats("mean2", "rstd2");
      m.alloc("o2", T * H, m.elem, scratch);
      m.down = m.plan(T, H, I, false, true, Epilogue::none);
      if (train) {
        m.alloc("dh1", T * H, m.elem, scratch), m.alloc("do2", T * H, m.elem, scratch),
            m.alloc("dact", T * I, m.elem, scratch);
        // pre: the gradient of norm2, later of norm1 (one buffer: the first is spent by then).
        if (m.pre()) m.alloc("dnorm", T * H, m.elem, scratch);
        m.d_down_w = m.plan(H, I, T, true, false, Epilogue::none, true);
        m.d_down_x = m.plan(T, I, H, false, false, Epilogue::none);
        m.d_up_w = m.plan(I, H, T, true, false, Epilogue::none, true);
        m.d_up_x = m.plan(T, H, I, false, false, Epilogue::none);
      }
    }
  }
  if (whole) m.alloc("out", T * H, m.elem, TensorRole::output);
  if (train) m.alloc("dout", T * H, m.elem, TensorRole::output_grad);
  if (train) XF_CUDA_CHECK(cudaStreamCreateWithFlags(&m.side, cudaStreamNonBlocking));
  m.alloc("scratch", norm_backward_scratch_bytes(std::max(c.hidden, c.intermediate)), 1, scratch);
  if (train)  // the side stream's column sums (bias gradients) run beside the main stream's
    m.alloc("side_scratch",
            norm_backward_scratch_bytes(
                std::min(std::max(3 * c.hidden, c.intermediate), kMaxBiasGradWidth)),
            1, scratch);
}

TransformerBlock::~TransformerBlock() = default;

const BlockConfig& TransformerBlock::config() const { return impl_->c; }
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
  for (const char* n : {"wqkv", "bqkv", "wo", "bo", "ln1_w", "ln1_b", "wi", "bi", "wout", "bout",
                        "ln2_w", "ln2_b"}) {
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
  if (impl_->c.precision == Precision::fp16) {
    forward_impl<__half>(*impl_, stream, step);
  } else {
    forward_impl<__nv_bfloat16>(*impl_, stream, step);
  }
}

void TransformerBlock::tune(cudaStream_t stream) {
  impl_->tuning = true;
  try {
    forward(stream);
    if (impl_->t("dout")) backward(stream);
  } catch (...) {
    impl_->tuning = false;
    throw;
  }
  impl_->tuning = false;
  XF_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void TransformerBlock::backward(cudaStream_t stream, std::uint64_t step) {
  if (!impl_->t("dout"))
    XF_THROW(InvalidArgument,
             impl_->c.name + " part " + to_string(impl_->part) + " has no backward");
  if (impl_->c.precision == Precision::fp16) {
    backward_impl<__half>(*impl_, stream, step);
  } else {
    backward_impl<__nv_bfloat16>(*impl_, stream, step);
  }
}

namespace {

GemmOperands ops(const void* a, const void* b, void* c, const void* bias = nullptr,
                 float beta = 0.f) {
  GemmOperands o;
  o.a = a, o.b = b, o.c = c, o.bias = bias, o.beta = beta;
  return o;
}

// The attention sublayer without its bias, dropout, residual and norm: in -> proj = ctx·Woᵀ.
template <class T>
void attention_forward(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step,
                       const void* in) {
  const BlockConfig& c = m.c;
  m.run(m.qkv, s, ops(in, m.t("wqkv"), m.t("qkv"), m.t("bqkv")));
  void* qkv = m.t("qkv");
  const void* q = m.offset(qkv, qkv_offset(QkvLayout::bshd, 0, c.heads, c.head_dim()));
  const void* k = m.offset(qkv, qkv_offset(QkvLayout::bshd, 1, c.heads, c.head_dim()));
  const void* v = m.offset(qkv, qkv_offset(QkvLayout::bshd, 2, c.heads, c.head_dim()));
  const Dropout probs_drop = site(c, step, kAttentionProbs);
  if (m.unfused) {
    m.unfused->forward(m.t("ctx"), m.t("probs"), m.t("probs_work"), q, k, v, nullptr, nullptr,
                       probs_drop, s);
  } else if (m.flash) {
    m.flash->forward(m.t("ctx"), {m.at<float>("stats"), m.t("attn_keep")}, q, k, v, nullptr,
                     probs_drop, s);
  } else {
    m.fused->forward(m.t("ctx"), m.at<float>("stats"), q, k, v, nullptr, nullptr, probs_drop,
                     m.t("attn_ws"), s);
  }
  m.run(m.proj, s, ops(m.t("ctx"), m.t("wo"), m.t("proj")));
}

// The FFN sublayer without its output bias, dropout, residual and norm: in -> o2 = act·Woutᵀ (the
// dense and dense_gelu parts stop at "pre" and "act").
template <class T>
void ffn_forward(TransformerBlock::Impl& m, cudaStream_t s, const void* in) {
  const BlockConfig& c = m.c;
  if (m.part == BlockPart::dense) {
    m.run(m.up, s, ops(in, m.t("wi"), m.t("pre"), m.t("bi")));  // the part's output is "pre"
    return;
  }
  void* pre = m.t("pre") ? m.t("pre") : m.t("act");
  m.run(m.up, s, ops(in, m.t("wi"), pre));
  bias_gelu_forward<T>(m.at<T>("act"), static_cast<T*>(pre), m.at<T>("bi"), c.tokens(),
                       c.intermediate, m.gelu(), s);
  if (m.part == BlockPart::dense_gelu) return;
  m.run(m.down, s, ops(m.t("act"), m.t("wout"), m.t("o2")));
}

// Post-LN: out = LN(dropout(x + xbias) + residual), the sum saved as z for the backward.
template <class T>
void residual_norm_forward(TransformerBlock::Impl& m, cudaStream_t s, Dropout drop, void* out,
                           const char* z, const char* x, const char* xbias, const void* residual,
                           int which) {
  const std::string n = std::to_string(which);
  bias_dropout_residual_layernorm_forward<T>(
      static_cast<T*>(out), m.at<T>(z), m.at<float>(("mean" + n).c_str()),
      m.at<float>(("rstd" + n).c_str()), m.at<T>(x), m.at<T>(xbias),
      static_cast<const T*>(residual), m.at<T>(("ln" + n + "_w").c_str()),
      m.at<T>(("ln" + n + "_b").c_str()), drop, m.c.tokens(), m.c.hidden, m.c.eps, s);
}

template <class T>
void forward_post(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  const Dropout attention_out = site(m.c, step, kAttentionOut), ffn_out = site(m.c, step, kFfnOut);
  const bool layer = m.part == BlockPart::layer;
  if (has_attention(m.part)) {
    attention_forward<T>(m, s, step, m.t("x"));
    residual_norm_forward<T>(m, s, attention_out, m.t(layer ? "h1" : "out"), "z1", "proj", "bo",
                             m.t("x"), 1);
    if (!layer) return;
  }
  const void* in = layer ? m.t("h1") : m.t("x");
  ffn_forward<T>(m, s, in);
  if (m.part == BlockPart::layer || m.part == BlockPart::ffn)
    residual_norm_forward<T>(m, s, ffn_out, m.t("out"), "z2", "o2", "bout", in, 2);
}

// Pre-LN (the whole block only): the attention's residual add and LN2 are one kernel.
template <class T>
void forward_pre(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  const BlockConfig& c = m.c;
  const int N = c.tokens(), H = c.hidden;
  layernorm_forward<T>(m.at<T>("norm1"), m.at<float>("mean1"), m.at<float>("rstd1"), m.at<T>("x"),
                       m.at<T>("ln1_w"), m.at<T>("ln1_b"), N, H, c.eps, s);
  attention_forward<T>(m, s, step, m.t("norm1"));
  // h1 = x + dropout(proj + bo); norm2 = LN2(h1)
  residual_norm_forward<T>(m, s, site(c, step, kAttentionOut), m.t("norm2"), "h1", "proj", "bo",
                           m.t("x"), 2);
  ffn_forward<T>(m, s, m.t("norm2"));
  bias_dropout_residual_forward<T>(m.at<T>("out"), m.at<T>("o2"), m.at<T>("bout"), m.at<T>("h1"),
                                   site(c, step, kFfnOut), N, H, s);
}

template <class T>
void forward_impl(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  if (m.pre())
    forward_pre<T>(m, s, step);
  else
    forward_post<T>(m, s, step);
}

// do2 (the gradient of the FFN's output before its bias) -> din = beta·din + d(in), the FFN's
// input gradient; weight and bias gradients on the side stream.
template <class T>
void ffn_backward(TransformerBlock::Impl& m, cudaStream_t s, const void* in, void* din,
                  float beta) {
  const BlockConfig& c = m.c;
  const int N = c.tokens(), I = c.intermediate;
  m.fork(s);
  m.run(m.d_down_w, m.side, ops(m.t("do2"), m.t("act"), m.t("dwout")));
  m.run(m.d_down_x, s, ops(m.t("do2"), m.t("wout"), m.t("dact")));
  bias_gelu_backward<T>(m.at<T>("dact"), nullptr, m.at<float>("scratch"), m.at<T>("dact"),
                        m.at<T>("pre"), m.at<T>("bi"), N, I, m.gelu(), s);
  m.fork(s);
  // dbi = Σ_tokens dpre by our column sum on the side stream, beside the weight-gradient GEMM
  // (faster in the layer than in the GELU backward or in cuBLASLt's bias-gradient epilogue,
  // which runs as a separate, slower kernel: PERF.md).
  bias_backward<T>(m.at<T>("dbi"), m.at<float>("side_scratch"), m.at<T>("dact"), N, I, m.side);
  m.run(m.d_up_w, m.side, ops(m.t("dact"), in, m.t("dwi")));
  m.run(m.d_up_x, s, ops(m.t("dact"), m.t("wi"), din, nullptr, beta));
}

// dproj (the gradient of the attention's output before its bias) -> din = beta·din + d(in).
template <class T>
void attention_backward(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step,
                        const void* in, void* din, float beta) {
  const BlockConfig& c = m.c;
  const int N = c.tokens(), H = c.hidden;
  m.fork(s);
  m.run(m.d_proj_w, m.side, ops(m.t("dproj"), m.t("ctx"), m.t("dwo")));
  m.run(m.d_proj_x, s, ops(m.t("dproj"), m.t("wo"), m.t("dctx")));
  void* qkv = m.t("qkv");
  void* dqkv = m.t("dqkv");
  auto part_of = [&](void* base, int which) {
    return m.offset(base, qkv_offset(QkvLayout::bshd, which, c.heads, c.head_dim()));
  };
  const Dropout probs_drop = site(c, step, kAttentionProbs);
  if (m.unfused) {
    m.unfused->backward(part_of(dqkv, 0), part_of(dqkv, 1), part_of(dqkv, 2), m.t("probs_work"),
                        m.t("dctx"), m.t("probs"), part_of(qkv, 0), part_of(qkv, 1),
                        part_of(qkv, 2), probs_drop, s);
  } else if (m.flash) {
    m.flash->backward(part_of(dqkv, 0), part_of(dqkv, 1), part_of(dqkv, 2),
                      m.at<float>("attn_delta"), m.t("dctx"), m.t("ctx"),
                      {m.at<float>("stats"), m.t("attn_keep")}, part_of(qkv, 0), part_of(qkv, 1),
                      part_of(qkv, 2), probs_drop, s);
  } else {
    m.fused->backward(part_of(dqkv, 0), part_of(dqkv, 1), part_of(dqkv, 2), m.t("dctx"), m.t("ctx"),
                      m.at<float>("stats"), part_of(qkv, 0), part_of(qkv, 1), part_of(qkv, 2),
                      nullptr, nullptr, probs_drop, m.t("attn_ws"), s);
  }
  GemmOperands w = ops(m.t("dqkv"), in, m.t("dwqkv"));
  m.fork(s);
  if (qkv_bias_by_epilogue(c))
    w.bias_grad = m.t("dbqkv");
  else  // as dbi in ffn_backward
    bias_backward<T>(m.at<T>("dbqkv"), m.at<float>("side_scratch"), m.at<T>("dqkv"), N, 3 * H,
                     m.side);
  m.run(m.d_qkv_w, m.side, w);
  m.run(m.d_qkv_x, s, ops(m.t("dqkv"), m.t("wqkv"), din, nullptr, beta));
}

// Post-LN: the gradient `dout` of out = LN(dropout(x + xbias) + residual) -> dresidual (written),
// dx, dxbias and the norm's parameter gradients.
template <class T>
void residual_norm_backward(TransformerBlock::Impl& m, cudaStream_t s, Dropout drop,
                            void* dresidual, const char* dx, const char* dxbias, const void* dout,
                            const char* z, int which) {
  const std::string n = std::to_string(which);
  bias_dropout_residual_layernorm_backward<T>(
      static_cast<T*>(dresidual), m.at<T>(dx), m.at<T>(dxbias), m.at<T>(("dln" + n + "_w").c_str()),
      m.at<T>(("dln" + n + "_b").c_str()), m.at<float>("scratch"), static_cast<const T*>(dout),
      nullptr, nullptr, m.at<T>(z), m.at<T>(("ln" + n + "_w").c_str()),
      m.at<float>(("mean" + n).c_str()), m.at<float>(("rstd" + n).c_str()), drop, m.c.tokens(),
      m.c.hidden, s);
}

template <class T>
void backward_post(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  const Dropout attention_out = site(m.c, step, kAttentionOut), ffn_out = site(m.c, step, kFfnOut);
  switch (m.part) {
    case BlockPart::layer:
      residual_norm_backward<T>(m, s, ffn_out, m.t("dh1"), "do2", "dbout", m.t("dout"), "z2", 2);
      ffn_backward<T>(m, s, m.t("h1"), m.t("dh1"), 1.f);  // dh1 += dpre·Wi
      residual_norm_backward<T>(m, s, attention_out, m.t("dx"), "dproj", "dbo", m.t("dh1"), "z1",
                                1);
      attention_backward<T>(m, s, step, m.t("x"), m.t("dx"), 1.f);  // dx += dqkv·Wqkv
      break;
    case BlockPart::attention:
      residual_norm_backward<T>(m, s, attention_out, m.t("dx"), "dproj", "dbo", m.t("dout"), "z1",
                                1);
      attention_backward<T>(m, s, step, m.t("x"), m.t("dx"), 1.f);
      break;
    case BlockPart::ffn:
      residual_norm_backward<T>(m, s, ffn_out, m.t("dx"), "do2", "dbout", m.t("dout"), "z2", 2);
      ffn_backward<T>(m, s, m.t("x"), m.t("dx"), 1.f);
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
  // out = h1 + dropout(o2 + bout): do2 and dbout; dout also flows to h1 along the residual.
  dropout_bias_backward<T>(m.at<T>("do2"), m.at<T>("dbout"), scratch, m.at<T>("dout"),
                           site(c, step, kFfnOut), N, H, s);
  ffn_backward<T>(m, s, m.t("norm2"), m.t("dnorm"), 0.f);
  // norm2 = LN2(h1), h1 = x + dropout(proj + bo): dh1 = dLN2(dnorm) + dout, dproj, dbo.
  bias_dropout_residual_layernorm_backward<T>(
      m.at<T>("dh1"), m.at<T>("dproj"), m.at<T>("dbo"), m.at<T>("dln2_w"), m.at<T>("dln2_b"),
      scratch, m.at<T>("dnorm"), nullptr, m.at<T>("dout"), m.at<T>("h1"), m.at<T>("ln2_w"),
      m.at<float>("mean2"), m.at<float>("rstd2"), site(c, step, kAttentionOut), N, H, s);
  attention_backward<T>(m, s, step, m.t("norm1"), m.t("dnorm"), 0.f);
  // norm1 = LN1(x): dx = dLN1(dnorm) + dh1 (x reaches h1 along the residual).
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
}

}  // namespace

}  // namespace xfbench::kernels
