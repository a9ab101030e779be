// LayerNorm / RMSNorm forward and backward (see layernorm.hpp). One row group of WPR warps per row,
// the row in registers (VPT 8-element vectors per thread), two-pass mean/variance in fp32.
#include "kernels/detail/fp8_store.cuh"
#include "kernels/detail/pack.cuh"  // vec.cuh, and fp32 storage (tf32/fp32 steps)
#include "kernels/detail/reduce.cuh"
#include "kernels/layernorm.hpp"

#include <tuple>
#include <type_traits>

namespace xfbench::kernels {
namespace {

using detail::kRowThreads;
using detail::kRowWarps;
using detail::kVec;

template <class T>
struct NormForwardArgs {
  T* out;
  T* z;
  float* mean;
  float* rstd;
  const T* x;
  const T* xbias;
  const T* residual;
  const T* weight;
  const T* bias;
  DropoutMask drop;
  int N, C;
  float eps;
  detail::Fp8Store fp8;  // q set: out is written there in FP8 (or, measuring, nothing is written)
};

template <class T, int WPR, int VPT, bool RMS>
__global__ __launch_bounds__(kRowThreads) void norm_forward_kernel(NormForwardArgs<T> a) {
  __shared__ float smem[kRowWarps];
  constexpr int kGroups = kRowWarps / WPR;
  const int warp = threadIdx.x / 32;
  const int row = blockIdx.x * kGroups + warp / WPR;
  const int t = (warp % WPR) * 32 + threadIdx.x % 32;
  const int V = a.C / kVec;
  const bool row_ok = row < a.N;
  const size_t row_off = static_cast<size_t>(row) * a.C;

  // Every load of the row is issued before the first store (the compiler cannot know that z
  // aliases neither input): 2·VPT 16-byte loads in flight per thread instead of two.
  detail::Raw8<T> xr[VPT], rr[VPT];
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int vi = t + k * WPR * 32;
    if (!row_ok || vi >= V) continue;
    const size_t off = row_off + static_cast<size_t>(vi) * kVec;
    xr[k] = detail::load_raw8(a.x + off);
    if (a.residual) rr[k] = detail::load_raw8(a.residual + off);
  }
  float v[VPT][kVec];
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int vi = t + k * WPR * 32;
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[k][j] = 0.f;
    if (!row_ok || vi >= V) continue;
    const size_t off = row_off + static_cast<size_t>(vi) * kVec;
    detail::unpack8<T>(v[k], xr[k]);
    if (a.xbias) {
      float b[kVec];
      detail::load8(b, a.xbias + vi * kVec);
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[k][j] += b[j];
    }
    if (a.drop.active()) {
      const unsigned keep = a.drop.keep8(off / kVec);
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[k][j] = (keep >> j & 1u) ? v[k][j] * a.drop.scale : 0.f;
    }
    if (a.residual) {
      float r[kVec];
      detail::unpack8<T>(r, rr[k]);
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[k][j] += r[j];
    }
    if (a.z && !a.fp8.measure) detail::store8(a.z + off, v[k]);
#pragma unroll
    for (int j = 0; j < kVec; ++j) sum += v[k][j];
  }

  float mean = 0.f;
  if constexpr (!RMS) mean = detail::group_reduce<WPR>(sum, smem) / a.C;
  float sq = 0.f;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    if (!row_ok || t + k * WPR * 32 >= V) continue;
#pragma unroll
    for (int j = 0; j < kVec; ++j) sq += (v[k][j] - mean) * (v[k][j] - mean);
  }
  const float rstd = rsqrtf(detail::group_reduce<WPR>(sq, smem) / a.C + a.eps);

  const float fp8_scale = a.fp8.q ? a.fp8.scale_value() : 0.f;
  float fp8_amax = 0.f;
  unsigned long long fp8_over = 0;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int vi = t + k * WPR * 32;
    if (!row_ok || vi >= V) continue;
    float w[kVec], b[kVec] = {};
    detail::load8(w, a.weight + vi * kVec);
    if (!RMS && a.bias) detail::load8(b, a.bias + vi * kVec);
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[k][j] = (v[k][j] - mean) * rstd * w[j] + b[j];
    const size_t off = row_off + static_cast<size_t>(vi) * kVec;
    if (a.fp8.q)
      a.fp8.store8(off, v[k], fp8_scale, fp8_amax, fp8_over);
    else
      detail::store8(a.out + off, v[k]);
  }
  if (a.fp8.q) a.fp8.finish(fp8_amax, fp8_over, fp8_scale);
  if (a.fp8.measure) return;
  if (row_ok && t == 0) {
    if (a.mean) a.mean[row] = mean;
    if (a.rstd) a.rstd[row] = rstd;
  }
}

