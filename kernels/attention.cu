// Shared attention description helpers and the unfused backend (see attention.hpp).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/detail/pack.cuh"  // vec.cuh, and fp32 storage
#include "kernels/softmax.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

float AttentionDesc::softmax_scale() const {
  return scale != 0.f ? scale : 1.f / std::sqrt(static_cast<float>(HD));
}

const char* to_string(QkvLayout l) { return l == QkvLayout::bshd ? "bshd" : "sbhd"; }

std::int64_t qkv_offset(QkvLayout layout, int which, int NH, int HD, int NKV) {
  if (layout == QkvLayout::sbhd) return std::int64_t(which) * HD;
  // bshd row: [NH q heads | NKV k heads | NKV v heads]
  const int kv = NKV ? NKV : NH;
  return std::int64_t(which == 0 ? 0 : which == 1 ? NH : NH + kv) * HD;
}

AttentionDesc self_attention_desc(Precision precision, int B, int NH, int S, int HD,
                                  QkvLayout layout, int NKV) {
  AttentionDesc d;
  d.precision = precision;
  d.B = B, d.NH = NH, d.Sq = S, d.Sk = S, d.HD = HD;
  d.NKV = NKV;
  if (NKV < 0 || (NKV && NH % NKV != 0)) XF_THROW(InvalidArgument, "attention: NKV must divide NH");
  const std::int64_t H = std::int64_t(NH) * HD;
  HeadStrides qkv, o;
  if (layout == QkvLayout::bshd) {
    const std::int64_t row = H + 2 * std::int64_t(d.kv_heads()) * HD;
    qkv = {S * row, HD, row};
    o = {S * H, HD, H};
  } else {
    // Megatron interleaves q, k, v per head: no room for fewer K/V heads.
    if (d.kv_heads() != NH)
      XF_THROW(InvalidArgument, "attention: grouped-query attention needs the bshd layout");
    qkv = {NH * 3 * std::int64_t(HD), 3 * std::int64_t(HD), B * 3 * H};
    o = {H, HD, B * H};
  }
  d.q = d.k = d.v = qkv;
  d.o = o;
  return d;
}

double attention_core_flops(const AttentionDesc& d) {
  return 4.0 * d.B * d.NH * double(d.Sq) * d.Sk * d.HD;
}

namespace {
bool fp32_storage(const AttentionDesc& d) {
  return d.precision == Precision::fp32 || d.precision == Precision::tf32;
}
// Everything check_attention_desc checks but the precision.
void check_attention_shape(const AttentionDesc& d) {
  if (d.B < 1 || d.NH < 1 || d.Sq < 1 || d.Sk < 1 || d.HD < 1 || d.HD % 8 != 0)
    XF_THROW(InvalidArgument, "attention: bad shape (HD must be a multiple of 8)");
  if (d.NKV < 0 || d.NH % d.kv_heads() != 0)
    XF_THROW(InvalidArgument, "attention: NKV must divide NH (grouped-query attention)");
  if (d.causal && d.Sq != d.Sk) XF_THROW(InvalidArgument, "attention: causal needs Sq == Sk");
  if (!(d.dropout >= 0.f && d.dropout < 1.f))
    XF_THROW(InvalidArgument, "attention: dropout must be in [0, 1)");
  if (d.bias_grad && !d.bias) XF_THROW(InvalidArgument, "attention: bias_grad needs a bias");
}
}  // namespace

void check_attention_desc(const AttentionDesc& d) {
  if (d.precision != Precision::fp16 && d.precision != Precision::bf16)
    XF_THROW(InvalidArgument,
             "attention: precision must be fp16 or bf16 (fp32 and tf32: the unfused backend only)");
  check_attention_shape(d);
}

