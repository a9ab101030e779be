// GELU forward/backward (see gelu.hpp) on the element-wise skeletons of detail/elementwise.cuh.
#include "kernels/detail/cast_transpose.cuh"
#include "kernels/detail/elementwise.cuh"
#include "kernels/detail/gelu.cuh"
#include "kernels/detail/pack.cuh"  // fp32 storage (tf32/fp32 training steps)
#include "kernels/gelu.hpp"

#include <type_traits>

namespace xfbench::kernels {
namespace {

using detail::kVec;

using detail::gelu;
using detail::gelu_grad;

template <class T>
struct BiasGeluForward {
  T* out;
  const T* inp;
  const T* bias;
  Gelu kind;
  __device__ void value(size_t off, int col, float (&v)[kVec]) const {
    detail::load8(v, inp + off);
    if (bias) {
      float b[kVec];
      detail::load8(b, bias + col);
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] += b[j];
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = gelu(v[j], kind);
  }
  __device__ void operator()(size_t off, int col, float (&v)[kVec]) const {
    value(off, col, v);
    detail::store8(out + off, v);
  }
};

template <class T>
struct BiasGeluBackward {
  T* dinp;
  const T* dout;
  const T* inp;
  const T* bias;
  Gelu kind;
  __device__ void value(size_t off, int col, float (&d)[kVec]) const {
    float x[kVec];
    detail::load8(x, inp + off);
    detail::load8(d, dout + off);
    if (bias) {
      float b[kVec];
      detail::load8(b, bias + col);
#pragma unroll
      for (int j = 0; j < kVec; ++j) x[j] += b[j];
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) d[j] *= gelu_grad(x[j], kind);
  }
  __device__ void operator()(size_t off, int col, float (&d)[kVec]) const {
    value(off, col, d);
    detail::store8(dinp + off, d);
  }
};

void check(int N, int C, int max_c, std::initializer_list<const void*> ptrs, const char* what) {
  detail::require_row_shape(N, C, max_c, what);
  for (const void* p : ptrs) detail::require_aligned(p, what);
}

}  // namespace

template <class T>
void bias_gelu_forward(T* out, const T* inp, const T* bias, int N, int C, Gelu kind,
                       cudaStream_t stream, const Fp8Output* fp8) {
  check(N, C, 1 << 30, {out, inp, bias}, "bias_gelu_forward");
  const BiasGeluForward<T> op{out, inp, bias, kind};
  if (fp8 && fp8->q) {
    if (std::is_same_v<T, float>)
      XF_THROW(InvalidArgument, "bias_gelu_forward: an FP8 output from fp32 storage");
    if (!fp8->qt) return detail::for_each_vector_fp8(op, N, C, *fp8, stream);
    return detail::produce_cast_transpose<T>(op, N, C, *fp8, nullptr, nullptr, stream);
  }
  if (!out) XF_THROW(InvalidArgument, "bias_gelu_forward: no output");
  detail::for_each_vector(op, N, C, stream);
}

template <class T>
void bias_gelu_backward(T* dinp, T* dbias, float* scratch, const T* dout, const T* inp,
                        const T* bias, int N, int C, Gelu kind, cudaStream_t stream,
                        const Fp8Output* fp8) {
  BiasGeluBackward<T> op{dinp, dout, inp, bias, kind};
  if (fp8 && fp8->q) {  // dinp in FP8 (and transposed), dbias from the same pass
    if (std::is_same_v<T, float>)
      XF_THROW(InvalidArgument, "bias_gelu_backward: an FP8 output from fp32 storage");
    check(N, C, 1 << 30, {dout, inp, bias}, "bias_gelu_backward");
    return detail::produce_cast_transpose(op, N, C, *fp8, dbias, scratch, stream);
  }
  if (!dinp) XF_THROW(InvalidArgument, "bias_gelu_backward: no output");
  if (dbias) {
    check(N, C, detail::kMaxColsumWidth, {dinp, dout, inp, bias}, "bias_gelu_backward");
    detail::for_each_vector_colsum(op, dbias, scratch, N, C, stream);
  } else {
    check(N, C, 1 << 30, {dinp, dout, inp, bias}, "bias_gelu_backward");
    detail::for_each_vector(op, N, C, stream);
  }
}

#define XF_INSTANTIATE(T)                                                                     \
  template void bias_gelu_forward<T>(T*, const T*, const T*, int, int, Gelu, cudaStream_t,    \
                                     const Fp8Output*);                                       \
  template void bias_gelu_backward<T>(T*, T*, float*, const T*, const T*, const T*, int, int, \
                                      Gelu, cudaStream_t, const Fp8Output*);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