template <class T>
struct NormBackwardArgs {
  T* dz;
  T* dx;
  float* partials;  // [3][G][C]: dweight, dbias, dxbias
  const T* dout;
  const T* dout2;
  const T* dresidual;
  const T* z;
  const T* weight;
  const float* mean;
  const float* rstd;
  DropoutMask drop;
  int N, C;
  bool want_dxbias;
};

// Each block walks rows with a grid stride, keeps its columns' parameter-gradient sums in
// registers, and leaves one partial per block.
// Dxb: the column sums of dx are wanted (a.want_dxbias, LayerNorm only).
template <class T, int WPR, int VPT, bool RMS, bool Dxb>
__global__ __launch_bounds__(kRowThreads, 2) void norm_backward_kernel(NormBackwardArgs<T> a) {
  static_assert(!(RMS && Dxb), "no caller wants dxbias from an RMSNorm");
  __shared__ float2 smem[kRowWarps];
  extern __shared__ float columns[];  // [3][C] when several row groups share the block
  constexpr int kGroups = kRowWarps / WPR;
  const int warp = threadIdx.x / 32;
  const int group = warp / WPR;
  const int t = (warp % WPR) * 32 + threadIdx.x % 32;
  const int V = a.C / kVec;
  const float inv_c = 1.f / a.C;

  // Only the column sums wanted are kept in registers: RMSNorm has no bias and no caller wants
  // dxbias from it, LayerNorm's dxbias is the caller's choice (Dxb). 8·VPT registers each, left to
  // the rows (RMSNorm at VPT 3 and 4, hidden 6144-8192, spilled 350-900 bytes with all three).
  constexpr int kBiasVecs = RMS ? 1 : VPT, kDxbVecs = Dxb ? VPT : 1;
  float dw[VPT][kVec], db[kBiasVecs][kVec], dxb[kDxbVecs][kVec];
#pragma unroll
  for (int k = 0; k < VPT; ++k)
#pragma unroll
    for (int j = 0; j < kVec; ++j) dw[k][j] = 0.f;
#pragma unroll
  for (int k = 0; k < kBiasVecs; ++k)
#pragma unroll
    for (int j = 0; j < kVec; ++j) db[k][j] = 0.f;
#pragma unroll
  for (int k = 0; k < kDxbVecs; ++k)
#pragma unroll
    for (int j = 0; j < kVec; ++j) dxb[k][j] = 0.f;

  // dout and z of the group's next row are loaded (packed) while the current row is reduced, so
  // each row's memory latency overlaps the previous row's work.
  const int row_step = gridDim.x * kGroups;
  detail::Raw8<T> next_dy[VPT], next_z[VPT];
  auto prefetch = [&](int row) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int vi = t + k * WPR * 32;
      if (row < a.N && vi < V) {
        const size_t off = static_cast<size_t>(row) * a.C + static_cast<size_t>(vi) * kVec;
        next_dy[k] = detail::load_raw8(a.dout + off);
        next_z[k] = detail::load_raw8(a.z + off);
      }
    }
  };
  prefetch(blockIdx.x * kGroups + group);

  // `base` is uniform over the block so every group reaches the same synchronisations.
  for (int base = blockIdx.x * kGroups; base < a.N; base += row_step) {
    const int row = base + group;
    const bool row_ok = row < a.N;
    const size_t row_off = static_cast<size_t>(row) * a.C;
    const float mean = (!RMS && row_ok) ? a.mean[row] : 0.f;
    const float rstd = row_ok ? a.rstd[row] : 0.f;
    detail::Raw8<T> cur_dy[VPT], cur_z[VPT], cur_r[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k) cur_dy[k] = next_dy[k], cur_z[k] = next_z[k];
    prefetch(row + row_step);
    // The residual's gradient is added after the row's sums: loaded now, its latency hidden
    // behind them (where the registers allow it: 16-bit rows of two vectors a thread, no dxbias).
    constexpr bool kEarlyResidual = !Dxb && VPT <= 2 && sizeof(T) == 2;
    if constexpr (kEarlyResidual)
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int vi = t + k * WPR * 32;
        if (a.dresidual && row_ok && vi < V)
          cur_r[k] = detail::load_raw8(a.dresidual + row_off + static_cast<size_t>(vi) * kVec);
      }
    float g[VPT][kVec], xh[VPT][kVec];
    float2 s = {0.f, 0.f};
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int vi = t + k * WPR * 32;
#pragma unroll
      for (int j = 0; j < kVec; ++j) g[k][j] = xh[k][j] = 0.f;
      if (!row_ok || vi >= V) continue;
      const size_t off = row_off + static_cast<size_t>(vi) * kVec;
      float dy[kVec], w[kVec];
      detail::unpack8<T>(dy, cur_dy[k]);
      detail::unpack8<T>(xh[k], cur_z[k]);
      detail::load8(w, a.weight + vi * kVec);  // L1-resident
      if (a.dout2) {
        float d2[kVec];
        detail::load8(d2, a.dout2 + off);
#pragma unroll
        for (int j = 0; j < kVec; ++j) dy[j] += d2[j];
      }
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        xh[k][j] = (xh[k][j] - mean) * rstd;
        g[k][j] = dy[j] * w[j];
        dw[k][j] += dy[j] * xh[k][j];
        if constexpr (!RMS) db[k][j] += dy[j];
        s.x += g[k][j];
        s.y += g[k][j] * xh[k][j];
      }
    }
    s = detail::group_sum2<WPR>(s, smem);
    const float mg = RMS ? 0.f : s.x * inv_c, mgx = s.y * inv_c;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int vi = t + k * WPR * 32;
      if (!row_ok || vi >= V) continue;
      const size_t off = row_off + static_cast<size_t>(vi) * kVec;
      float d[kVec];
