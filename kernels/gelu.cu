// GELU forward/backward (see gelu.hpp) on the element-wise skeletons of detail/elementwise.cuh.
#include "kernels/detail/elementwise.cuh"
#include "kernels/detail/gelu.cuh"
#include "kernels/detail/pack.cuh"  // fp32 storage (tf32/fp32 training steps)
#include "kernels/gelu.hpp"

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
  __device__ void operator()(size_t off, int col, float (&v)[kVec]) const {
    detail::load8(v, inp + off);
    if (bias) {
      float b[kVec];
      detail::load8(b, bias + col);
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] += b[j];
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = gelu(v[j], kind);
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
  __device__ void operator()(size_t off, int col, float (&d)[kVec]) const {
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
                       cudaStream_t stream) {
  check(N, C, 1 << 30, {out, inp, bias}, "bias_gelu_forward");
  detail::for_each_vector(BiasGeluForward<T>{out, inp, bias, kind}, N, C, stream);
}

template <class T>
void bias_gelu_backward(T* dinp, T* dbias, float* scratch, const T* dout, const T* inp,
                        const T* bias, int N, int C, Gelu kind, cudaStream_t stream) {
  BiasGeluBackward<T> op{dinp, dout, inp, bias, kind};
  if (dbias) {
    check(N, C, detail::kMaxColsumWidth, {dinp, dout, inp, bias}, "bias_gelu_backward");
    detail::for_each_vector_colsum(op, dbias, scratch, N, C, stream);
  } else {
    check(N, C, 1 << 30, {dinp, dout, inp, bias}, "bias_gelu_backward");
    detail::for_each_vector(op, N, C, stream);
  }
}

#define XF_INSTANTIATE(T)                                                                     \
  template void bias_gelu_forward<T>(T*, const T*, const T*, int, int, Gelu, cudaStream_t);   \
  template void bias_gelu_backward<T>(T*, T*, float*, const T*, const T*, const T*, int, int, \
                                      Gelu, cudaStream_t);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
