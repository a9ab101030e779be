// Fused softmax cross-entropy (see cross_entropy.hpp). One block per row: each thread keeps its
// VPT packs of the row in registers (raw 16-byte loads), so the row is read once; the block
// reduces the max and the sum of exponentials, then every thread writes its gradients.
#include <algorithm>
#include <string>

#include "kernels/cross_entropy.hpp"
#include "kernels/detail/pack.cuh"

namespace xfbench::kernels {
namespace {

using detail::kPack;

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// exp(x − max) with x − max exact first: the max's own term is exactly 1 (folding the shift into
// one fma leaves a residual of ~1e-6 there, which swamps 1 − p at a confident target).
__device__ __forceinline__ float exp_shifted(float x, float max) {
  return exp2_approx((x - max) * kLog2e);
}

// Reduction over the block's warps (every thread calls it; all get the result).
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* smem /* [kWarps] */) {
  v = kMax ? detail::warp_max(v) : detail::warp_sum(v);
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) smem[warp] = v;
  __syncthreads();
  v = smem[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) v = kMax ? fmaxf(v, smem[w]) : v + smem[w];
  __syncthreads();
  return v;
}

// VPT > 0: the thread's packs stay in registers (one read of the row). VPT = 0 (fp32 rows too
// wide for registers): each of the three passes reads the row again, mostly from L2.
template <class T, int VPT>
__global__ __launch_bounds__(kThreads) void cross_entropy_kernel(float* losses, T* logits,
                                                                 const int* targets, int V, int ldv,
                                                                 float grad_scale,
                                                                 const float* loss_scale) {
  constexpr int P = kPack<T>;
  __shared__ float smem[kWarps];
  const int row = blockIdx.x, target = targets[row];
  T* x = logits + std::size_t(row) * ldv;
  const int packs = ldv / P, K = VPT > 0 ? VPT : (packs + kThreads - 1) / kThreads;
  if (target == kIgnoreIndex) {
    const float zero[P] = {};
    for (int i = threadIdx.x; i < packs; i += kThreads) detail::store_pack(x + i * P, zero);
    if (threadIdx.x == 0) losses[row] = 0.f;
    return;
  }
  int4 raw[VPT > 0 ? VPT : 1];
  if constexpr (VPT > 0) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int i = threadIdx.x + k * kThreads;
      if (i < packs) raw[k] = detail::load_raw(x + i * P);
    }
  }
  // Pack k of this thread as floats (false past the row's end).
  auto pack = [&](int k, float(&f)[P]) {
    const int i = threadIdx.x + k * kThreads;
    if (i >= packs) return false;
    if constexpr (VPT > 0)
      detail::unpack<T>(f, raw[k]);
    else
      detail::load_pack(f, x + i * P);
    return true;
  };
  const float x_target = detail::to_float(x[target]);  // read before any thread writes
  float mx = -INFINITY;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float f[P];
    if (!pack(k, f)) continue;
#pragma unroll
    for (int j = 0; j < P; ++j)
      if ((threadIdx.x + k * kThreads) * P + j < V) mx = fmaxf(mx, f[j]);
  }
  mx = block_reduce<true>(mx, smem);
  // The sum without the target's term as well: 1 − p_t = other / sum without cancellation (in
  // `sum` the small terms are lost against a target of probability ~1).
  float sum = 0.f, other = 0.f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float f[P];
    if (!pack(k, f)) continue;
    const int col0 = (threadIdx.x + k * kThreads) * P;
#pragma unroll
    for (int j = 0; j < P; ++j)
      if (col0 + j < V) {
        const float e = exp_shifted(f[j], mx);
        sum += e;
        if (col0 + j != target) other += e;
      }
  }
  sum = block_reduce<false>(sum, smem);
  other = block_reduce<false>(other, smem);
  if (threadIdx.x == 0) {  // −log p_t; log1p(other / e_t) where p_t is large
    const float e_t = exp_shifted(x_target, mx);
    losses[row] = e_t >= 0.5f ? log1pf(other / e_t) : logf(sum) + mx - x_target;
  }
  const float scale = grad_scale * (loss_scale ? *loss_scale : 1.f);
  const float p_scale = scale / sum;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float f[P];
    if (!pack(k, f)) continue;
    const int col0 = (threadIdx.x + k * kThreads) * P;
