// T5's and Llama's FFN activations with their dropout (see activation.hpp) on the element-wise
// skeleton of detail/elementwise.cuh.
#include "kernels/activation.hpp"

#include <type_traits>

#include "kernels/detail/cast_transpose.cuh"
#include "kernels/detail/elementwise.cuh"
#include "kernels/detail/gate.cuh"
#include "kernels/detail/pack.cuh"  // fp32 storage (tf32/fp32 training steps)

namespace xfbench::kernels {
namespace {

using detail::gate_grad;
using detail::gate_value;
using detail::kVec;

// Zeroes dropped elements of the vector at element offset `off` and scales the kept ones.
__device__ __forceinline__ void apply_dropout(float (&v)[kVec], const DropoutMask& drop,
                                              size_t off) {
  if (!drop.active()) return;
  const unsigned keep = drop.keep8(off / kVec);
#pragma unroll
  for (int j = 0; j < kVec; ++j) v[j] = (keep >> j & 1u) ? v[j] * drop.scale : 0.f;
}

template <class T>
struct ReluForward {
  T* act;
  const T* pre;
  DropoutMask drop;
  __device__ void operator()(size_t off, int, float (&v)[kVec]) const {
    detail::load8(v, pre + off);
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = fmaxf(v[j], 0.f);
    apply_dropout(v, drop, off);
    detail::store8(act + off, v);
  }
};

template <class T>
struct ReluBackward {
  T* dpre;
  const T* dact;
  const T* act;
  float scale;  // 1 / (1 - p): the kept elements' factor
  __device__ void operator()(size_t off, int, float (&d)[kVec]) const {
    float a[kVec];
    detail::load8(a, act + off);
    detail::load8(d, dact + off);
#pragma unroll
    for (int j = 0; j < kVec; ++j) d[j] = a[j] > 0.f ? d[j] * scale : 0.f;
    detail::store8(dpre + off, d);
  }
};

// Row r, column c of act [N, C] sits at off = r·C + c; its gate in pre [N, 2C] at 2·off - c.
template <class T>
struct GatedForward {
  T* act;
  const T* pre;
  int C;
  GateAct kind;
  DropoutMask drop;
  __device__ void value(size_t off, int col, float (&v)[kVec]) const {
    const size_t gate = 2 * off - col;
    float lin[kVec];
    detail::load8(v, pre + gate);
    detail::load8(lin, pre + gate + C);
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = gate_value(v[j], kind) * lin[j];
    apply_dropout(v, drop, off);
  }
  __device__ void operator()(size_t off, int col, float (&v)[kVec]) const {
    value(off, col, v);
    detail::store8(act + off, v);
  }
};

template <class T>
struct GatedBackward {
  T* dpre;
  const T* dact;
  const T* pre;
  int C;
  GateAct kind;
  DropoutMask drop;
  // dgate and dlinear of the vector at `off` of dact; `gate`: their offset in dpre (and + C).
  __device__ size_t values(size_t off, int col, float (&dgate)[kVec], float (&g)[kVec]) const {
    const size_t gate = 2 * off - col;
    float x[kVec], lin[kVec];
    detail::load8(g, dact + off);
    apply_dropout(g, drop, off);
    detail::load8(x, pre + gate);
    detail::load8(lin, pre + gate + C);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      dgate[j] = g[j] * lin[j] * gate_grad(x[j], kind);
      g[j] *= gate_value(x[j], kind);  // dlinear
    }
    return gate;
  }
  static constexpr int kParts = 2;  // the tile pass (cast_transpose.cuh): dgate | dlinear
  __device__ void parts(size_t off, int col, float (&v)[2][kVec]) const {
    values(off, col, v[0], v[1]);
  }
  __device__ void operator()(size_t off, int col, float (&g)[kVec]) const {
    float dgate[kVec];
    const size_t gate = values(off, col, dgate, g);
    detail::store8(dpre + gate, dgate);
    detail::store8(dpre + gate + C, g);
  }
  __device__ void write_fp8(size_t off, int col, const detail::Fp8Store& store, float s, float& m,
                            unsigned long long& over) const {
    float dgate[kVec], g[kVec];
    const size_t gate = values(off, col, dgate, g);
    store.store8(gate, dgate, s, m, over);
    store.store8(gate + C, g, s, m, over);
  }
};

void check(std::size_t n, std::initializer_list<const void*> ptrs, float p, const char* what) {
  if (n % kVec != 0)
    XF_THROW(InvalidArgument,
             std::string(what) + ": " + std::to_string(n) + " elements, not a multiple of 8");
  if (!(p >= 0.f && p < 1.f)) XF_THROW(InvalidArgument, "dropout probability must be in [0, 1)");
  for (const void* q : ptrs) {
    if (!q) XF_THROW(InvalidArgument, std::string(what) + ": null tensor");
    detail::require_aligned(q, what);
  }
}

}  // namespace

