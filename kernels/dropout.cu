// Dropout, bias and residual element-wise kernels (see dropout.hpp).
#include "kernels/detail/cast_transpose.cuh"
#include "kernels/detail/elementwise.cuh"
#include "kernels/detail/pack.cuh"  // fp32 storage (tf32/fp32 training steps)
#include "kernels/dropout.hpp"

#include <type_traits>

namespace xfbench::kernels {
namespace {

using detail::kVec;

__device__ __forceinline__ void apply_mask(float (&v)[kVec], const DropoutMask& m, size_t off) {
  if (!m.active()) return;
  const unsigned keep = m.keep8(off / kVec);
#pragma unroll
  for (int j = 0; j < kVec; ++j) v[j] = (keep >> j & 1u) ? v[j] * m.scale : 0.f;
}

// out = residual + dropout(x + bias)
template <class T>
struct BiasDropoutResidual {
  T* out;
  const T* x;
  const T* bias;
  const T* residual;
  DropoutMask mask;
  __device__ void operator()(size_t off, int col, float (&v)[kVec]) const {
    detail::load8(v, x + off);
    if (bias) {
      float b[kVec];
      detail::load8(b, bias + col);
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] += b[j];
    }
    apply_mask(v, mask, off);
    if (residual) {
      float r[kVec];
      detail::load8(r, residual + off);
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] += r[j];
    }
    detail::store8(out + off, v);
  }
};

// dx = dropout_backward(dout); dx null: only the column sums are wanted.
template <class T>
struct DropoutBackward {
  T* dx;
  const T* dout;
  DropoutMask mask;
  __device__ void value(size_t off, int, float (&d)[kVec]) const {
    detail::load8(d, dout + off);
    apply_mask(d, mask, off);
  }
  __device__ void operator()(size_t off, int col, float (&d)[kVec]) const {
    value(off, col, d);
    if (dx) detail::store8(dx + off, d);
  }
};

void check_dropout(const Dropout& d) {
  if (!(d.p >= 0.f && d.p < 1.f))
    XF_THROW(InvalidArgument, "dropout probability must be in [0, 1)");
}

void check(long long N, int C, int max_c, std::initializer_list<const void*> ptrs,
           const char* what) {
  detail::require_row_shape(N, C, max_c, what);
  for (const void* p : ptrs) detail::require_aligned(p, what);
}

}  // namespace

template <class T>
void dropout_forward(T* out, const T* inp, std::size_t n, Dropout dropout, cudaStream_t stream) {
  check_dropout(dropout);
  if (n % kVec != 0) XF_THROW(InvalidArgument, "dropout_forward: n must be a multiple of 8");
  check(static_cast<long long>(n / kVec), kVec, kVec, {out, inp}, "dropout_forward");
  detail::for_each_vector(BiasDropoutResidual<T>{out, inp, nullptr, nullptr, DropoutMask(dropout)},
                          n / kVec, kVec, stream);
}

template <class T>
void dropout_backward(T* dinp, const T* dout, std::size_t n, Dropout dropout, cudaStream_t stream) {
  check_dropout(dropout);
  if (n % kVec != 0) XF_THROW(InvalidArgument, "dropout_backward: n must be a multiple of 8");
  check(static_cast<long long>(n / kVec), kVec, kVec, {dinp, dout}, "dropout_backward");
  detail::for_each_vector(DropoutBackward<T>{dinp, dout, DropoutMask(dropout)}, n / kVec, kVec,
                          stream);
}

template <class T>
void bias_dropout_residual_forward(T* out, const T* x, const T* bias, const T* residual,
                                   Dropout dropout, int N, int C, cudaStream_t stream) {
  check_dropout(dropout);
  check(N, C, 1 << 30, {out, x, bias, residual}, "bias_dropout_residual_forward");
  detail::for_each_vector(BiasDropoutResidual<T>{out, x, bias, residual, DropoutMask(dropout)}, N,
                          C, stream);
}

template <class T>
void dropout_bias_backward(T* dx, T* dbias, float* scratch, const T* dout, Dropout dropout, int N,
                           int C, cudaStream_t stream, const Fp8Output* fp8) {
  check_dropout(dropout);
  DropoutBackward<T> op{dx, dout, DropoutMask(dropout)};
  if (fp8 && fp8->q) {  // dx in FP8 (and transposed), dbias from the same pass
    if (std::is_same_v<T, float>)
      XF_THROW(InvalidArgument, "dropout_bias_backward: an FP8 output from fp32 storage");
    check(N, C, 1 << 30, {dout}, "dropout_bias_backward");
    return detail::produce_cast_transpose(op, N, C, *fp8, dbias, scratch, stream);
  }
  if (dbias) {
    check(N, C, detail::kMaxColsumWidth, {dx, dout}, "dropout_bias_backward");
    detail::for_each_vector_colsum(op, dbias, scratch, N, C, stream);
  } else {
    check(N, C, 1 << 30, {dx, dout}, "dropout_bias_backward");
    if (dx) detail::for_each_vector(op, N, C, stream);
  }
}

template <class T>
void bias_backward(T* dbias, float* scratch, const T* dout, int N, int C, cudaStream_t stream) {
  if (!dbias) XF_THROW(InvalidArgument, "bias_backward: null dbias");
  dropout_bias_backward<T>(nullptr, dbias, scratch, dout, Dropout{}, N, C, stream);
}

#define XF_INSTANTIATE(T)                                                                        \
  template void dropout_forward<T>(T*, const T*, std::size_t, Dropout, cudaStream_t);            \
  template void dropout_backward<T>(T*, const T*, std::size_t, Dropout, cudaStream_t);           \
  template void bias_dropout_residual_forward<T>(T*, const T*, const T*, const T*, Dropout, int, \
                                                 int, cudaStream_t);                             \
  template void dropout_bias_backward<T>(T*, T*, float*, const T*, Dropout, int, int,            \
                                         cudaStream_t, const Fp8Output*);                        \
  template void bias_backward<T>(T*, float*, const T*, int, int, cudaStream_t);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
