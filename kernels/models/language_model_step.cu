// The training step of language_model.hpp: a micro-batch's forward, loss and backward, gradient
// accumulation, then clipping and AdamW. Everything is enqueued on the caller's stream.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cross_entropy.hpp"
#include "kernels/dropout.hpp"
#include "kernels/embedding.hpp"
#include "kernels/gelu.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/models/detail/language_model_impl.hpp"

namespace xfbench::kernels {
namespace {

// Row copies of [*, C] matrices, 16 bytes a thread: out[out_rows[r] or r] = in[in_rows[r] or r]
// for r < R (the LM head's masked rows gathered, their gradients scattered back).
__global__ void copy_rows_kernel(uint4* out, const int* out_rows, const uint4* in,
                                 const int* in_rows, int vectors_per_row) {
  const int r = blockIdx.x;
  const std::size_t dst = std::size_t(out_rows ? out_rows[r] : r) * vectors_per_row;
  const std::size_t src = std::size_t(in_rows ? in_rows[r] : r) * vectors_per_row;
  for (int i = threadIdx.x; i < vectors_per_row; i += blockDim.x) out[dst + i] = in[src + i];
}

void copy_rows(void* out, const int* out_rows, const void* in, const int* in_rows, int R,
               std::size_t row_bytes, cudaStream_t s) {
  const int vectors = int(row_bytes / 16);  // rows of C % 8 == 0 elements of 2 or 4 bytes
  copy_rows_kernel<<<R, std::min(vectors, 256), 0, s>>>(
      static_cast<uint4*>(out), out_rows, static_cast<const uint4*>(in), in_rows, vectors);
  XF_CUDA_CHECK_LAUNCH();
}

GemmOperands ops(const void* a, const void* b, void* c, const void* bias = nullptr) {
  GemmOperands o;
  o.a = a, o.b = b, o.c = c, o.bias = bias;
  return o;
}

using Impl = LanguageModel::Impl;

struct Shapes {
  int B, S, H, V, Vp, T, R, Rc, L;  // Rc: the LM head's rows made at a time (R / Rc chunks)
  explicit Shapes(const TrainConfig& c)
      : B(c.batch),
        S(c.seq),
        H(c.model.hidden),
        V(c.model.vocab),
        Vp(c.model.padded_vocab()),
        T(c.tokens()),
        R(c.head_rows()),
        Rc(c.head_chunk_rows()),
        L(c.model.layers) {}
};

template <class T>
T* at(const Impl& m, const std::string& key) {
  return static_cast<T*>(m.buf(key));
}
template <class T>
T* p(const Impl& m, const std::string& name) {
  return static_cast<T*>(m.param(name));
}
template <class T>
T* g(const Impl& m, const std::string& name) {
  return static_cast<T*>(m.grad(name));
}
std::string boundary(int i) { return "boundary" + std::to_string(i); }

// The learned position table (BERT, GPT-2), or null (Llama: rotary positions in the blocks).
template <class T>
T* position(const Impl& m) {
  return m.c.model.learned_positions() ? p<T>(m, "position") : nullptr;
}
// The LM head's weight: the word table when tied, else Llama 3.1-8b's own "lm_head".
template <class T>
T* head_weight(const Impl& m, bool gradient) {
  const char* name = m.c.model.tied_head ? "word" : "lm_head";
  return gradient ? g<T>(m, name) : p<T>(m, name);
}

Dropout embedding_dropout(const Impl& m, std::uint64_t step) {
  return Dropout{m.c.dropout, m.dropout_seed(m.c.model.layers), step};
}

// Embeddings -> boundary0: BERT LayerNorm(word + position + type), GPT-2 word + position; dropout.
template <class T>
void embeddings_forward(Impl& m, cudaStream_t s, int k, std::uint64_t step) {
  const Shapes z(m.c);
  const int* ids = at<int>(m, "emb.ids") + std::size_t(k) * z.T;
  T* x0 = at<T>(m, boundary(0));
  if (m.c.model.kind == LmKind::masked) {
    T* sum = at<T>(m, "emb.sum");
    embedding_forward<T>(sum, ids, at<int>(m, "emb.types") + std::size_t(k) * z.T, p<T>(m, "word"),
                         p<T>(m, "position"), p<T>(m, "type"), z.B, z.S, z.H, z.V, s);
    layernorm_forward<T>(x0, at<float>(m, "emb.mean"), at<float>(m, "emb.rstd"), sum,
                         p<T>(m, "emb_ln_w"), p<T>(m, "emb_ln_b"), z.T, z.H, m.c.model.eps, s);
  } else {
    embedding_forward<T>(x0, ids, nullptr, p<T>(m, "word"), position<T>(m), nullptr, z.B, z.S, z.H,
                         z.V, s);
  }
  const Dropout d = embedding_dropout(m, step);
  if (d.active()) dropout_forward<T>(x0, x0, std::size_t(z.T) * z.H, d, s);
}

// The gradient of boundary0 (in `dx0`; `spare` is free) -> embedding gradients (added into the
// word table's, which the decoder's weight gradient wrote first).
template <class T>
void embeddings_backward(Impl& m, cudaStream_t s, int k, std::uint64_t step, T* dx0, T* spare) {
  const Shapes z(m.c);
  const bool masked = m.c.model.kind == LmKind::masked;
  const int* ids = at<int>(m, "emb.ids") + std::size_t(k) * z.T;
  const int* types = masked ? at<int>(m, "emb.types") + std::size_t(k) * z.T : nullptr;
  const Dropout d = embedding_dropout(m, step);
  T* de = dx0;
  if (d.active()) {
    dropout_backward<T>(spare, dx0, std::size_t(z.T) * z.H, d, s);
    std::swap(de, spare);
  }
  if (masked) {  // de is the LayerNorm's output gradient; its input gradient goes to `spare`
    layernorm_backward<T>(spare, g<T>(m, "emb_ln_w"), g<T>(m, "emb_ln_b"),
                          at<float>(m, "norm_scratch"), de, nullptr, at<T>(m, "emb.sum"),
                          p<T>(m, "emb_ln_w"), at<float>(m, "emb.mean"), at<float>(m, "emb.rstd"),
                          z.T, z.H, s);
    de = spare;
  }
  auto zero = [&](const char* name) {
    XF_CUDA_CHECK(cudaMemsetAsync(g<T>(m, name), 0, m.layout.param(name).elements * sizeof(T), s));
  };
  if (m.c.model.learned_positions()) zero("position");
  if (masked) zero("type");
  if (!m.c.model.tied_head) zero("word");  // no head gradient written into it first
  embedding_backward<T>(g<T>(m, "word"), position<T>(m) ? g<T>(m, "position") : nullptr,
                        masked ? g<T>(m, "type") : nullptr, at<void>(m, "emb.scratch"), de, ids,
                        types, z.B, z.S, z.H, z.V, masked ? m.c.model.token_types : 0, s);
}

// Last layer's output -> logits [R, Vp] -> loss (accumulated over micro-batches) and dlogits in
// place -> the gradient of the last layer's output, in "dgrad0". The logits are made Rc rows at a
// time (TrainConfig::head_chunk_rows), each chunk's head weight gradient added to the chunks'
// before it.
template <class T>
void head_forward_backward(Impl& m, cudaStream_t s, int k) {
  const Shapes z(m.c);
  const float eps = m.c.model.eps;
  const bool masked = m.c.model.kind == LmKind::masked;
  T* top = at<T>(m, boundary(z.L));
  T *out = at<T>(m, "head.out"), *dout = at<T>(m, "head.dout"), *logits = at<T>(m, "head.logits");
  float *mean = at<float>(m, "head.mean"), *rstd = at<float>(m, "head.rstd");
  const int* rows = at<int>(m, "head.rows") + std::size_t(k) * z.R;
  const int* targets = at<int>(m, "head.targets") + std::size_t(k) * z.R;
  T *in = nullptr, *pre = nullptr, *act = nullptr;
  if (masked) {  // transform = LayerNorm(gelu(in·Wᵀ + b)) of the masked rows
    in = at<T>(m, "head.in"), pre = at<T>(m, "head.pre"), act = at<T>(m, "head.act");
    copy_rows(in, nullptr, top, rows, z.R, z.H * sizeof(T), s);
    m.run(m.dense, s, ops(in, p<T>(m, "head_w"), pre));
    bias_gelu_forward<T>(act, pre, p<T>(m, "head_b"), z.R, z.H, Gelu::erf, s);
    layernorm_forward<T>(out, mean, rstd, act, p<T>(m, "head_ln_w"), p<T>(m, "head_ln_b"), z.R, z.H,
                         eps, s);
  } else if (m.c.model.llama) {
    rmsnorm_forward<T>(out, rstd, top, p<T>(m, "lnf_w"), z.T, z.H, eps, s);
  } else {
    layernorm_forward<T>(out, mean, rstd, top, p<T>(m, "lnf_w"), p<T>(m, "lnf_b"), z.T, z.H, eps,
                         s);
  }
  const float per_micro = 1.f / m.c.accum;
  const bool scaled = m.c.precision == Precision::fp16;
  for (int r0 = 0; r0 < z.R; r0 += z.Rc) {
    const std::size_t rows_in = std::size_t(r0) * z.H;
    m.run(m.decoder, s,
          ops(out + rows_in, head_weight<T>(m, false), logits,
              masked ? p<T>(m, "decoder_b") : nullptr));
    cross_entropy_forward_backward<T>(at<float>(m, "head.losses") + r0, logits, targets + r0, z.Rc,
                                      z.V, z.Vp, per_micro, m.c.loss_rows(),
                                      scaled ? &m.scalars()->loss_scale : nullptr, s);
    // tied: the table's first share (the embeddings' backward adds theirs); chunks after the
    // first add to it
    GemmOperands dword = ops(logits, out + rows_in, head_weight<T>(m, true));
    dword.beta = r0 > 0 ? 1.f : 0.f;
    if (masked) dword.bias_grad = g<T>(m, "decoder_b");  // one chunk: masked rows are few
    m.run(m.d_decoder_w, s, dword);
    m.run(m.d_decoder_x, s, ops(logits, head_weight<T>(m, false), dout + rows_in));
  }
  cross_entropy_mean(at<float>(m, "head.loss"), at<float>(m, "head.losses"), targets, z.R,
                     per_micro, k > 0, s);
  T* dtop = at<T>(m, "dgrad0");
  float* scratch = at<float>(m, "norm_scratch");
  if (masked) {
    T* dact = at<T>(m, "head.dact");
    layernorm_backward<T>(dact, g<T>(m, "head_ln_w"), g<T>(m, "head_ln_b"), scratch, dout, nullptr,
                          act, p<T>(m, "head_ln_w"), mean, rstd, z.R, z.H, s);
    bias_gelu_backward<T>(dact, g<T>(m, "head_b"), scratch, dact, pre, p<T>(m, "head_b"), z.R, z.H,
                          Gelu::erf, s);
    m.run(m.d_dense_w, s, ops(dact, in, g<T>(m, "head_w")));
    m.run(m.d_dense_x, s, ops(dact, p<T>(m, "head_w"), dout));
    XF_CUDA_CHECK(cudaMemsetAsync(dtop, 0, std::size_t(z.T) * z.H * sizeof(T), s));
    copy_rows(dtop, rows, dout, nullptr, z.R, z.H * sizeof(T), s);
  } else if (m.c.model.llama) {
    rmsnorm_backward<T>(dtop, g<T>(m, "lnf_w"), scratch, dout, nullptr, top, p<T>(m, "lnf_w"), rstd,
                        z.T, z.H, s);
  } else {
    layernorm_backward<T>(dtop, g<T>(m, "lnf_w"), g<T>(m, "lnf_b"), scratch, dout, nullptr, top,
                          p<T>(m, "lnf_w"), mean, rstd, z.T, z.H, s);
  }
}

// ZeRO-3 (m.windows): before layer l's forward its weights are gathered (layer l + 2's into the
// same window once l is done), the backward finds the last two layers still there and gathers
// each layer two below the one it finished; each layer's gradients are scattered into its chunk
// while the layers below compute.
template <class T>
void micro_batch_impl(Impl& m, cudaStream_t s, int k, const LanguageModel::GradientsReady* ready) {
  const Shapes z(m.c);
  const std::uint64_t step = m.micro_step++;
  const bool sharded = m.windows != nullptr;
  if (sharded) {
    if (!m.windows->collectives.gather)
      XF_THROW(InvalidArgument, "language model: sharded weights need their trainer's collectives");
    // A step's first micro-batch: the optimizer changed every chunk (later ones find the first
    // two layers still gathered from the last backward)
    if (k == 0) m.windows->holds[0] = m.windows->holds[1] = -1;
    for (int l = 0; l < std::min(2, z.L); ++l) m.gather_layer(l);
  }
  embeddings_forward<T>(m, s, k, step);
  m.done("embeddings", s);
  for (int l = 0; l < z.L; ++l) {
    if (sharded) m.use_layer(l, s);
    m.blocks[l]->forward(s, step);
    if (!sharded) continue;
    m.release_layer(l, s);
    if (l + 2 < z.L) m.gather_layer(l + 2);
  }
  m.done("blocks forward", s);
  head_forward_backward<T>(m, s, k);
  m.done("head and loss", s);
  if (ready) (*ready)(0);
  for (int l = z.L - 1; l >= 0; --l) {
    if (sharded) m.gather_layer(l), m.use_layer(l, s), m.before_backward(l, s);
    // Checkpointing: the shared saved activations hold the last layer's, every other layer
    // recomputes its forward (writing its output again, the same bits) before its backward.
    if (m.c.checkpointing && l != z.L - 1) m.blocks[l]->forward(s, step);
    m.blocks[l]->backward(s, step);
    if (sharded) {
      m.release_layer(l, s);
      m.scatter_layer(l, s);
      if (l >= 2) m.gather_layer(l - 2);
    }
    if (ready) (*ready)(z.L - l);
  }
  m.done("blocks backward", s);
  const int last = z.L % 2;  // the layer-0 input gradient's ping-pong buffer (arena_key)
  embeddings_backward<T>(m, s, k, step, at<T>(m, "dgrad" + std::to_string(last)),
                         at<T>(m, "dgrad" + std::to_string(1 - last)));
  m.done("embeddings backward", s);
  if (ready) (*ready)(z.L + 1);
  if (sharded) m.join_collectives(s);  // the layers' gradients are in their chunks
  if (m.c.accum > 1) {                 // ZeRO-3: the layers' chunks as stored, each scattered above
    const std::size_t n = m.layout.sharded.stored_elements(m.layout.param_elements);
    if (k == 0)
      XF_CUDA_CHECK(
          cudaMemcpyAsync(m.accum_grads.p, m.grads.p, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
    else
      grad_accumulate<T>(static_cast<T*>(m.accum_grads.p), static_cast<const T*>(m.grads.p), n, s);
    m.done("gradient accumulation", s);
  }
}

template <class T>
void optimizer_impl(Impl& m, cudaStream_t s) {
  const std::size_t n = m.layout.param_elements;
  const T* grads = static_cast<const T*>(m.final_grads());
  float* norm_scratch = at<float>(m, "grad_norm_scratch");
  if (m.c.tp_size > 1) {
    // Tensor parallel: the split parameters' squares summed over the ranks, those every rank holds
    // whole (the same gradients on each) counted once, on rank 0.
    grad_norm_partials<T>(norm_scratch, grads, m.c.tp_rank == 0 ? n : m.layout.tp_split_elements,
                          s);
    m.c.tp_reduce(norm_scratch, grad_norm_scratch_bytes() / sizeof(float), ElemType::f32, s);
    grad_norm_finish(m.scalars(), norm_scratch, m.c.max_grad_norm, m.loss_scaling(), s);
  } else {
    grad_norm_clip<T>(m.scalars(), norm_scratch, grads, n, m.c.max_grad_norm, m.loss_scaling(), s);
  }
  const AdamWSettings& a = m.c.adamw;
  const AdamWConfig config{a.lr, a.beta1, a.beta2, a.eps, a.weight_decay};
  // tf32/fp32: AdamW updates the weights in place as its master copy (no second write).
  T* weights = m.weights_are_master() ? nullptr : static_cast<T*>(m.params.p);
  if (m.c.optimizer == OptimizerKind::fused)
    adamw_fused<T>(weights, m.master_weights(), m.moment1(), m.moment2(), grads, *m.adamw, config,
                   m.scalars(), s);
  else
    adamw_unfused<T>(weights, m.master_weights(), m.moment1(), m.moment2(), grads,
                     at<void>(m, "adamw_scratch"), *m.adamw, config, m.scalars(), s);
  m.done("optimizer", s);
}

}  // namespace

void LanguageModel::Impl::gather_layer(int layer) {
  LayerWindows& w = *windows;
  const int i = layer % 2;
  if (w.holds[i] == layer) return;
  cudaStream_t cs = w.collectives.stream;
  XF_CUDA_CHECK(cudaStreamWaitEvent(cs, w.weights_free[i], 0));
  w.collectives.gather(w.weights[i], chunk(params.p, layer), layout.sharded.chunk(), cs);
  XF_CUDA_CHECK(cudaEventRecord(w.weights_ready[i], cs));
  w.holds[i] = layer;
}

void LanguageModel::Impl::use_layer(int layer, cudaStream_t s) {
  XF_CUDA_CHECK(cudaStreamWaitEvent(s, windows->weights_ready[layer % 2], 0));
}

void LanguageModel::Impl::release_layer(int layer, cudaStream_t s) {
  XF_CUDA_CHECK(cudaEventRecord(windows->weights_free[layer % 2], s));
}

void LanguageModel::Impl::before_backward(int layer, cudaStream_t s) {
  XF_CUDA_CHECK(cudaStreamWaitEvent(s, windows->grads_free[layer % 2], 0));
}

void LanguageModel::Impl::scatter_layer(int layer, cudaStream_t s) {
  LayerWindows& w = *windows;
  const int i = layer % 2;
  cudaStream_t cs = w.collectives.stream;
  XF_CUDA_CHECK(cudaEventRecord(w.grads_ready[i], s));
  XF_CUDA_CHECK(cudaStreamWaitEvent(cs, w.grads_ready[i], 0));
  w.collectives.scatter(chunk(grads.p, layer), w.grads[i], layout.sharded.chunk(), cs);
  XF_CUDA_CHECK(cudaEventRecord(w.grads_free[i], cs));
}

void LanguageModel::Impl::join_collectives(cudaStream_t s) {
  LayerWindows& w = *windows;
  XF_CUDA_CHECK(cudaEventRecord(w.collectives_done, w.collectives.stream));
  XF_CUDA_CHECK(cudaStreamWaitEvent(s, w.collectives_done, 0));
}

void LanguageModel::Impl::run(Gemm* gemm, cudaStream_t s, const GemmOperands& o) {
  if (tuning && !gemm->tuned()) gemm->tune(s, o);
  gemm->run(s, o);
}

void LanguageModel::Impl::make_head_plans() {
  const Shapes z(c);
  auto plan = [&](std::int64_t M, std::int64_t N, std::int64_t K, bool ta, bool tb, Epilogue e) {
    GemmDesc d;
    d.precision = storage_precision(c.precision);  // fp8: the LM head stays bf16, as TE keeps it
    d.m = M, d.n = N, d.k = K, d.trans_a = ta, d.trans_b = tb, d.epilogue = e;
    return &gemm_plan(d);
  };
  const bool masked = c.model.kind == LmKind::masked;
  if (masked) {
    dense = plan(z.R, z.H, z.H, false, true, Epilogue::none);
    d_dense_w = plan(z.H, z.H, z.R, true, false, Epilogue::none);
    d_dense_x = plan(z.R, z.H, z.H, false, false, Epilogue::none);
  }
  decoder = plan(z.Rc, z.Vp, z.H, false, true, masked ? Epilogue::bias : Epilogue::none);
  d_decoder_w = plan(z.Vp, z.H, z.Rc, true, false, masked ? Epilogue::bgrad_a : Epilogue::none);
  d_decoder_x = plan(z.Rc, z.H, z.Vp, false, false, Epilogue::none);
}

LossScaling LanguageModel::Impl::loss_scaling() const {
  LossScaling l;
  l.dynamic = c.precision == Precision::fp16;
  l.init_scale = c.initial_loss_scale;
  l.growth_interval = c.loss_scale_window;
  return l;
}

void LanguageModel::Impl::reset_optimizer(cudaStream_t s) {
  const std::size_t n = layout.param_elements;
  if (c.shard_optimizer) return train_scalars_init(scalars(), loss_scaling(), s);  // ZeRO-2
  if (!weights_are_master()) {
    with_storage_type(c.precision, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      adamw_init_master<T>(master_weights(), static_cast<const T*>(params.p), n, s);
    });
  }
  XF_CUDA_CHECK(cudaMemsetAsync(moment1(), 0, 2 * n * sizeof(float), s));
  train_scalars_init(scalars(), loss_scaling(), s);
}

void LanguageModel::Impl::micro_batch(cudaStream_t s, int k,
                                      const LanguageModel::GradientsReady* ready) {
  with_storage_type(c.precision, [&](auto* tag) {
    micro_batch_impl<std::remove_pointer_t<decltype(tag)>>(*this, s, k, ready);
  });
}

void LanguageModel::Impl::optimizer_step(cudaStream_t s) {
  with_storage_type(c.precision, [&](auto* tag) {
    optimizer_impl<std::remove_pointer_t<decltype(tag)>>(*this, s);
  });
}

void LanguageModel::compute_gradients(cudaStream_t s) {
  for (int k = 0; k < impl_->c.accum; ++k) impl_->micro_batch(s, k);
}

void LanguageModel::compute_gradients(cudaStream_t s, const GradientsReady& ready) {
  const int A = impl_->c.accum;
  for (int k = 0; k < A; ++k) impl_->micro_batch(s, k, A == 1 ? &ready : nullptr);
  if (A > 1)  // the accumulated gradients are final only now
    for (int point = 0; point <= impl_->c.model.layers + 1; ++point) ready(point);
}

void LanguageModel::optimizer_step(cudaStream_t s) {
  if (impl_->c.shard_optimizer)
    XF_THROW(InvalidArgument, "language model: with a sharded optimizer the trainer steps it");
  impl_->optimizer_step(s);
}

void LanguageModel::set_part_marks(PartDone mark) { impl_->part_done = std::move(mark); }

void LanguageModel::step(cudaStream_t s) {
  compute_gradients(s);
  optimizer_step(s);
}

std::string LanguageModel::ffn_products() const {
  return impl_->blocks.empty() ? "" : impl_->blocks.front()->ffn_products();
}

void LanguageModel::tune() {
  Impl& m = *impl_;
  cudaStream_t s = nullptr;
  m.blocks.front()->tune(s);  // every layer shares the first one's GEMM plans
  m.tuning = true;
  try {
    m.micro_batch(s, 0);  // the LM head's plans, on its real operands
  } catch (...) {
    m.tuning = false;
    throw;
  }
  m.tuning = false;
  XF_CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace xfbench::kernels
