// The block's forward and backward passes (post- and pre-norm, T5's cross-attention, FP8 linears),
// templated on the storage type, and the public forward / tune / backward.
#include "kernels/models/detail/transformer_block_impl.hpp"
#include "kernels/models/transformer_block.hpp"

#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

namespace xfbench::kernels {

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
// dW = dyᵀ·x, on their plans or, in fp8, on the layer's Fp8Linear (from x as its producer wrote
// it in FP8 where it did: Impl::fp8_inputs).
const __nv_bfloat16* bf(const void* p) { return static_cast<const __nv_bfloat16*>(p); }
__nv_bfloat16* bf(void* p) { return static_cast<__nv_bfloat16*>(p); }
void linear_forward(TransformerBlock::Impl& m, cudaStream_t s, Gemm* g, const char* w,
                    const void* x, void* y, const void* bias = nullptr) {
  if (Fp8Linear* f = m.fp8_of(w)) {
    if (m.stored_fp8(x)) return f->forward_fp8(s, x, bf(y), bf(bias));
    return f->forward(s, bf(x), bf(y), bf(bias));
  }
  m.run(g, s, ops(x, m.t(w), y, bias));
}
// fp8: dy's scaled copies, before either backward product (which may run on two streams); the
// copies are the block's one set (make_fp8_linears): the side stream's weight gradients that read
// them last must be done first.
// dbias (nullable, fp8 only): the bias gradient from the cast's own pass.
void linear_grad(TransformerBlock::Impl& m, cudaStream_t s, const char* w, const void* dy,
                 void* dbias = nullptr) {
  if (Fp8Linear* f = m.fp8_of(w)) {
    m.join(s);
    f->cast_grad(s, bf(dy), bf(dbias), dbias ? m.at<float>("scratch") : nullptr);
  }
}
// beta != 0 in fp8: dx = dy·W + beta·c_in (cuBLASLt's FP8 products cannot add to dx in place).
void linear_data_grad(TransformerBlock::Impl& m, cudaStream_t s, Gemm* g, const char* w,
                      const void* dy, void* dx, float beta = 0.f, const void* c_in = nullptr) {
  if (Fp8Linear* f = m.fp8_of(w)) return f->backward_data(s, bf(dx), beta, bf(c_in));
  m.run(g, s, ops(dy, m.t(w), dx, nullptr, beta));
}
// o: a = dy, b = x, c = dW (and bias_grad).
void linear_weight_grad(TransformerBlock::Impl& m, cudaStream_t s, Gemm* g, const char* w,
                        const GemmOperands& o) {
  if (Fp8Linear* f = m.fp8_of(w)) {
    if (m.stored_fp8(o.b)) return f->backward_weight_fp8(s, o.b, o.c);
    return f->backward_weight(s, bf(o.b), o.c);
  }
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
  linear_forward(m, s, m.q_cross, "wq_cross", in, m.t("q_cross"));
  linear_forward(m, s, m.kv_cross, "wkv_cross", m.t("enc"), m.t("kv_cross"));
  void* kv = m.t("kv_cross");
  core_forward(m, m.cross_attn, m.t("ctx_cross"), m.t("q_cross"), kv,
               m.offset(kv, m.c.attention_width()), nullptr, site(m.c, step, kCrossProbs), s);
  linear_forward(m, s, m.proj, "wo_cross", m.t("ctx_cross"), m.t("proj_cross"));
  m.tp_sum(m.t("proj_cross"), s);
}

// The FFN's products with its activation, fused. GELU: act = gelu(in·Wiᵀ + bi) (pre keeps the
// sum, bias included, when training); dact = (do2·Wout) ⊙ gelu'(pre). Gated: the gate's product
// into pre's first half, then act = f(gate) · in·W_upᵀ (pre's second half keeps the product when
// training); dpre = both halves' gradients from do2·Wout.
void fused_up(TransformerBlock::Impl& m, cudaStream_t s, const void* in) {
  FusedGemmOperands o;
  o.a = in, o.b = m.t("wi"), o.out = m.t("act"), o.pre = m.t("pre"), o.bias = m.t("bi");
  if (m.c.gated_ffn) {  // wi = [W_gate; W_up]
    m.run(m.up_gate, s, ops(in, m.t("wi"), m.t("pre")));
    o.b = m.offset(m.t("wi"), std::int64_t(m.c.intermediate) * m.c.hidden);
  }
  m.up_fused->run(s, o);
}
void fused_down(TransformerBlock::Impl& m, cudaStream_t s) {
  FusedGemmOperands o;
  o.a = m.t("do2"), o.b = m.t("wout"), o.pre = m.t("pre");
  o.out = m.t(m.c.gated_ffn ? "dpre" : "dact");
  m.down_fused->run(s, o);
}
// Unfused: the product (pre without the bias), then the activation (GELU adding the bias); inner:
// the dropout inside a gated FFN (T5's; a GELU FFN has none there); act8 (nullable): act written
// in FP8 instead. dact = do2·Wout, then the activation's backward (GELU's in place; the gated
// one's into dpre, or with dy8 set into the up projection's FP8 gradient).
template <class T>
void unfused_up(TransformerBlock::Impl& m, cudaStream_t s, const void* in, void* pre,
                Dropout inner = {}, const Fp8Output* act8 = nullptr) {
  linear_forward(m, s, m.up, "wi", in, pre);
  const int N = m.c.tokens(), I = m.c.intermediate;
  if (m.c.gated_ffn)
    gated_dropout_forward<T>(m.at<T>("act"), static_cast<T*>(pre), N, I, m.gate(), inner, s, act8);
  else
    bias_gelu_forward<T>(m.at<T>("act"), static_cast<T*>(pre), m.at<T>("bi"), N, I, m.gelu(), s,
                         act8);
}
template <class T>
void unfused_down(TransformerBlock::Impl& m, cudaStream_t s, Dropout inner = {},
                  const Fp8Output* dy8 = nullptr) {
  linear_data_grad(m, s, m.d_down_x, "wout", m.t("do2"), m.t("dact"));
  const int N = m.c.tokens(), I = m.c.intermediate;
  if (m.c.gated_ffn)
    gated_dropout_backward<T>(m.at<T>("dpre"), m.at<T>("dact"), m.at<T>("pre"), N, I, m.gate(),
                              inner, s, dy8);
  else
    bias_gelu_backward<T>(m.at<T>("dact"), nullptr, m.at<float>("scratch"), m.at<T>("dact"),
                          m.at<T>("pre"), m.at<T>("bi"), N, I, m.gelu(), s);
}

// One choice between products unfused and fused, timed on this block's tensors (or as the
// XFBENCH_GEMM_PLANS file recorded it, where the products' searches are kept too: a case alone
// after a suite then runs what the suite chose); `what` names it in the file ("ffn swiglu
// backward"). Returns whether fused won, and what it measured in `note`.
bool choose_fused(cudaStream_t s, const std::string& what, const FusedGemm& fused,
                  const std::function<void()>& unfused_way, const std::function<void()>& fused_way,
                  std::string& note) {
  ChoiceRecord record;
  record.product = what + " products " + fused.desc().describe();
  record.key = "choice:" + record.product;
  record.labels = {"unfused", "fused"};
  std::vector<double> sec;
  const bool won = choose_faster(s, {unfused_way, fused_way}, &sec, &record) == 1;
  char text[96];
  if (sec.empty()) {
    std::snprintf(text, sizeof text, "as XFBENCH_GEMM_PLANS recorded");
  } else {
    const double gain = sec[0] / sec[1] - 1;
    std::snprintf(text, sizeof text, "fused %.1f%% %s than unfused", 100 * std::abs(gain),
                  gain >= 0 ? "faster" : "slower");
  }
  note = text;
  return won;
}

// tune(): the FFN's products fused or not, timed on this block's tensors (a training block: as
// the step runs them; the forward has run, do2 is any values), for every block of the shape.
// GELU: forward and backward together ("ffn gelu fused: fused 3.1% faster than unfused"); gated:
// each apart ("ffn swiglu fwd unfused, bwd fused: fwd: fused 2.0% slower than unfused; bwd: ...").
// Leaves pre and act as the chosen forward writes them. Only where ffn_products_fusable (no
// dropout inside the FFN, no FP8).
template <class T>
void choose_ffn_products(TransformerBlock::Impl& m, cudaStream_t s, const void* in) {
  void* pre = m.t("pre") ? m.t("pre") : m.t("act");
  const bool train = m.down_fused != nullptr;
  const std::string ffn = std::string("ffn ") + m.ffn_activation();
  TransformerBlock::Impl::FfnChoice& choice = *m.ffn_choice;
  std::string note;
  if (!m.c.gated_ffn) {
    const bool fused = choose_fused(
        s, ffn, *m.up_fused,
        [&] {
          unfused_up<T>(m, s, in, pre);
          if (train) unfused_down<T>(m, s);
        },
        [&] {
          fused_up(m, s, in);
          if (train) fused_down(m, s);
        },
        note);
    choice.fused_forward = choice.fused_backward = fused;
    choice.note = ffn + (fused ? " fused: " : " unfused: ") + note;
  } else {
    choice.fused_forward = choose_fused(
        s, ffn + " forward", *m.up_fused, [&] { unfused_up<T>(m, s, in, pre); },
        [&] { fused_up(m, s, in); }, note);
    choice.note = ffn + " fwd " + (choice.fused_forward ? "fused" : "unfused");
    std::string detail = "fwd: " + note;
    if (train) {
      choice.fused_backward = choose_fused(
          s, ffn + " backward", *m.down_fused, [&] { unfused_down<T>(m, s); },
          [&] { fused_down(m, s); }, note);
      choice.note += std::string(", bwd ") + (choice.fused_backward ? "fused" : "unfused");
      detail += "; bwd: " + note;
    }
    choice.note += ": " + detail;
  }
  choice.decided = true;
  if (choice.fused_forward)
    fused_up(m, s, in);
  else
    unfused_up<T>(m, s, in, pre);
}

// The FFN sublayer without its output bias, dropout, residual and norm: in -> o2 = act·Woutᵀ (the
// dense and dense_gelu parts stop at "pre" and "act"). T5: act = dropout(relu(pre)) in place, or
// dropout(gelu(pre_gate)·pre_linear).
template <class T>
void ffn_forward(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step, const void* in,
                 void* out = nullptr) {
  const BlockConfig& c = m.c;
  const int N = c.tokens(), I = c.intermediate;
  if (m.part == BlockPart::dense)  // the part's output is "pre"
    return linear_forward(m, s, m.up, "wi", in, m.t("pre"), m.t("bi"));
  void* pre = m.t("pre") ? m.t("pre") : m.t("act");
  const bool act_t = m.fp8_act_transposed();
  const Fp8Output act8 = act_t ? m.fp8_of("wout")->input_transposed(m.t("act"))
                               : m.fp8_output("act");  // q null: "act" in T
  if (m.tuning && m.up_fused && !m.down_fused && !m.ffn_choice->decided)
    choose_ffn_products<T>(m, s, in);  // forward only (a training block chooses in its backward)
  const Dropout inner = c.ffn_dropout ? site(c, step, kFfnInner) : Dropout{};
  if (m.ffn_fused_forward()) {
    fused_up(m, s, in);
  } else if (!c.gated_ffn && c.activation == Activation::relu) {
    linear_forward(m, s, m.up, "wi", in, pre);
    relu_dropout_forward<T>(m.at<T>("act"), static_cast<T*>(pre), std::size_t(N) * I, inner, s);
  } else {
    unfused_up<T>(m, s, in, pre, inner, &act8);
  }
  if (m.part == BlockPart::dense_gelu) return;
  if (!out) out = m.t("o2");
  if (act_t)  // act in wout's own copy ("act" holds actᵀ)
    m.fp8_of("wout")->forward_fp8(s, act8.q, bf(out));
  else
    linear_forward(m, s, m.down, "wout", m.t("act"), out);
  m.tp_sum(out, s);
}

// out = Norm(dropout(x + xbias) + residual), the sum saved as z (post-LN's z, pre-LN's residual
// stream), with norm `which`'s parameters and statistics; T5: RMSNorm, no xbias.
// `out` names the output tensor (pre-LN: written in FP8 where only an FP8 product reads it).
template <class T>
void residual_norm_forward(TransformerBlock::Impl& m, cudaStream_t s, Dropout drop, const char* out,
                           const char* z, const char* x, const char* xbias, const void* residual,
                           const std::string& which) {
  const BlockConfig& c = m.c;
  float* rstd = m.at<float>(("rstd" + which).c_str());
  const T* weight = m.at<T>(("ln" + which + "_w").c_str());
  const Fp8Output out8 = m.fp8_output(out);
  if (m.rms()) {
    dropout_residual_rmsnorm_forward<T>(m.at<T>(out), m.at<T>(z), rstd, m.at<T>(x),
                                        static_cast<const T*>(residual), weight, drop, c.tokens(),
                                        c.hidden, c.eps, s, &out8);
    return;
  }
  bias_dropout_residual_layernorm_forward<T>(
      m.at<T>(out), m.at<T>(z), m.at<float>(("mean" + which).c_str()), rstd, m.at<T>(x),
      m.at<T>(xbias), static_cast<const T*>(residual), weight,
      m.at<T>(("ln" + which + "_b").c_str()), drop, c.tokens(), c.hidden, c.eps, s, &out8);
}

template <class T>
void forward_post(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  const Dropout attention_out = site(m.c, step, kAttentionOut), ffn_out = site(m.c, step, kFfnOut);
  const bool layer = m.part == BlockPart::layer;
  if (has_attention(m.part)) {
    attention_forward<T>(m, s, step, m.t("x"));
    residual_norm_forward<T>(m, s, attention_out, layer ? "h1" : "out", "z1", "proj", "bo",
                             m.t("x"), "1");
    if (!layer) return;
  }
  const void* in = layer ? m.t("h1") : m.t("x");
  ffn_forward<T>(m, s, step, in);
  if (m.part == BlockPart::layer || m.part == BlockPart::ffn)
    residual_norm_forward<T>(m, s, ffn_out, "out", "z2", "o2", "bout", in, "2");
}

// Pre-LN (the whole block only): each sublayer's residual add and the next sublayer's norm are
// one kernel. T5's decoder puts the cross-attention between the two: h2 = h1 + drop(cross).
template <class T>
void forward_pre(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  const BlockConfig& c = m.c;
  const int N = c.tokens(), H = c.hidden;
  if (m.part == BlockPart::attention) return attention_forward<T>(m, s, step, m.t("x"), m.t("out"));
  if (m.part == BlockPart::ffn) return ffn_forward<T>(m, s, step, m.t("x"), m.t("out"));
  const Fp8Output norm1 = m.fp8_output("norm1");
  if (m.rms())
    rmsnorm_forward<T>(m.at<T>("norm1"), m.at<float>("rstd1"), m.at<T>("x"), m.at<T>("ln1_w"), N, H,
                       c.eps, s, &norm1);
  else
    layernorm_forward<T>(m.at<T>("norm1"), m.at<float>("mean1"), m.at<float>("rstd1"), m.at<T>("x"),
                         m.at<T>("ln1_w"), m.at<T>("ln1_b"), N, H, c.eps, s, &norm1);
  if (m.part == BlockPart::norm_qkv)
    return linear_forward(m, s, m.qkv, "wqkv", m.t("norm1"), m.t("qkv"), m.t("bqkv"));
  attention_forward<T>(m, s, step, m.t("norm1"));
  // h1 = x + dropout(proj + bo); the next norm of h1
  const char* next = c.cross_attention ? "_cross" : "2";
  residual_norm_forward<T>(m, s, site(c, step, kAttentionOut), (std::string("norm") + next).c_str(),
                           "h1", "proj", "bo", m.t("x"), next);
  const char* h = "h1";
  if (c.cross_attention) {
    cross_attention_forward<T>(m, s, step, m.t("norm_cross"));
    residual_norm_forward<T>(m, s, site(c, step, kCrossOut), "norm2", "h2", "proj_cross", nullptr,
                             m.t("h1"), "2");
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
// input gradient (fp8: beta·c_in, a buffer apart); weight and bias gradients on the side stream.
// do2_fp8: do2's producer wrote wout's dy and dyᵀ already (backward_pre), no cast here.
template <class T>
void ffn_backward(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step, const void* in,
                  void* din, float beta, const void* c_in = nullptr, bool do2_fp8 = false) {
  const BlockConfig& c = m.c;
  const int N = c.tokens(), I = c.intermediate;
  if (m.tuning && m.down_fused && !m.ffn_choice->decided) choose_ffn_products<T>(m, s, in);
  if (!do2_fp8) linear_grad(m, s, "wout", m.t("do2"));
  m.fork(s);
  if (m.fp8_act_transposed())
    m.fp8_of("wout")->backward_weight_fp8t(m.side, m.t("act"), m.t("dwout"));
  else
    linear_weight_grad(m, m.side, m.d_down_w, "wout", ops(m.t("do2"), m.t("act"), m.t("dwout")));
  // The gradient of the up projection's output: [T, I] in place, the gated FFN's [T, 2I] apart.
  const char* dpre = c.gated_ffn ? "dpre" : "dact";
  const Dropout inner = c.ffn_dropout ? site(c, step, kFfnInner) : Dropout{};
  // fp8, gated, no bias: the backward writes wi's dy in FP8 itself, and in a training block dyᵀ
  // too (wout's weight gradient, still running on the side stream, reads the other dy slot).
  const Fp8Output dy8 =
      m.fp8_gated_grad() ? m.fp8_of("wi")->grad_input(m.fp8_act_transposed()) : Fp8Output{};
  // fp8, GELU: its backward writes wi's dy and dyᵀ in FP8 and the bias gradient, in one pass.
  const bool gelu8 =
      m.fp8_of("wi") && !m.ffn_fused_backward() && !c.gated_ffn && c.activation != Activation::relu;
  if (gelu8) {
    linear_data_grad(m, s, m.d_down_x, "wout", m.t("do2"), m.t("dact"));
    const Fp8Output dy = m.fp8_of("wi")->grad_input(true);  // wout's in the other slot
    bias_gelu_backward<T>(nullptr, c.linear_bias ? m.at<T>("dbi") : nullptr, m.at<float>("scratch"),
                          m.at<T>("dact"), m.at<T>("pre"), m.at<T>("bi"), N, I, m.gelu(), s, &dy);
  } else if (m.ffn_fused_backward()) {
    fused_down(m, s);
  } else if (!c.gated_ffn && c.activation == Activation::relu) {
    linear_data_grad(m, s, m.d_down_x, "wout", m.t("do2"), m.t("dact"));
    relu_dropout_backward<T>(m.at<T>("dact"), m.at<T>("dact"), m.at<T>("act"), std::size_t(N) * I,
                             inner, s);
  } else {
    unfused_down<T>(m, s, inner, &dy8);
  }
  if (dy8.q && !dy8.qt) {  // dyᵀ from those bytes, after the side stream's last reader of dyᵀ
    m.join(s);
    m.fp8_of("wi")->grad_written(s);
  } else if (!dy8.q && !gelu8) {
    linear_grad(m, s, "wi", m.t(dpre));
  }
  m.fork(s);
  // dbi = Σ_tokens dpre by our column sum on the side stream, beside the weight-gradient GEMM
  // (faster in the layer than in the GELU backward or in cuBLASLt's bias-gradient epilogue,
  // which runs as a separate, slower kernel: PERF.md).
  if (c.linear_bias && !gelu8)
    bias_backward<T>(m.at<T>("dbi"), m.at<float>("side_scratch"), m.at<T>(dpre), N, I, m.side);
  linear_weight_grad(m, m.side, m.d_up_w, "wi", ops(m.t(dpre), in, m.t("dwi")));
  linear_data_grad(m, s, m.d_up_x, "wi", m.t(dpre), din, m.tp_beta(beta), c_in);
  m.tp_sum(din, s);
}

// dproj (the gradient of the attention's output before its bias) -> din = beta·din + d(in) (fp8:
// beta·c_in, as ffn_backward); T5: the relative bias table's gradient from the score bias's.
template <class T>
void attention_backward(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step,
                        const void* in, void* din, float beta, const void* c_in = nullptr) {
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
  // The gradients of the rotated q and k become those of the projection's output. fp8 without a
  // bias: the rotation writes wqkv's dy and dyᵀ itself (after the side stream's last reader of
  // the ones before, as linear_grad), no bf16 pass between; its tile pass takes half head dims in
  // multiples of 8 (others: rotate, then cast).
  GemmOperands w = ops(m.t("dqkv"), in, m.t("dwqkv"));
  Fp8Linear* wqkv8 = m.fp8_of("wqkv");
  const bool dbias8 = c.linear_bias && wqkv8;  // fp8: the bias gradient from dqkv's cast
  if (m.rope && wqkv8 && !c.linear_bias && c.head_dim() / 2 % 8 == 0) {
    m.join(s);
    m.rope->backward_fp8<__nv_bfloat16>(m.at<__nv_bfloat16>("dqkv"), N, c.seq, c.heads,
                                        c.kv_head_count(), wqkv8->grad_input(true), s);
  } else {
    if (m.rope) m.rope->backward<T>(m.at<T>("dqkv"), N, c.seq, c.heads, c.kv_head_count(), s);
    linear_grad(m, s, "wqkv", m.t("dqkv"), dbias8 ? m.t("dbqkv") : nullptr);
  }
  m.fork(s);
  if (m.rel && m.self_attn.flash)  // the table from the gradient's diagonal sums
    m.rel->backward_from_diagonals<T>(m.at<T>("drel_bias"), m.at<float>("dbias_diagonals"), m.side);
  else if (m.rel)  // a few MB of bias gradient: beside the weight-gradient GEMM
    m.rel->backward<T>(m.at<T>("drel_bias"), m.at<T>("dposition_bias"), m.t("rel_scratch"), m.side);
  if (c.linear_bias && qkv_bias_by_epilogue(c))  // never in fp8 (check_block_config)
    w.bias_grad = m.t("dbqkv");
  else if (c.linear_bias && !dbias8)  // as dbi in ffn_backward
    bias_backward<T>(m.at<T>("dbqkv"), m.at<float>("side_scratch"), m.at<T>("dqkv"), N,
                     c.qkv_width(), m.side);
  linear_weight_grad(m, m.side, m.d_qkv_w, "wqkv", w);
  linear_data_grad(m, s, m.d_qkv_x, "wqkv", m.t("dqkv"), din, m.tp_beta(beta), c_in);
  m.tp_sum(din, s);
}

// T5's cross-attention: dproj_cross -> din = d(in) (the decoder stream's) and denc; the weight
// gradients on the side stream.
template <class T>
void cross_attention_backward(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step,
                              const void* in, void* din) {
  linear_grad(m, s, "wo_cross", m.t("dproj_cross"));
  m.fork(s);
  linear_weight_grad(m, m.side, m.d_proj_w, "wo_cross",
                     ops(m.t("dproj_cross"), m.t("ctx_cross"), m.t("dwo_cross")));
  linear_data_grad(m, s, m.d_proj_x, "wo_cross", m.t("dproj_cross"), m.t("dctx_cross"));
  void* kv = m.t("kv_cross");
  void* dkv = m.t("dkv_cross");
  const std::int64_t A = m.c.attention_width();
  core_backward(m, m.cross_attn, m.t("dq_cross"), dkv, m.offset(dkv, A), nullptr, m.t("dctx_cross"),
                m.t("ctx_cross"), m.t("q_cross"), kv, m.offset(kv, A), nullptr,
                site(m.c, step, kCrossProbs), s);
  linear_grad(m, s, "wkv_cross", dkv);
  linear_grad(m, s, "wq_cross", m.t("dq_cross"));
  m.fork(s);
  linear_weight_grad(m, m.side, m.d_kv_cross_w, "wkv_cross",
                     ops(dkv, m.t("enc"), m.t("dwkv_cross")));
  linear_weight_grad(m, m.side, m.d_q_cross_w, "wq_cross",
                     ops(m.t("dq_cross"), in, m.t("dwq_cross")));
  linear_data_grad(m, s, m.d_kv_cross_x, "wkv_cross", dkv, m.t("denc"));
  m.tp_sum(m.t("denc"), s);
  linear_data_grad(m, s, m.d_q_cross_x, "wq_cross", m.t("dq_cross"), din);
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

// Post-LN: each sublayer's input gradient is the norm's residual gradient plus its linear's data
// gradient, added by the product (beta 1); fp8 products read that addend from "dres" (apart).
template <class T>
void backward_post(TransformerBlock::Impl& m, cudaStream_t s, std::uint64_t step) {
  const Dropout attention_out = site(m.c, step, kAttentionOut), ffn_out = site(m.c, step, kFfnOut);
  const bool apart = !m.fp8.empty();
  auto residual = [&](const char* g) { return apart ? m.t("dres") : m.t(g); };
  switch (m.part) {
    case BlockPart::layer:
      residual_norm_backward<T>(m, s, ffn_out, residual("dh1"), "do2", "dbout", m.t("dout"),
                                nullptr, "z2", "2");
      ffn_backward<T>(m, s, step, m.t("h1"), m.t("dh1"), 1.f, residual("dh1"));  // += dpre·Wi
      residual_norm_backward<T>(m, s, attention_out, residual("dx"), "dproj", "dbo", m.t("dh1"),
                                nullptr, "z1", "1");
      attention_backward<T>(m, s, step, m.t("x"), m.t("dx"), 1.f, residual("dx"));  // += dqkv·Wqkv
      break;
    case BlockPart::attention:
      residual_norm_backward<T>(m, s, attention_out, residual("dx"), "dproj", "dbo", m.t("dout"),
                                nullptr, "z1", "1");
      attention_backward<T>(m, s, step, m.t("x"), m.t("dx"), 1.f, residual("dx"));
      break;
    case BlockPart::ffn:
      residual_norm_backward<T>(m, s, ffn_out, residual("dx"), "do2", "dbout", m.t("dout"), nullptr,
                                "z2", "2");
      ffn_backward<T>(m, s, step, m.t("x"), m.t("dx"), 1.f, residual("dx"));
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
  // out = h + dropout(o2 + bout): do2 and dbout; dout also flows to h along the residual. fp8:
  // do2 straight into wout's dy and dyᵀ (after the side stream's last reader of the ones before).
  Fp8Linear* wout8 = m.fp8_of("wout");
  if (wout8) m.join(s);
  const Fp8Output do2_8 = wout8 ? wout8->grad_input(true) : Fp8Output{};
  dropout_bias_backward<T>(wout8 ? nullptr : m.at<T>("do2"), m.at<T>("dbout"), scratch,
                           m.at<T>("dout"), site(c, step, kFfnOut), N, H, s, &do2_8);
  ffn_backward<T>(m, s, step, m.t("norm2"), m.t("dnorm"), 0.f, nullptr, wout8 != nullptr);
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
