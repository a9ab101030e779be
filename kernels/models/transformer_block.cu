// The block's construction: its tensors (parameters, gradients, saved activations, scratch,
// placed or owned), the attention cores, FP8 linears, and the accessors. The passes are in
// transformer_block_passes.cu, the configurations in transformer_block_config.cpp.
#include "kernels/models/transformer_block.hpp"

#include "kernels/models/detail/transformer_block_impl.hpp"

#include <algorithm>
#include <map>
#include <mutex>

namespace xfbench::kernels {

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

// The FFN products' choice, one per shape and device in the process (layers of a model
// share the first one's, as they share its GEMM plans).
std::shared_ptr<TransformerBlock::Impl::FfnChoice> shared_ffn_choice(const FusedGemmDesc& d) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<TransformerBlock::Impl::FfnChoice>> choices;
  int dev = 0;
  XF_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = choices[std::to_string(dev) + " " + d.describe()];
  if (!slot) slot = std::make_shared<TransformerBlock::Impl::FfnChoice>();
  return slot;
}

}  // namespace

bool ffn_products_fusable(const BlockConfig& c, BlockPart part, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (part != BlockPart::layer && part != BlockPart::ffn && part != BlockPart::dense_gelu)
    return no("this part has no activation after its up projection");
  if (c.precision != Precision::bf16 && c.precision != Precision::fp16)
    return no("fused FFN products take bf16 and fp16");
  if (!c.gated_ffn && c.activation != Activation::gelu_erf && c.activation != Activation::gelu_tanh)
    return no("the fused FFN products take GELU or a gated activation, not ReLU");
  if (c.ffn_dropout && c.residual_dropout > 0.f)
    return no("the fused FFN products have no dropout inside the FFN");
  if (c.gated_ffn && c.linear_bias) return no("the fused gated products take no bias");
  const BlockConfig s = c.shard();
  if (s.hidden % 8 || s.intermediate % 8) return no("hidden and intermediate multiples of 8");
  return fused_gemm_available(why);
}