#pragma unroll
      for (int j = 0; j < kVec; ++j) d[j] = rstd * (g[k][j] - mg - xh[k][j] * mgx);
      if (a.dresidual) {
        float r[kVec];
        if constexpr (kEarlyResidual)
          detail::unpack8<T>(r, cur_r[k]);
        else
          detail::load8(r, a.dresidual + off);
#pragma unroll
        for (int j = 0; j < kVec; ++j) d[j] += r[j];
      }
      if (a.dz) detail::store8(a.dz + off, d);
      if (a.dx || Dxb) {
        if (a.drop.active()) {
          const unsigned keep = a.drop.keep8(off / kVec);
#pragma unroll
          for (int j = 0; j < kVec; ++j) d[j] = (keep >> j & 1u) ? d[j] * a.drop.scale : 0.f;
        }
        if (a.dx) detail::store8(a.dx + off, d);
        if constexpr (Dxb)
#pragma unroll
          for (int j = 0; j < kVec; ++j) dxb[k][j] += d[j];
      }
    }
  }

  // Column partials of this block: row groups add into shared memory one after the other.
  float* out0 = a.partials + static_cast<size_t>(blockIdx.x) * a.C;
  const size_t array_stride = static_cast<size_t>(gridDim.x) * a.C;
  if constexpr (kGroups == 1) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int vi = t + k * WPR * 32;
      if (vi >= V) continue;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const int c = vi * kVec + j;
        out0[c] = dw[k][j];
        if constexpr (!RMS) out0[array_stride + c] = db[k][j];
        if constexpr (Dxb) out0[2 * array_stride + c] = dxb[k][j];
      }
    }
  } else {
    for (int gi = 0; gi < kGroups; ++gi) {
      if (gi == group) {
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int vi = t + k * WPR * 32;
          if (vi >= V) continue;
#pragma unroll
          for (int j = 0; j < kVec; ++j) {
            const int c = vi * kVec + j;
            columns[c] = (gi ? columns[c] : 0.f) + dw[k][j];
            if constexpr (!RMS) columns[a.C + c] = (gi ? columns[a.C + c] : 0.f) + db[k][j];
            if constexpr (Dxb) columns[2 * a.C + c] = (gi ? columns[2 * a.C + c] : 0.f) + dxb[k][j];
          }
        }
      }
      __syncthreads();
    }
    for (int c = threadIdx.x; c < a.C; c += kRowThreads) {
      out0[c] = columns[c];
      if constexpr (!RMS) out0[array_stride + c] = columns[a.C + c];
      if constexpr (Dxb) out0[2 * array_stride + c] = columns[2 * a.C + c];
    }
  }
}

