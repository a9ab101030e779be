#include "kernels/bert_layer.hpp"

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

const char* to_string(BertPart p) {
  switch (p) {
    case BertPart::layer:
      return "layer";
    case BertPart::dense:
      return "dense";
    case BertPart::dense_gelu:
      return "dense_gelu";
    case BertPart::ffn:
      return "ffn";
    case BertPart::attention:
      return "attention";
  }
  return "?";
}

std::string BertConfig::describe() const {
  return "hidden " + std::to_string(hidden) + ", heads " + std::to_string(heads) +
         ", intermediate " + std::to_string(intermediate) + ", batch " + std::to_string(batch) +
         ", seq " + std::to_string(seq) + ", " + to_string(precision) + ", " + to_string(backend);
}

namespace {
// Bias gradients (column sums over tokens) up to this width run as bias_backward on the side
// stream; the QKV projection's 3·hidden above it uses cuBLASLt's bias-gradient epilogue.
constexpr int kMaxBiasGradWidth = 8192;  // bias_backward's widest row (dropout.hpp)
bool qkv_bias_by_epilogue(const BertConfig& c) { return 3 * c.hidden > kMaxBiasGradWidth; }
}  // namespace

void check_bert_config(const BertConfig& c) {
  auto bad = [&](const std::string& why) {
    XF_THROW(InvalidArgument, "BertLayer " + c.describe() + ": " + why);
  };
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
  if (c.dropout < 0.f || c.dropout >= 1.f) bad("dropout must be in [0, 1)");
}

double bert_forward_flops(const BertConfig& c, BertPart part) {
  const double T = c.tokens(), h = c.hidden, I = c.intermediate;
  const double attention = 8 * T * h * h + 4.0 * c.batch * double(c.seq) * c.seq * h;
  switch (part) {
    case BertPart::dense:
    case BertPart::dense_gelu:
      return 2 * T * h * I;
    case BertPart::ffn:
      return 4 * T * h * I;
    case BertPart::attention:
      return attention;
    case BertPart::layer:
      return attention + 4 * T * h * I;
  }
  return 0;
}

namespace {

// Dropout sites of a step: independent Philox streams.
enum Site : std::uint64_t { kAttentionProbs, kAttentionOut, kFfnOut, kSites };
Dropout site(const BertConfig& c, std::uint64_t step, Site s) {
  return Dropout{c.dropout, 0x5eedULL, step * kSites + s};
}

bool has_attention(BertPart p) { return p == BertPart::layer || p == BertPart::attention; }
bool has_ffn(BertPart p) { return p != BertPart::attention; }

}  // namespace

struct BertLayer::Impl {
  BertConfig c;
  BertPart part;
  std::size_t elem;  // bytes per element of the storage type
  std::map<std::string, std::pair<void*, std::size_t>> tensors;  // name -> (pointer, elements)
  std::size_t bytes = 0;
  std::unique_ptr<UnfusedAttention> unfused;
  std::unique_ptr<CudnnAttention> fused;
  std::unique_ptr<FlashAttention> flash;
  AttentionDesc attn;
  // GEMM plans (cached process-wide by gemm_plan).
  Gemm *qkv = nullptr, *proj = nullptr, *up = nullptr, *down = nullptr;
  Gemm *d_down_w = nullptr, *d_down_x = nullptr, *d_up_w = nullptr, *d_up_x = nullptr;
  Gemm *d_proj_w = nullptr, *d_proj_x = nullptr, *d_qkv_w = nullptr, *d_qkv_x = nullptr;

  Impl(const BertConfig& config, BertPart p) : c(config), part(p), elem(2) {}
  ~Impl() {
    for (auto& kv : tensors) cudaFree(kv.second.first);
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    if (side) cudaStreamDestroy(side);
  }

  void* alloc(const std::string& name, std::size_t n, std::size_t elem_bytes) {
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, n * elem_bytes);
    if (err != cudaSuccess) {
      cudaGetLastError();
      XF_THROW(Unsupported, "BertLayer " + c.describe() + ": out of device memory allocating " +
                                name + " (" + std::to_string((n * elem_bytes) >> 20) + " MiB)");
    }
    tensors[name] = {p, n};
    bytes += n * elem_bytes;
    return p;
  }
  void* t(const char* name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : it->second.first;
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
};