TransformerBlock::TransformerBlock(const BlockConfig& config, BlockPart part,
                                   const TensorPlacement& place)
    : impl_(std::make_unique<Impl>(config, part, place)) {
  check_block_config(config, part);
  // Fused FFN products asked for where they cannot run: the case says so rather than run unfused.
  const bool activated_ffn = has_ffn(part) && part != BlockPart::dense &&
                             (config.gated_ffn || config.activation != Activation::relu);
  std::string why;
  if (config.ffn_products == FfnProducts::fused && activated_ffn &&
      !ffn_products_fusable(config, part, &why))
    XF_THROW(Unsupported, config.name + ": ffn_products=fused: " + why);
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
  // fp8: a linear input that only FP8 products read is written by its producer in FP8 (e4m3).
  const bool fp8 = c.precision == Precision::fp8;
  auto fp8_input = [&](const char* tensor, const char* weight) {
    m.fp8_inputs[tensor] = weight;
    return std::size_t(1);
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
    if (m.pre() && (!pre_part || !core))
      m.alloc("norm1", T * H, fp8 ? fp8_input("norm1", "wqkv") : m.elem, saved);
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
      m.alloc("norm_cross", T * H, fp8 ? fp8_input("norm_cross", "wq_cross") : m.elem, saved);
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
    // fp8: "act" in FP8 where wout reads it (its GELU then never runs in place).
    const bool act_fp8 = fp8 && !relu && (part == BlockPart::layer || part == BlockPart::ffn);
    if (dense_only || (train && !relu) || c.gated_ffn || act_fp8)
      m.alloc("pre", T * U, m.elem, dense_only ? TensorRole::output : train ? saved : scratch);
    if (!dense_only)
      m.alloc("act", T * I, act_fp8 ? fp8_input("act", "wout") : m.elem,
              part == BlockPart::dense_gelu ? TensorRole::output : saved);
    m.up = m.plan(T, U, H, false, true, dense_only ? Epilogue::bias : Epilogue::none);
    const std::string ffn = std::string("ffn ") + m.ffn_activation();
    if (c.ffn_products == FfnProducts::unfused && ffn_products_fusable(m.whole, part)) {
      m.ffn_choice = std::make_shared<Impl::FfnChoice>();
      m.ffn_choice->decided = true;
      m.ffn_choice->note = ffn + " unfused (as configured)";
    } else if (ffn_products_fusable(m.whole, part)) {
      FusedGemmDesc d;
      d.precision = c.precision, d.gelu = m.gelu(), d.gate = m.gate(), d.m = T, d.n = I, d.k = H;
      if (c.gated_ffn) {
        d.op = train ? FusedGemmOp::gated_aux : FusedGemmOp::gated;
        m.up_gate = m.plan(T, I, H, false, true, Epilogue::none, false, 2 * I);
      } else {
        d.op = train ? FusedGemmOp::bias_gelu_aux : FusedGemmOp::bias_gelu;
      }
      m.up_fused = std::make_unique<FusedGemm>(d);
      if (train) {
        d.op = c.gated_ffn ? FusedGemmOp::dgated : FusedGemmOp::dgelu;
        m.down_fused = std::make_unique<FusedGemm>(d);
      }
      if (c.ffn_products == FfnProducts::fused) {
        m.ffn_choice = std::make_shared<Impl::FfnChoice>();
        m.ffn_choice->decided = m.ffn_choice->fused_forward = m.ffn_choice->fused_backward = true;
        m.ffn_choice->note = ffn + " fused (as configured)";
      } else {
        m.ffn_choice = shared_ffn_choice(m.up_fused->desc());
      }
    }
    if (part == BlockPart::layer || part == BlockPart::ffn) {
      param("wout", H * I), linear_bias("bout", H);
      if (!pre_part) norm("2");
      // post: out = LN2(z2), z2 saved; pre: norm2 = LN2(h1) feeds the FFN.
      if (m.pre() && !pre_part)
        m.alloc("norm2", T * H, fp8 ? fp8_input("norm2", "wi") : m.elem, saved);
      if (train && !m.pre()) m.alloc("z2", T * H, m.elem, saved);
      if (train) stats("2");
      if (!pre_part) m.alloc("o2", T * H, m.elem, scratch);
      m.down = m.plan(T, H, I, false, true, Epilogue::none);
      if (train) {
        m.alloc("dh1", T * H, m.elem, scratch), m.alloc("do2", T * H, m.elem, scratch),
            m.alloc("dact", T * I, m.elem, scratch);
        if (c.gated_ffn && !m.fp8_gated_grad()) m.alloc("dpre", T * U, m.elem, scratch);
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
  // The norms' and column sums' partials (fp8: also dqkv's, from its cast: qkv_width wide).
  m.alloc("scratch",
          norm_backward_scratch_bytes(std::max(
              {c.hidden, c.intermediate, c.precision == Precision::fp8 ? c.qkv_width() : 0})),
          1, scratch);
  if (c.precision == Precision::fp8) m.make_fp8_linears(train);
  // fp8, post-LN: the norms' residual gradients, which the FP8 data-gradient products add to
  // their own from a buffer apart (backward_post).
  if (c.precision == Precision::fp8 && train && !m.pre()) m.alloc("dres", T * H, m.elem, scratch);
  if (train && c.linear_bias)  // the side stream's column sums (bias gradients) beside the main's
    m.alloc("side_scratch",
            norm_backward_scratch_bytes(
                std::min(std::max(c.qkv_width(), c.intermediate), kMaxBiasGradWidth)),
            1, scratch);
}

// One Fp8Linear per weight of this part: [out, in] as nn.Linear stores it. The step's FP8 copies of
// the inputs and gradients are block scratch (a model shares them between layers), and one set
// serves all of a block's linears: x's copy (the forward's, on the main stream) is also xᵀ's (the
// weight gradient's recast, on the side stream: no forward runs during a backward, which joins
// its side stream before it returns); dy's copies are written on the main stream just before
// their products, after a join (linear_grad), so the side stream's last reader of dyᵀ is done.
// T5's cross-attention casts the gradients of wkv_cross and wq_cross before either weight
// gradient runs: wq_cross has a second dy slot. So has wout: the FFN's activation backward writes
// wi's dy and dyᵀ (GELU, gated) while wout's weight gradient still reads its dyᵀ on the side
// stream. The weights' copies are each layer's own.
void TransformerBlock::Impl::make_fp8_linears(bool train) {
  const int T = c.tokens(), H = c.hidden, A = c.attention_width(), I = c.intermediate;
  const int U = c.gated_ffn ? 2 * I : I;
  const std::vector<std::pair<const char*, std::pair<int, int>>> shapes = {
      {"wqkv", {H, c.qkv_width()}}, {"wo", {A, H}}, {"wq_cross", {H, A}}, {"wkv_cross", {H, 2 * A}},
      {"wo_cross", {A, H}},         {"wi", {H, U}}, {"wout", {I, H}}};
  auto second_slot = [](const char* w) {
    return std::string(w) == "wq_cross" || std::string(w) == "wout";
  };
  std::vector<Fp8Format> formats;
  std::size_t in_max = 0, out_max[2] = {0, 0};
  for (const auto& [w, io] : shapes)
    if (t(w)) {
      for (Fp8Format f : fp8_linear_formats()) formats.push_back(f);
      in_max = std::max(in_max, std::size_t(T) * io.first);
      std::size_t& out = out_max[second_slot(w) ? 1 : 0];
      out = std::max(out, std::size_t(T) * io.second);
    }
  fp8_scales = std::make_unique<Fp8Scales>(formats, c.fp8);
  void* x = alloc("fp8.x", in_max, 1, TensorRole::scratch);
  void *dy[2] = {nullptr, nullptr}, *dyt[2] = {nullptr, nullptr};
  for (int k = 0; k < 2 && train; ++k)
    if (out_max[k]) {
      const std::string n = k ? "fp8.dy1" : "fp8.dy";
      dy[k] = alloc(n, out_max[k], 1, TensorRole::scratch);
      dyt[k] = alloc(n + "t", out_max[k], 1, TensorRole::scratch);
    }
  int next = 0;
  for (const auto& [w, io] : shapes)
    if (t(w)) {
      const int k = second_slot(w) ? 1 : 0;
      Fp8LinearOptions o;
      o.backward = train;
      o.scratch.x = x;
      if (train) o.scratch.xt = x, o.scratch.dy = dy[k], o.scratch.dyt = dyt[k];
      fp8[w] = std::make_unique<Fp8Linear>(T, io.first, io.second, *fp8_scales, next, o);
      next += 3;
      bytes += fp8[w]->device_bytes(), owned_bytes += fp8[w]->device_bytes();
    }
}

TransformerBlock::~TransformerBlock() = default;

const BlockConfig& TransformerBlock::config() const { return impl_->whole; }
BlockPart TransformerBlock::part() const { return impl_->part; }
std::string TransformerBlock::ffn_products() const {
  const auto& choice = impl_->ffn_choice;
  if (!choice) return "";
  if (!choice->decided)
    return std::string("ffn ") + impl_->ffn_activation() + " unfused (not searched)";
  return choice->note;
}

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

}  // namespace xfbench::kernels