namespace {

// Bytes of one stored element of Q, K, V, O and the score buffers.
std::size_t storage_bytes(const AttentionDesc& d) { return fp32_storage(d) ? 4 : 2; }

// One operand of a per-(b, h) product: row pitch and the strides between batch items and heads.
// kv: a key/value operand, indexed by the query head's K/V head h / group.
struct Operand {
  std::int64_t ld, sb, sh;
  bool kv = false;
};

// A product over all (b, h). With G = group() query heads per K/V head, query head h = G·j + r:
// for each r, the items (b, j) are a product over B × NKV in which a query-side operand's heads
// are G·sh apart (from r·sh) and a K/V operand's sh apart. Each is one strided-batched GEMM when
// every operand's (b, j) items are one stride apart, otherwise a loop over the smaller of B and
// NKV with the other batched. A K/V output (dK, dV) is the sum over r: r = 0 writes it, the
// others add to it (beta 1), in order.
struct BatchedProduct {
  Gemm* plan = nullptr;
  int loops = 1, members = 1;                       // members: G
  std::int64_t step_a = 0, step_b = 0, step_c = 0;  // elements per loop iteration
  std::int64_t next_a = 0, next_b = 0, next_c = 0;  // elements per group member r
  bool accumulate = false;                          // C is a K/V operand summed over r
  float alpha = 1.f;

  void run(cudaStream_t stream, const void* a, const void* b, void* c, std::size_t es) const {
    for (int r = 0; r < members; ++r)
      for (int i = 0; i < loops; ++i) {
        GemmOperands ops;
        ops.a = static_cast<const char*>(a) + (i * step_a + r * next_a) * es;
        ops.b = static_cast<const char*>(b) + (i * step_b + r * next_b) * es;
        ops.c = static_cast<char*>(c) + (i * step_c + r * next_c) * es;
        ops.alpha = alpha;
        ops.beta = accumulate && r > 0 ? 1.f : 0.f;
        plan->run(stream, ops);
      }
  }
};

std::int64_t pow2_alignment(std::initializer_list<std::int64_t> element_counts, std::size_t es) {
  std::int64_t g = 256;
  for (std::int64_t e : element_counts) g = std::gcd(g, e * std::int64_t(es));
  return g & -g;  // largest power of two dividing all
}

BatchedProduct make_product(const AttentionDesc& d, bool trans_a, bool trans_b, std::int64_t m,
                            std::int64_t n, std::int64_t k, Operand A, Operand B, Operand C,
                            float alpha) {
  const std::size_t es = storage_bytes(d);
  const int G = d.group(), NKV = d.kv_heads();
  BatchedProduct p;
  p.alpha = alpha;
  p.members = G;
  p.accumulate = C.kv && G > 1;
  // Per group member r: query-side operands move one head, K/V operands stay.
  if (G > 1) p.next_a = A.kv ? 0 : A.sh, p.next_b = B.kv ? 0 : B.sh, p.next_c = C.kv ? 0 : C.sh;
  for (Operand* x : {&A, &B, &C})
    if (!x->kv) x->sh *= G;  // between K/V heads j and j + 1
  GemmDesc g;
  g.precision = d.precision;
  g.trans_a = trans_a, g.trans_b = trans_b;
  g.m = m, g.n = n, g.k = k;
  g.lda = A.ld, g.ldb = B.ld, g.ldc = C.ld;
  const bool uniform = A.sb == NKV * A.sh && B.sb == NKV * B.sh && C.sb == NKV * C.sh;
  if (uniform || NKV == 1) {
    g.batch = std::int64_t(d.B) * NKV;
    g.stride_a = A.sh, g.stride_b = B.sh, g.stride_c = C.sh;
    if (NKV == 1) g.stride_a = A.sb, g.stride_b = B.sb, g.stride_c = C.sb;
  } else if (NKV <= d.B) {  // batch over b, loop over heads
    g.batch = d.B;
    g.stride_a = A.sb, g.stride_b = B.sb, g.stride_c = C.sb;
    p.loops = NKV, p.step_a = A.sh, p.step_b = B.sh, p.step_c = C.sh;
  } else {  // batch over heads, loop over b
    g.batch = NKV;
    g.stride_a = A.sh, g.stride_b = B.sh, g.stride_c = C.sh;
    p.loops = d.B, p.step_a = A.sb, p.step_b = B.sb, p.step_c = C.sb;
  }
  g.alignment =
      static_cast<int>(pow2_alignment({A.ld, B.ld, C.ld, g.stride_a, g.stride_b, g.stride_c,
                                       p.step_a, p.step_b, p.step_c, p.next_a, p.next_b, p.next_c},
                                      es));
  p.plan = &gemm_plan(g);
  return p;
}

// probs may be null (nothing keeps P; see UnfusedAttention's `training`).
template <class T>
void softmax_forward(const AttentionDesc& d, void* probs, void* work, const void* scores,
                     const float* mask, const void* bias, Dropout dropout, cudaStream_t stream) {
  attention_softmax_forward<T>(static_cast<T*>(probs), static_cast<T*>(work),
                               static_cast<const T*>(scores), d.padding_mask ? mask : nullptr,
                               d.bias ? static_cast<const T*>(bias) : nullptr, 1.f, d.causal,
                               dropout, d.B, d.NH, d.Sq, d.Sk, stream);
}

template <class T>
void softmax_backward(const AttentionDesc& d, void* work, const void* probs, Dropout dropout,
                      cudaStream_t stream) {
  attention_softmax_backward<T>(static_cast<T*>(work), static_cast<const T*>(work),
                                static_cast<const T*>(probs), 1.f, dropout, d.B, d.NH, d.Sq, d.Sk,
                                stream);
}

// dbias[e] = Σ_b dscores[b][e] over n = NH·Sq·Sk elements (n % 8 == 0), b in order: one thread per
// 8 elements, reads coalesced across the threads.
template <class T>
__global__ void sum_over_batch_kernel(T* dbias, const T* dscores, int B, std::size_t n) {
  const std::size_t e = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 8;
  if (e >= n) return;
  float acc[8] = {}, x[8];
  for (int b = 0; b < B; ++b) {
    detail::load8(x, dscores + b * n + e);
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] += x[j];
  }
  detail::store8(dbias + e, acc);
}