// A kernel's row shape: WPR warps per row, VPT 16-byte vectors per thread (32·WPR·VPT per row).
template <int WPR_, int VPT_>
struct RowShape {
  static constexpr int WPR = WPR_, VPT = VPT_;
};

// Calls launch(Shape{}) for the first of Shapes whose row holds V vectors, else the last.
template <class... Shapes, class Launch>
void launch_row_shape(int V, const Launch& launch) {
  bool done = false;
  ((done = done || (V <= 32 * Shapes::WPR * Shapes::VPT && (launch(Shapes{}), true))), ...);
  if (!done) launch(std::tuple_element_t<sizeof...(Shapes) - 1, std::tuple<Shapes...>>{});
}

template <class T, bool RMS>
void launch_forward_once(const NormForwardArgs<T>& a, cudaStream_t stream) {
  launch_row_shape<RowShape<1, 1>, RowShape<1, 2>, RowShape<1, 3>, RowShape<1, 4>, RowShape<2, 3>,
                   RowShape<2, 4>, RowShape<4, 3>, RowShape<4, 4>, RowShape<8, 3>, RowShape<8, 4>>(
      a.C / kVec, [&](auto shape) {
        using S = decltype(shape);
        const int groups = kRowWarps / S::WPR;
        norm_forward_kernel<T, S::WPR, S::VPT, RMS>
            <<<(a.N + groups - 1) / groups, kRowThreads, 0, stream>>>(a);
        XF_CUDA_CHECK_LAUNCH();
      });
}

// Once, or (an FP8 output whose recipe measures its amax first) measuring, then writing.
template <class T, bool RMS>
void launch_forward(NormForwardArgs<T> a, const Fp8Output* fp8, cudaStream_t stream) {
  detail::fp8_produce(fp8 ? *fp8 : Fp8Output{}, stream, [&](const detail::Fp8Store& store) {
    a.fp8 = store;
    launch_forward_once<T, RMS>(a, stream);
  });
}

template <class T, bool RMS>
void launch_backward(const NormBackwardArgs<T>& a, T* dweight, T* dbias, T* dxbias,
                     cudaStream_t stream) {
  const int G = detail::partial_blocks();
  launch_row_shape<RowShape<1, 1>, RowShape<1, 2>, RowShape<2, 2>, RowShape<4, 2>, RowShape<8, 2>,
                   RowShape<8, 3>, RowShape<8, 4>>(a.C / kVec, [&](auto shape) {
    using S = decltype(shape);
    const size_t smem = S::WPR < kRowWarps ? sizeof(float) * 3 * a.C : 0;
    if constexpr (!RMS) {
      if (a.want_dxbias) {
        norm_backward_kernel<T, S::WPR, S::VPT, RMS, true><<<G, kRowThreads, smem, stream>>>(a);
        XF_CUDA_CHECK_LAUNCH();
        return;
      }
    }
    norm_backward_kernel<T, S::WPR, S::VPT, RMS, false><<<G, kRowThreads, smem, stream>>>(a);
    XF_CUDA_CHECK_LAUNCH();
  });
  detail::PartialOutputs<T> outs;
  outs.out[0] = dweight;
  outs.out[1] = RMS ? nullptr : dbias;
  outs.out[2] = dxbias;
  detail::sum_partials(outs, a.partials, G, a.C, stream);
}

