// Attention softmax forward/backward (see softmax.hpp). A row is spread over LPR lanes (8 .. 128),
// VPT 8-element vectors per lane, held in registers between the max, sum and write passes.
#include <cmath>

#include "kernels/detail/pack.cuh"  // vec.cuh, and fp32 storage (tf32/fp32 steps)
#include "kernels/softmax.hpp"

namespace xfbench::kernels {
namespace {

using detail::kVec;
constexpr int kThreads = 256;

template <class T>
struct SoftmaxForwardArgs {
  T* probs;
  T* probs_dropped;
  const T* scores;
  const float* mask;
  const T* bias;
  float scale;
  bool causal;
  DropoutMask drop;
  int B, NH, Sq, Sk;
};

template <class T, int LPR, int VPT>
__global__ __launch_bounds__(kThreads) void softmax_forward_kernel(SoftmaxForwardArgs<T> a) {
  __shared__ float smem[kThreads / 32];
  constexpr int kRows = kThreads / LPR;
  const long long rows = static_cast<long long>(a.B) * a.NH * a.Sq;
  const long long row = static_cast<long long>(blockIdx.x) * kRows + threadIdx.x / LPR;
  const int t = threadIdx.x % LPR;
  const int V = a.Sk / kVec;
  const bool row_ok = row < rows;
  const int i = static_cast<int>(row % a.Sq);
  const int h = static_cast<int>(row / a.Sq % a.NH);
  const int b = static_cast<int>(row / a.Sq / a.NH);
  const size_t row_off = static_cast<size_t>(row) * a.Sk;
  const int last_visible = a.causal ? i + a.Sk - a.Sq : a.Sk;

  float x[VPT][kVec];
  float mx = -INFINITY;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int vi = t + k * LPR;
#pragma unroll
    for (int j = 0; j < kVec; ++j) x[k][j] = -INFINITY;
    if (!row_ok || vi >= V) continue;
    detail::load8(x[k], a.scores + row_off + vi * kVec);
#pragma unroll
    for (int j = 0; j < kVec; ++j) x[k][j] *= a.scale;
    if (a.mask) {
      const float4* m =
          reinterpret_cast<const float4*>(a.mask + static_cast<size_t>(b) * a.Sk + vi * kVec);
      const float4 m0 = m[0], m1 = m[1];
      x[k][0] += m0.x, x[k][1] += m0.y, x[k][2] += m0.z, x[k][3] += m0.w;
      x[k][4] += m1.x, x[k][5] += m1.y, x[k][6] += m1.z, x[k][7] += m1.w;
    }
    if (a.bias) {
      float bb[kVec];
      detail::load8(bb, a.bias + (static_cast<size_t>(h) * a.Sq + i) * a.Sk + vi * kVec);
#pragma unroll
      for (int j = 0; j < kVec; ++j) x[k][j] += bb[j];
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      if (vi * kVec + j > last_visible) x[k][j] = -INFINITY;
      mx = fmaxf(mx, x[k][j]);
    }
  }
  mx = detail::lanes_reduce<LPR, true>(mx, smem);
  if (mx == -INFINITY) mx = 0.f;  // fully hidden row: all exponentials are 0
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < VPT; ++k)
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      x[k][j] = __expf(x[k][j] - mx);
      sum += x[k][j];
    }
  sum = detail::lanes_reduce<LPR>(sum, smem);
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int vi = t + k * LPR;
    if (!row_ok || vi >= V) continue;
    const size_t off = row_off + vi * kVec;
#pragma unroll
    for (int j = 0; j < kVec; ++j) x[k][j] *= inv;
    if (a.probs) detail::store8(a.probs + off, x[k]);
    if (a.drop.active()) {
      const unsigned keep = a.drop.keep8(off / kVec);
#pragma unroll
      for (int j = 0; j < kVec; ++j) x[k][j] = (keep >> j & 1u) ? x[k][j] * a.drop.scale : 0.f;
      detail::store8(a.probs_dropped + off, x[k]);
    }
  }
}

template <class T>
struct SoftmaxBackwardArgs {
  T* dscores;
  const T* dprobs_dropped;
  const T* probs;
  float scale;
  DropoutMask drop;
  long long rows;
  int Sk;
};

template <class T, int LPR, int VPT>
__global__ __launch_bounds__(kThreads) void softmax_backward_kernel(SoftmaxBackwardArgs<T> a) {
  __shared__ float smem[kThreads / 32];
  constexpr int kRows = kThreads / LPR;
  const long long row = static_cast<long long>(blockIdx.x) * kRows + threadIdx.x / LPR;
  const int t = threadIdx.x % LPR;
  const int V = a.Sk / kVec;
  const bool row_ok = row < a.rows;
  const size_t row_off = static_cast<size_t>(row) * a.Sk;

  float p[VPT][kVec], dp[VPT][kVec];
  float dot = 0.f;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int vi = t + k * LPR;
#pragma unroll
    for (int j = 0; j < kVec; ++j) p[k][j] = dp[k][j] = 0.f;
    if (!row_ok || vi >= V) continue;
    const size_t off = row_off + vi * kVec;
    detail::load8(p[k], a.probs + off);
    detail::load8(dp[k], a.dprobs_dropped + off);
    if (a.drop.active()) {
      const unsigned keep = a.drop.keep8(off / kVec);
#pragma unroll
      for (int j = 0; j < kVec; ++j) dp[k][j] = (keep >> j & 1u) ? dp[k][j] * a.drop.scale : 0.f;
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) dot += p[k][j] * dp[k][j];
  }
  dot = detail::lanes_reduce<LPR>(dot, smem);
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int vi = t + k * LPR;
    if (!row_ok || vi >= V) continue;