template <class T>
void relu_dropout_forward(T* act, const T* pre, std::size_t n, Dropout dropout,
                          cudaStream_t stream) {
  check(n, {act, pre}, dropout.p, "relu_dropout_forward");
  detail::for_each_vector(ReluForward<T>{act, pre, DropoutMask(dropout)}, n / kVec, kVec, stream);
}

template <class T>
void relu_dropout_backward(T* dpre, const T* dact, const T* act, std::size_t n, Dropout dropout,
                           cudaStream_t stream) {
  check(n, {dpre, dact, act}, dropout.p, "relu_dropout_backward");
  detail::for_each_vector(ReluBackward<T>{dpre, dact, act, DropoutMask(dropout).scale}, n / kVec,
                          kVec, stream);
}

GateAct gate_act(Gelu kind) { return kind == Gelu::erf ? GateAct::gelu_erf : GateAct::gelu_tanh; }

template <class T>
void gated_dropout_forward(T* act, const T* pre, int N, int C, GateAct gate, Dropout dropout,
                           cudaStream_t stream, const Fp8Output* fp8) {
  detail::require_row_shape(N, C, 1 << 29, "gated_dropout_forward");
  const bool to_fp8 = fp8 && fp8->q;
  check(std::size_t(N) * C, {to_fp8 ? pre : act, pre}, dropout.p, "gated_dropout_forward");
  const GatedForward<T> op{act, pre, C, gate, DropoutMask(dropout)};
  if (!to_fp8) return detail::for_each_vector(op, N, C, stream);
  if (std::is_same_v<T, float>)
    XF_THROW(InvalidArgument, "gated_dropout_forward: an FP8 output from fp32 storage");
  if (!fp8->qt) return detail::for_each_vector_fp8(op, N, C, *fp8, stream);
  detail::produce_cast_transpose<T>(op, N, C, *fp8, nullptr, nullptr, stream);
}

template <class T>
void gated_dropout_backward(T* dpre, const T* dact, const T* pre, int N, int C, GateAct gate,
                            Dropout dropout, cudaStream_t stream, const Fp8Output* fp8) {
  detail::require_row_shape(N, C, 1 << 29, "gated_dropout_backward");
  const bool to_fp8 = fp8 && fp8->q;
  check(std::size_t(N) * C, {to_fp8 ? dact : dpre, dact, pre}, dropout.p, "gated_dropout_backward");
  const GatedBackward<T> op{dpre, dact, pre, C, gate, DropoutMask(dropout)};
  if (!to_fp8) return detail::for_each_vector(op, N, C, stream);
  if (std::is_same_v<T, float>)
    XF_THROW(InvalidArgument, "gated_dropout_backward: an FP8 output from fp32 storage");
  if (!fp8->qt) return detail::for_each_vector_write_fp8(op, N, C, *fp8, stream);
  detail::produce_cast_transpose<T>(op, N, C, *fp8, nullptr, nullptr, stream);
}

#define XF_INSTANTIATE(T)                                                                        \
  template void relu_dropout_forward<T>(T*, const T*, std::size_t, Dropout, cudaStream_t);       \
  template void relu_dropout_backward<T>(T*, const T*, const T*, std::size_t, Dropout,           \
                                         cudaStream_t);                                          \
  template void gated_dropout_forward<T>(T*, const T*, int, int, GateAct, Dropout, cudaStream_t, \
                                         const Fp8Output*);                                      \
  template void gated_dropout_backward<T>(T*, const T*, const T*, int, int, GateAct, Dropout,    \
                                          cudaStream_t, const Fp8Output*);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