template <class T>
void sum_over_batch(const AttentionDesc& d, void* dbias, const void* dscores, cudaStream_t stream) {
  const std::size_t n = std::size_t(d.NH) * d.Sq * d.Sk, threads = 256;
  const std::size_t blocks = (n / 8 + threads - 1) / threads;
  sum_over_batch_kernel<T><<<unsigned(blocks), unsigned(threads), 0, stream>>>(
      static_cast<T*>(dbias), static_cast<const T*>(dscores), d.B, n);
  XF_CUDA_CHECK_LAUNCH();
}

// The storage type's instantiation of `f` (a generic lambda taking a T* tag).
template <class F>
void dispatch(const AttentionDesc& d, const F& f) {
  if (d.precision == Precision::fp16)
    f(static_cast<__half*>(nullptr));
  else if (d.precision == Precision::bf16)
    f(static_cast<__nv_bfloat16*>(nullptr));
  else
    f(static_cast<float*>(nullptr));
}

}  // namespace

struct UnfusedAttention::Impl {
  AttentionDesc d;
  bool training = true;
  // Forward: scores, O = P·V. Backward: dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q.
  BatchedProduct scores, out, dv, dp, dq, dk;
};

UnfusedAttention::UnfusedAttention(const AttentionDesc& desc, bool training)
    : impl_(std::make_unique<Impl>()) {
  if (fp32_storage(desc))  // tf32/fp32 steps: this backend alone takes fp32 storage
    check_attention_shape(desc);
  else
    check_attention_desc(desc);
  const AttentionDesc& d = impl_->d = desc;
  impl_->training = training;
  const float scale = d.softmax_scale();
  const Operand Q{d.q.s, d.q.b, d.q.h}, K{d.k.s, d.k.b, d.k.h, true}, V{d.v.s, d.v.b, d.v.h, true},
      O{d.o.s, d.o.b, d.o.h};
  const std::int64_t ss = std::int64_t(d.Sq) * d.Sk;
  const Operand P{d.Sk, d.NH * ss, ss};
  // The scale goes into the score product (as HF divides Q·Kᵀ before the mask), so the softmax
  // kernels run with scale 1 and the gradient products carry it instead.
  impl_->scores = make_product(d, false, true, d.Sq, d.Sk, d.HD, Q, K, P, scale);
  impl_->out = make_product(d, false, false, d.Sq, d.HD, d.Sk, P, V, O, 1.f);
  if (!training) return;  // no backward: its plans are not needed
  impl_->dv = make_product(d, true, false, d.Sk, d.HD, d.Sq, P, O, V, 1.f);
  impl_->dp = make_product(d, false, true, d.Sq, d.Sk, d.HD, O, V, P, 1.f);
  impl_->dq = make_product(d, false, false, d.Sq, d.HD, d.Sk, P, K, Q, scale);
  impl_->dk = make_product(d, true, false, d.Sk, d.HD, d.Sq, P, Q, K, scale);
}