#pragma unroll
    for (int j = 0; j < kVec; ++j) dp[k][j] = a.scale * p[k][j] * (dp[k][j] - dot);
    detail::store8(a.dscores + row_off + vi * kVec, dp[k]);
  }
}

// Picks lanes per row and vectors per lane from the row length.
template <template <class, int, int> class Kernel, class T, class Args>
void launch_rows(const Args& a, long long rows, int Sk, cudaStream_t stream) {
  const int V = Sk / kVec;
  auto go = [&](auto kernel, int lpr) {
    const int rows_per_block = kThreads / lpr;
    const long long blocks = (rows + rows_per_block - 1) / rows_per_block;
    kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
    XF_CUDA_CHECK_LAUNCH();
  };
  if (V <= 8)
    go(Kernel<T, 8, 1>::fn, 8);
  else if (V <= 16)
    go(Kernel<T, 16, 1>::fn, 16);
  else if (V <= 32)
    go(Kernel<T, 32, 1>::fn, 32);
  else if (V <= 64)
    go(Kernel<T, 32, 2>::fn, 32);
  else if (V <= 128)
    go(Kernel<T, 32, 4>::fn, 32);
  else if (V <= 256)
    go(Kernel<T, 64, 4>::fn, 64);
  else
    go(Kernel<T, 128, 4>::fn, 128);
}

template <class T, int LPR, int VPT>
struct Forward {
  static constexpr auto fn = softmax_forward_kernel<T, LPR, VPT>;
};
template <class T, int LPR, int VPT>
struct Backward {
  static constexpr auto fn = softmax_backward_kernel<T, LPR, VPT>;
};

void check_shape(int B, int NH, int Sq, int Sk, float p, const char* what) {
  detail::require_row_shape(1, Sk, kMaxSoftmaxWidth, what);
  if (B < 1 || NH < 1 || Sq < 1) XF_THROW(InvalidArgument, std::string(what) + ": empty shape");
  if (!(p >= 0.f && p < 1.f)) XF_THROW(InvalidArgument, "dropout probability must be in [0, 1)");
}

}  // namespace

template <class T>
void attention_softmax_forward(T* probs, T* probs_dropped, const T* scores, const float* mask,
                               const T* bias, float scale, bool causal, Dropout dropout, int B,
                               int NH, int Sq, int Sk, cudaStream_t stream) {
  check_shape(B, NH, Sq, Sk, dropout.p, "attention_softmax_forward");
  if (!scores || (!probs && !dropout.active()) || (dropout.active() && !probs_dropped))
    XF_THROW(InvalidArgument, "attention_softmax_forward: null tensor");
  for (const void* p : {static_cast<const void*>(probs), static_cast<const void*>(probs_dropped),
                        static_cast<const void*>(scores), static_cast<const void*>(mask),
                        static_cast<const void*>(bias)})
    detail::require_aligned(p, "attention_softmax_forward");
  SoftmaxForwardArgs<T> a{probs,  probs_dropped,        scores, mask, bias, scale,
                          causal, DropoutMask(dropout), B,      NH,   Sq,   Sk};
  launch_rows<Forward, T>(a, static_cast<long long>(B) * NH * Sq, Sk, stream);
}

template <class T>
void attention_softmax_backward(T* dscores, const T* dprobs_dropped, const T* probs, float scale,
                                Dropout dropout, int B, int NH, int Sq, int Sk,
                                cudaStream_t stream) {
  check_shape(B, NH, Sq, Sk, dropout.p, "attention_softmax_backward");
  if (!dscores || !dprobs_dropped || !probs)
    XF_THROW(InvalidArgument, "attention_softmax_backward: null tensor");
  for (const void* p : {static_cast<const void*>(dscores), static_cast<const void*>(dprobs_dropped),
                        static_cast<const void*>(probs)})
    detail::require_aligned(p, "attention_softmax_backward");
  const long long rows = static_cast<long long>(B) * NH * Sq;
  SoftmaxBackwardArgs<T> a{dscores, dprobs_dropped, probs, scale, DropoutMask(dropout), rows, Sk};
  launch_rows<Backward, T>(a, rows, Sk, stream);
}

#define XF_INSTANTIATE(T)                                                                       \
  template void attention_softmax_forward<T>(T*, T*, const T*, const float*, const T*, float,   \
                                             bool, Dropout, int, int, int, int, cudaStream_t);  \
  template void attention_softmax_backward<T>(T*, const T*, const T*, float, Dropout, int, int, \
                                              int, int, cudaStream_t);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