BertLayer::BertLayer(const BertConfig& config, BertPart part)
    : impl_(std::make_unique<Impl>(config, part)) {
  check_bert_config(config);
  Impl& m = *impl_;
  const BertConfig& c = m.c;
  const std::int64_t T = c.tokens(), H = c.hidden, I = c.intermediate;
  const bool whole =  // a part with an output [T, H] and a backward
      part == BertPart::layer || part == BertPart::ffn || part == BertPart::attention;
  // Forward only (no_grad): no gradients, and nothing saved for a backward.
  const bool train = whole && c.backward;
  auto param = [&](const char* name, std::size_t n) {
    m.alloc(name, n, m.elem);
    if (train) m.alloc(std::string("d") + name, n, m.elem);
  };
  m.alloc("x", T * H, m.elem);
  if (train) m.alloc("dx", T * H, m.elem);
  if (has_attention(part)) {
    param("wqkv", 3 * H * H), param("bqkv", 3 * H), param("wo", H * H), param("bo", H);
    param("ln1_w", H), param("ln1_b", H);
    m.alloc("qkv", T * 3 * H, m.elem), m.alloc("ctx", T * H, m.elem),
        m.alloc("proj", T * H, m.elem);
    m.alloc("h1", T * H, m.elem);
    if (train) m.alloc("z1", T * H, m.elem), m.alloc("mean1", T, 4), m.alloc("rstd1", T, 4);
    m.attn =
        self_attention_desc(c.precision, c.batch, c.heads, c.seq, c.head_dim(), QkvLayout::bshd);
    m.attn.dropout = c.dropout;
    if (c.backend == AttentionBackend::unfused) {
      m.unfused = std::make_unique<UnfusedAttention>(m.attn);
      // The scores become the probabilities in place; the second buffer holds their dropout, and
      // is the backward's scratch.
      m.alloc("probs", m.unfused->probs_elements(), m.elem);
      if (train || c.dropout > 0.f) m.alloc("probs_work", m.unfused->probs_elements(), m.elem);
    } else if (c.backend == AttentionBackend::flash) {
      m.flash = std::make_unique<FlashAttention>(m.attn);
      if (train && !m.flash->has_backward())
        XF_THROW(Unsupported, "BertLayer " + c.describe() +
                                  ": xfbench's flash attention backward needs a Hopper GPU");
      if (train) {
        m.alloc("stats", m.flash->stats_elements(), 4);
        m.alloc("attn_delta", m.flash->stats_elements(), 4);
        m.alloc("attn_keep", std::max<std::size_t>(m.flash->keep_bytes(), 16), 1);
      }
    } else {
      m.fused = std::make_unique<CudnnAttention>(m.attn, train);
      if (train) m.alloc("stats", m.fused->stats_elements(), 4);
      m.alloc("attn_ws", std::max<std::size_t>(m.fused->workspace_bytes(), 16), 1);
    }
    m.qkv = m.plan(T, 3 * H, H, false, true, Epilogue::bias);
    m.proj = m.plan(T, H, H, false, true, Epilogue::none);
    if (train) {
      m.alloc("dqkv", T * 3 * H, m.elem), m.alloc("dctx", T * H, m.elem),
          m.alloc("dproj", T * H, m.elem);
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
    const bool dense_only = part == BertPart::dense;
    if (dense_only || train) m.alloc("pre", T * I, m.elem);
    if (!dense_only) m.alloc("act", T * I, m.elem);
    m.up = m.plan(T, I, H, false, true, dense_only ? Epilogue::bias : Epilogue::none);
    if (part == BertPart::layer || part == BertPart::ffn) {
      param("wout", H * I), param("bout", H), param("ln2_w", H), param("ln2_b", H);
      m.alloc("o2", T * H, m.elem);
      m.down = m.plan(T, H, I, false, true, Epilogue::none);
      if (train) {
        m.alloc("z2", T * H, m.elem), m.alloc("mean2", T, 4), m.alloc("rstd2", T, 4);
        m.alloc("dh1", T * H, m.elem), m.alloc("do2", T * H, m.elem),
            m.alloc("dact", T * I, m.elem);
        m.d_down_w = m.plan(H, I, T, true, false, Epilogue::none, true);
        m.d_down_x = m.plan(T, I, H, false, false, Epilogue::none);
        m.d_up_w = m.plan(I, H, T, true, false, Epilogue::none, true);
        m.d_up_x = m.plan(T, H, I, false, false, Epilogue::none);
      }
    }
  }
  if (whole) m.alloc("out", T * H, m.elem);
  if (train) m.alloc("dout", T * H, m.elem);
  if (train) XF_CUDA_CHECK(cudaStreamCreateWithFlags(&m.side, cudaStreamNonBlocking));
  m.alloc("scratch", norm_backward_scratch_bytes(std::max(c.hidden, c.intermediate)), 1);
  if (train)  // the side stream's column sums (bias gradients) run beside the main stream's
    m.alloc("side_scratch",
            norm_backward_scratch_bytes(
                std::min(std::max(3 * c.hidden, c.intermediate), kMaxBiasGradWidth)),
            1);
}

BertLayer::~BertLayer() = default;

const BertConfig& BertLayer::config() const { return impl_->c; }
BertPart BertLayer::part() const { return impl_->part; }
std::size_t BertLayer::device_bytes() const { return impl_->bytes; }

void* BertLayer::tensor(const std::string& name) const { return impl_->t(name.c_str()); }
std::size_t BertLayer::elements(const std::string& name) const {
  auto it = impl_->tensors.find(name);
  return it == impl_->tensors.end() ? 0 : it->second.second;
}

std::vector<std::string> BertLayer::parameters() const {
  std::vector<std::string> out;
  for (const char* n : {"wqkv", "bqkv", "wo", "bo", "ln1_w", "ln1_b", "wi", "bi", "wout", "bout",
                        "ln2_w", "ln2_b"}) {
    if (impl_->t(n)) out.push_back(n);
  }
  return out;
}

namespace {

template <class T>
void forward_impl(BertLayer::Impl& m, cudaStream_t s, std::uint64_t step);
template <class T>
void backward_impl(BertLayer::Impl& m, cudaStream_t s, std::uint64_t step);

}  // namespace

void BertLayer::forward(cudaStream_t stream, std::uint64_t step) {
  if (impl_->c.precision == Precision::fp16) {
    forward_impl<__half>(*impl_, stream, step);
  } else {
    forward_impl<__nv_bfloat16>(*impl_, stream, step);
  }
}

void BertLayer::tune(cudaStream_t stream) {
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

void BertLayer::backward(cudaStream_t stream, std::uint64_t step) {
  if (!impl_->t("dout"))
    XF_THROW(InvalidArgument,
             std::string("BertLayer part ") + to_string(impl_->part) + " has no backward");
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

// x -> h1 (attention half: BertAttention).
template <class T>
void attention_forward(BertLayer::Impl& m, cudaStream_t s, std::uint64_t step, void* out) {
  const BertConfig& c = m.c;
  const int N = c.tokens(), H = c.hidden;
  m.run(m.qkv, s, ops(m.t("x"), m.t("wqkv"), m.t("qkv"), m.t("bqkv")));
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
  bias_dropout_residual_layernorm_forward<T>(
      static_cast<T*>(out), m.at<T>("z1"), m.at<float>("mean1"), m.at<float>("rstd1"),
      m.at<T>("proj"), m.at<T>("bo"), m.at<T>("x"), m.at<T>("ln1_w"), m.at<T>("ln1_b"),
      site(c, step, kAttentionOut), N, H, c.eps, s);
}

// in -> out (ffn half: BertIntermediate + BertOutput), or the dense / dense_gelu parts.
template <class T>
void ffn_forward(BertLayer::Impl& m, cudaStream_t s, std::uint64_t step, const void* in) {
  const BertConfig& c = m.c;
  const int N = c.tokens(), H = c.hidden;
  if (m.part == BertPart::dense) {
    m.run(m.up, s, ops(in, m.t("wi"), m.t("pre"), m.t("bi")));  // the part's output is "pre"
    return;
  }
  void* pre = m.t("pre") ? m.t("pre") : m.t("act");
  m.run(m.up, s, ops(in, m.t("wi"), pre));
  bias_gelu_forward<T>(m.at<T>("act"), static_cast<T*>(pre), m.at<T>("bi"), N, c.intermediate,
                       c.gelu, s);
  if (m.part == BertPart::dense_gelu) return;
  m.run(m.down, s, ops(m.t("act"), m.t("wout"), m.t("o2")));
  bias_dropout_residual_layernorm_forward<T>(
      m.at<T>("out"), m.at<T>("z2"), m.at<float>("mean2"), m.at<float>("rstd2"), m.at<T>("o2"),
      m.at<T>("bout"), static_cast<const T*>(in), m.at<T>("ln2_w"), m.at<T>("ln2_b"),
      site(c, step, kFfnOut), N, H, c.eps, s);
}

template <class T>
void forward_impl(BertLayer::Impl& m, cudaStream_t s, std::uint64_t step) {
  switch (m.part) {
    case BertPart::layer:
      attention_forward<T>(m, s, step, m.t("h1"));
      ffn_forward<T>(m, s, step, m.t("h1"));
      break;
    case BertPart::attention:
      attention_forward<T>(m, s, step, m.t("out"));
      break;
    default:
      ffn_forward<T>(m, s, step, m.t("x"));
      break;
  }
}

// dout -> d(in); the ffn half's input is `in`, its input gradient goes to `din`.
template <class T>
void ffn_backward(BertLayer::Impl& m, cudaStream_t s, std::uint64_t step, const void* in,
                  void* din) {
  const BertConfig& c = m.c;
  const int N = c.tokens(), H = c.hidden, I = c.intermediate;
  float* scratch = m.at<float>("scratch");
  // LN2: din <- gradient along the residual; do2 <- gradient of the down projection's output.
  bias_dropout_residual_layernorm_backward<T>(
      static_cast<T*>(din), m.at<T>("do2"), m.at<T>("dbout"), m.at<T>("dln2_w"), m.at<T>("dln2_b"),
      scratch, m.at<T>("dout"), nullptr, nullptr, m.at<T>("z2"), m.at<T>("ln2_w"),
      m.at<float>("mean2"), m.at<float>("rstd2"), site(c, step, kFfnOut), N, H, s);
  m.fork(s);
  m.run(m.d_down_w, m.side, ops(m.t("do2"), m.t("act"), m.t("dwout")));
  m.run(m.d_down_x, s, ops(m.t("do2"), m.t("wout"), m.t("dact")));
  bias_gelu_backward<T>(m.at<T>("dact"), nullptr, scratch, m.at<T>("dact"), m.at<T>("pre"),
                        m.at<T>("bi"), N, I, c.gelu, s);
  m.fork(s);
  // dbi = Σ_tokens dpre by our column sum on the side stream, beside the weight-gradient GEMM
  // (faster in the layer than in the GELU backward or in cuBLASLt's bias-gradient epilogue,
  // which runs as a separate, slower kernel: PERF.md).
  bias_backward<T>(m.at<T>("dbi"), m.at<float>("side_scratch"), m.at<T>("dact"), N, I, m.side);
  m.run(m.d_up_w, m.side, ops(m.t("dact"), in, m.t("dwi")));
  m.run(m.d_up_x, s, ops(m.t("dact"), m.t("wi"), din, nullptr, 1.f));  // din += dpre·Wi
}

// d(h1) -> dx.
template <class T>
void attention_backward(BertLayer::Impl& m, cudaStream_t s, std::uint64_t step, const void* dh1) {
  const BertConfig& c = m.c;
  const int N = c.tokens(), H = c.hidden;
  bias_dropout_residual_layernorm_backward<T>(
      m.at<T>("dx"), m.at<T>("dproj"), m.at<T>("dbo"), m.at<T>("dln1_w"), m.at<T>("dln1_b"),
      m.at<float>("scratch"), static_cast<const T*>(dh1), nullptr, nullptr, m.at<T>("z1"),
      m.at<T>("ln1_w"), m.at<float>("mean1"), m.at<float>("rstd1"), site(c, step, kAttentionOut), N,
      H, s);
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
  GemmOperands w = ops(m.t("dqkv"), m.t("x"), m.t("dwqkv"));
  m.fork(s);
  if (qkv_bias_by_epilogue(c))
    w.bias_grad = m.t("dbqkv");
  else  // as dbi in ffn_backward
    bias_backward<T>(m.at<T>("dbqkv"), m.at<float>("side_scratch"), m.at<T>("dqkv"), N, 3 * H,
                     m.side);
  m.run(m.d_qkv_w, m.side, w);
  m.run(m.d_qkv_x, s, ops(m.t("dqkv"), m.t("wqkv"), m.t("dx"), nullptr, 1.f));  // dx += dqkv·Wqkv
}

template <class T>
void backward_impl(BertLayer::Impl& m, cudaStream_t s, std::uint64_t step) {
  m.next_event = 0;
  switch (m.part) {
    case BertPart::layer:
      ffn_backward<T>(m, s, step, m.t("h1"), m.t("dh1"));
      attention_backward<T>(m, s, step, m.t("dh1"));
      break;
    case BertPart::attention:
      attention_backward<T>(m, s, step, m.t("dout"));
      break;
    case BertPart::ffn:
      ffn_backward<T>(m, s, step, m.t("x"), m.t("dx"));
      break;
    default:
      XF_THROW(InvalidArgument,
               std::string("BertLayer part ") + to_string(m.part) + " has no backward");
  }
  m.join(s);  // the caller's stream sees every gradient
}

}  // namespace

}  // namespace xfbench::kernels