UnfusedAttention::~UnfusedAttention() = default;

const AttentionDesc& UnfusedAttention::desc() const { return impl_->d; }

std::size_t UnfusedAttention::probs_elements() const {
  const AttentionDesc& d = impl_->d;
  return std::size_t(d.B) * d.NH * d.Sq * d.Sk;
}

void UnfusedAttention::forward(void* o, void* probs, void* work, const void* q, const void* k,
                               const void* v, const float* mask, const void* bias, Dropout dropout,
                               cudaStream_t stream) const {
  const AttentionDesc& d = impl_->d;
  if (dropout.p != d.dropout) XF_THROW(InvalidArgument, "attention: dropout.p differs from desc");
  if ((d.padding_mask && !mask) || (d.bias && !bias) || !o || !probs || !q || !k || !v ||
      (d.dropout > 0.f && !work))
    XF_THROW(InvalidArgument, "attention forward: missing tensor");
  const std::size_t es = storage_bytes(d);
  impl_->scores.run(stream, q, k, probs, es);
  // Without a backward, P itself is needed only when no dropout follows: with dropout the
  // softmax writes only dropout(P), one score-sized write less.
  void* keep = impl_->training || d.dropout == 0.f ? probs : nullptr;
  dispatch(d, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    softmax_forward<T>(d, keep, work, probs, mask, bias, dropout, stream);
  });
  impl_->out.run(stream, d.dropout > 0.f ? work : probs, v, o, es);
}

void UnfusedAttention::backward(void* dq, void* dk, void* dv, void* work, const void* dout,
                                const void* probs, const void* q, const void* k, const void* v,
                                Dropout dropout, cudaStream_t stream) const {
  backward(dq, dk, dv, nullptr, work, dout, probs, q, k, v, dropout, stream);
}

void UnfusedAttention::backward(void* dq, void* dk, void* dv, void* dbias, void* work,
                                const void* dout, const void* probs, const void* q, const void* k,
                                const void* v, Dropout dropout, cudaStream_t stream) const {
  const AttentionDesc& d = impl_->d;
  if (d.bias_grad && !dbias) XF_THROW(InvalidArgument, "attention backward: dbias needed");
  if (dropout.p != d.dropout) XF_THROW(InvalidArgument, "attention: dropout.p differs from desc");
  if (!impl_->training) XF_THROW(InvalidArgument, "attention backward: built without training");
  if (!dq || !dk || !dv || !work || !dout || !probs || !q || !k || !v)
    XF_THROW(InvalidArgument, "attention backward: missing tensor");
  const std::size_t es = storage_bytes(d);
  impl_->dv.run(stream, d.dropout > 0.f ? work : probs, dout, dv, es);  // before work is reused
  impl_->dp.run(stream, dout, v, work, es);
  dispatch(d, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    softmax_backward<T>(d, work, probs, dropout, stream);
    // work holds dS, the gradient of the softmax input (scale · Q·Kᵀ + bias): dbias is its
    // batch sum.
    if (d.bias_grad) sum_over_batch<T>(d, dbias, work, stream);
  });
  impl_->dq.run(stream, work, k, dq, es);
  impl_->dk.run(stream, work, q, dk, es);
}

}  // namespace xfbench::kernels