void check_dropout(const Dropout& d) {
  if (!(d.p >= 0.f && d.p < 1.f))
    XF_THROW(InvalidArgument, "dropout probability must be in [0, 1)");
}

template <class T>
void check_forward(const NormForwardArgs<T>& a, const Fp8Output* fp8, const char* what) {
  if (!a.out && !(fp8 && fp8->q)) XF_THROW(InvalidArgument, std::string(what) + ": no output");
  if (fp8 && fp8->q && std::is_same_v<T, float>)
    XF_THROW(InvalidArgument, std::string(what) + ": an FP8 output from fp32 storage");
  detail::require_row_shape(a.N, a.C, kMaxNormWidth, what);
  if (a.N < 1) XF_THROW(InvalidArgument, std::string(what) + ": N must be positive");
  if (!a.x || !a.weight) XF_THROW(InvalidArgument, std::string(what) + ": null tensor");
  for (const void* p : {static_cast<const void*>(a.out), static_cast<const void*>(a.z),
                        static_cast<const void*>(a.x), static_cast<const void*>(a.xbias),
                        static_cast<const void*>(a.residual), static_cast<const void*>(a.weight),
                        static_cast<const void*>(a.bias)})
    detail::require_aligned(p, what);
}

template <class T>
void check_backward(const NormBackwardArgs<T>& a, const char* what) {
  detail::require_row_shape(a.N, a.C, kMaxNormWidth, what);
  if (a.N < 1) XF_THROW(InvalidArgument, std::string(what) + ": N must be positive");
  if (!a.dout || !a.z || !a.weight || !a.rstd || !a.partials)
    XF_THROW(InvalidArgument, std::string(what) + ": null tensor");
  for (const void* p : {static_cast<const void*>(a.dz), static_cast<const void*>(a.dx),
                        static_cast<const void*>(a.dout), static_cast<const void*>(a.dout2),
                        static_cast<const void*>(a.dresidual), static_cast<const void*>(a.z),
                        static_cast<const void*>(a.weight)})
    detail::require_aligned(p, what);
}

}  // namespace

std::size_t norm_backward_scratch_bytes(int C) { return detail::partial_scratch_bytes(C); }

template <class T>
void bias_dropout_residual_layernorm_forward(T* out, T* z, float* mean, float* rstd, const T* x,
                                             const T* xbias, const T* residual, const T* weight,
                                             const T* bias, Dropout dropout, int N, int C,
                                             float eps, cudaStream_t stream, const Fp8Output* fp8) {
  check_dropout(dropout);
  NormForwardArgs<T> a{out, z, mean, rstd, x, xbias, residual, weight, bias, DropoutMask(dropout),
                       N,   C, eps};
  check_forward(a, fp8, "layernorm_forward");
  launch_forward<T, false>(a, fp8, stream);
}

template <class T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const T* weight,
                       const T* bias, int N, int C, float eps, cudaStream_t stream,
                       const Fp8Output* fp8) {
  bias_dropout_residual_layernorm_forward<T>(out, nullptr, mean, rstd, inp, nullptr, nullptr,
                                             weight, bias, Dropout{}, N, C, eps, stream, fp8);
}

template <class T>
void bias_dropout_residual_layernorm_backward(T* dz, T* dx, T* dxbias, T* dweight, T* dbias,
                                              float* scratch, const T* dout, const T* dout2,
                                              const T* dresidual, const T* z, const T* weight,
                                              const float* mean, const float* rstd, Dropout dropout,
                                              int N, int C, cudaStream_t stream) {
  check_dropout(dropout);
  NormBackwardArgs<T> a{
      dz, dx, scratch,          dout, dout2, dresidual, z, weight, mean, rstd, DropoutMask(dropout),
      N,  C,  dxbias != nullptr};
  check_backward(a, "layernorm_backward");
  if (!mean) XF_THROW(InvalidArgument, "layernorm_backward: null mean");
  launch_backward<T, false>(a, dweight, dbias, dxbias, stream);
}