#pragma unroll
    for (int j = 0; j < P; ++j) {
      float d = col0 + j < V ? exp_shifted(f[j], mx) * p_scale : 0.f;
      if (col0 + j == target) d = -other * p_scale;
      f[j] = d;
    }
    detail::store_pack(x + col0, f);
  }
}

// Mean over valid rows: one block, each thread a fixed stride of rows, then the warps in order.
__global__ void mean_kernel(float* loss, const float* losses, const int* targets, int N,
                            float scale, bool accumulate) {
  __shared__ float smem[32], smem_count[32];
  float s = 0.f, count = 0.f;
  for (int i = threadIdx.x; i < N; i += blockDim.x)
    if (targets[i] != kIgnoreIndex) s += losses[i], count += 1.f;
  s = detail::warp_sum(s);
  count = detail::warp_sum(count);
  if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = s, smem_count[threadIdx.x / 32] = count;
  __syncthreads();
  if (threadIdx.x != 0) return;
  float total = 0.f, n = 0.f;
  for (int w = 0; w < int(blockDim.x / 32); ++w) total += smem[w], n += smem_count[w];
  const float mean = n > 0.f ? scale * total / n : 0.f;
  *loss = accumulate ? *loss + mean : mean;
}

template <class T, int VPT>
void launch(float* losses, T* logits, const int* targets, int N, int V, int ldv, float grad_scale,
            const float* loss_scale, cudaStream_t stream) {
  cross_entropy_kernel<T, VPT>
      <<<N, kThreads, 0, stream>>>(losses, logits, targets, V, ldv, grad_scale, loss_scale);
  XF_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <class T>
void cross_entropy_forward_backward(float* losses, T* logits, const int* targets, int N, int V,
                                    int ldv, float grad_scale, int num_valid,
                                    const float* loss_scale, cudaStream_t stream) {
  const char* what = "cross_entropy_forward_backward";
  if (N < 0 || V <= 0 || ldv < V || ldv % kPack<T> != 0 || ldv > kMaxCrossEntropyWidth)
    XF_THROW(InvalidArgument,
             std::string(what) + ": V=" + std::to_string(V) + " ldv=" + std::to_string(ldv) +
                 " (need 0 < V <= ldv <= " + std::to_string(kMaxCrossEntropyWidth) +
                 ", ldv a multiple of " + std::to_string(kPack<T>) + ")");
  if (N > 0 && (!losses || !logits || !targets))
    XF_THROW(InvalidArgument, std::string(what) + ": losses, logits and targets must be set");
  detail::require_aligned(logits, what);
  if (N == 0) return;
  const float scale = num_valid > 0 ? grad_scale / float(num_valid) : 0.f;
  const int packs_per_thread = (ldv / kPack<T> + kThreads - 1) / kThreads;
  if (packs_per_thread <= 1)
    launch<T, 1>(losses, logits, targets, N, V, ldv, scale, loss_scale, stream);
  else if (packs_per_thread <= 2)
    launch<T, 2>(losses, logits, targets, N, V, ldv, scale, loss_scale, stream);
  else if (packs_per_thread <= 4)
    launch<T, 4>(losses, logits, targets, N, V, ldv, scale, loss_scale, stream);
  else if (packs_per_thread <= 8)
    launch<T, 8>(losses, logits, targets, N, V, ldv, scale, loss_scale, stream);
  else if (packs_per_thread <= 13)
    launch<T, 13>(losses, logits, targets, N, V, ldv, scale, loss_scale, stream);
  else if (packs_per_thread <= 16)
    launch<T, 16>(losses, logits, targets, N, V, ldv, scale, loss_scale, stream);
  else
    launch<T, 0>(losses, logits, targets, N, V, ldv, scale, loss_scale, stream);
}

void cross_entropy_mean(float* loss, const float* losses, const int* targets, int N, float scale,
                        bool accumulate, cudaStream_t stream) {
  if (!loss || N < 0 || (N > 0 && (!losses || !targets)))
    XF_THROW(InvalidArgument, "cross_entropy_mean: loss, losses and targets must be set, N >= 0");
  mean_kernel<<<1, 1024, 0, stream>>>(loss, losses, targets, N, scale, accumulate);
  XF_CUDA_CHECK_LAUNCH();
}

#define XF_INSTANTIATE(T)                                                                       \
  template void cross_entropy_forward_backward<T>(float*, T*, const int*, int, int, int, float, \
                                                  int, const float*, cudaStream_t);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