template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, float* scratch, const T* dout,
                        const T* dresidual, const T* inp, const T* weight, const float* mean,
                        const float* rstd, int N, int C, cudaStream_t stream) {
  bias_dropout_residual_layernorm_backward<T>(dinp, nullptr, nullptr, dweight, dbias, scratch, dout,
                                              nullptr, dresidual, inp, weight, mean, rstd,
                                              Dropout{}, N, C, stream);
}

template <class T>
void dropout_residual_rmsnorm_forward(T* out, T* z, float* rstd, const T* x, const T* residual,
                                      const T* weight, Dropout dropout, int N, int C, float eps,
                                      cudaStream_t stream, const Fp8Output* fp8) {
  check_dropout(dropout);
  NormForwardArgs<T> a{out,     z,        nullptr, rstd,    x,
                       nullptr, residual, weight,  nullptr, DropoutMask(dropout),
                       N,       C,        eps};
  check_forward(a, fp8, "rmsnorm_forward");
  launch_forward<T, true>(a, fp8, stream);
}

template <class T>
void rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight, int N, int C, float eps,
                     cudaStream_t stream, const Fp8Output* fp8) {
  dropout_residual_rmsnorm_forward<T>(out, nullptr, rstd, inp, nullptr, weight, Dropout{}, N, C,
                                      eps, stream, fp8);
}

template <class T>
void rmsnorm_backward(T* dinp, T* dweight, float* scratch, const T* dout, const T* dresidual,
                      const T* inp, const T* weight, const float* rstd, int N, int C,
                      cudaStream_t stream) {
  NormBackwardArgs<T> a{dinp,   nullptr, scratch, dout,          nullptr, dresidual, inp,
                        weight, nullptr, rstd,    DropoutMask{}, N,       C,         false};
  check_backward(a, "rmsnorm_backward");
  launch_backward<T, true>(a, dweight, nullptr, nullptr, stream);
}

template <class T>
void dropout_residual_rmsnorm_backward(T* dz, T* dx, T* dweight, float* scratch, const T* dout,
                                       const T* dresidual, const T* z, const T* weight,
                                       const float* rstd, Dropout dropout, int N, int C,
                                       cudaStream_t stream) {
  check_dropout(dropout);
  NormBackwardArgs<T> a{
      dz, dx, scratch, dout, nullptr, dresidual, z, weight, nullptr, rstd, DropoutMask(dropout),
      N,  C,  false};
  check_backward(a, "dropout_residual_rmsnorm_backward");
  launch_backward<T, true>(a, dweight, nullptr, nullptr, stream);
}

#define XF_INSTANTIATE(T)                                                                          \
  template void layernorm_forward<T>(T*, float*, float*, const T*, const T*, const T*, int, int,   \
                                     float, cudaStream_t, const Fp8Output*);                       \
  template void bias_dropout_residual_layernorm_forward<T>(                                        \
      T*, T*, float*, float*, const T*, const T*, const T*, const T*, const T*, Dropout, int, int, \
      float, cudaStream_t, const Fp8Output*);                                                      \
  template void layernorm_backward<T>(T*, T*, T*, float*, const T*, const T*, const T*, const T*,  \
                                      const float*, const float*, int, int, cudaStream_t);         \
  template void bias_dropout_residual_layernorm_backward<T>(                                       \
      T*, T*, T*, T*, T*, float*, const T*, const T*, const T*, const T*, const T*, const float*,  \
      const float*, Dropout, int, int, cudaStream_t);                                              \
  template void rmsnorm_forward<T>(T*, float*, const T*, const T*, int, int, float, cudaStream_t,  \
                                   const Fp8Output*);                                              \
  template void dropout_residual_rmsnorm_forward<T>(T*, T*, float*, const T*, const T*, const T*,  \
                                                    Dropout, int, int, float, cudaStream_t,        \
                                                    const Fp8Output*);                             \
  template void dropout_residual_rmsnorm_backward<T>(T*, T*, T*, float*, const T*, const T*,       \
                                                     const T*, const T*, const float*, Dropout,    \
                                                     int, int, cudaStream_t);                      \
  template void rmsnorm_backward<T>(T*, T*, float*, const T*, const T*, const T*, const T*,        \
                                    const float*, int, int, cudaStream_t);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
