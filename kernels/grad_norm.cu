// Global gradient norm, clipping and loss scaling (see grad_norm.hpp). Pass 1: kNormBlocks blocks
// (a fixed number, so the sums are the same on any GPU) each add the squares of a fixed slice of
// the packs; pass 2: one block adds the partials in order, and its thread 0 updates TrainScalars.
#include <cstdint>
#include <string>
#include <utility>

#include "kernels/detail/pack.cuh"
#include "kernels/grad_norm.hpp"

namespace xfbench::kernels {
namespace {

using detail::kPack;

constexpr int kNormBlocks = 1024;
constexpr int kNormThreads = 512;

// Sum over the block (kThreads / 32 warps), in a fixed order; valid in thread 0.
template <int kThreads>
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float smem[kThreads / 32];
  v = detail::warp_sum(v);
  if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = v;
  __syncthreads();
  float s = 0.f;
  if (threadIdx.x == 0)
    for (int w = 0; w < kThreads / 32; ++w) s += smem[w];
  return s;
}

// Where shard element e lies in the gradient buffer: at e (a contiguous shard) ...
struct Contiguous {
  __device__ std::size_t operator()(std::size_t e) const { return e; }
};
// ... or in the pieces of a GradPieces table, walked forward (a thread's elements only increase).
struct DevicePiece {
  std::uint64_t offset, count;
};
struct InPieces {
  const DevicePiece* pieces;
  int k = 0;
  std::size_t first = 0;  // the shard element piece k starts at
  __device__ std::size_t operator()(std::size_t e) {
    while (e >= first + pieces[k].count) first += pieces[k++].count;
    return pieces[k].offset + (e - first);
  }
};

// Pass 1 over a shard of n elements: block b adds the squares of its fixed slice of the packs, in
// the same order wherever the shard lies (pieces are whole packs).
template <class T, class Where>
__global__ __launch_bounds__(kNormThreads) void sum_squares_kernel(float* partials, const T* g,
                                                                   std::size_t n, Where where) {
  constexpr int P = kPack<T>;
  const std::size_t packs = n / P;
  const std::size_t begin = packs * blockIdx.x / kNormBlocks;
  const std::size_t end = packs * (blockIdx.x + 1) / kNormBlocks;
  float s = 0.f;
#pragma unroll 4
  for (std::size_t i = begin + threadIdx.x; i < end; i += kNormThreads) {
    float f[P];
    detail::load_pack(f, g + where(i * P));
#pragma unroll
    for (int j = 0; j < P; ++j) s = fmaf(f[j], f[j], s);
  }
  if (blockIdx.x == kNormBlocks - 1 && threadIdx.x == 0)  // the elements past the last pack
    for (std::size_t i = packs * P; i < n; ++i) {
      const float x = detail::to_float(g[where(i)]);
      s = fmaf(x, x, s);
    }
  s = block_sum<kNormThreads>(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ __launch_bounds__(kNormBlocks) void finish_kernel(TrainScalars* sc,
                                                             const float* partials, float max_norm,
                                                             LossScaling rule) {
  const float sum = block_sum<kNormBlocks>(partials[threadIdx.x]);
  if (threadIdx.x != 0) return;
  const float S = sc->loss_scale;
  const float norm = sqrtf(sum) / S;
  const bool finite = isfinite(sum);
  const float clip = max_norm > 0.f && finite ? fminf(1.f, max_norm / (norm + 1e-6f)) : 1.f;
  sc->grad_norm = norm;
  sc->clip_coef = clip;
  sc->grad_mult = clip / S;
  sc->nonfinite = finite ? 0 : 1;
  if (!finite) {
    sc->skipped += 1;
    sc->good_steps = 0;
    if (rule.dynamic) sc->loss_scale = S * rule.backoff_factor;
    return;
  }
  sc->step += 1;
  if (rule.dynamic && ++sc->good_steps >= rule.growth_interval) {
    sc->loss_scale = S * rule.growth_factor;
    sc->good_steps = 0;
  }
}

__global__ void init_kernel(TrainScalars* sc, float scale) {
  *sc = TrainScalars{scale, 0.f, 1.f, 1.f / scale, 0, 0, 0, 0};
}

template <class T>
__global__ void accumulate_kernel(T* acc, const T* g, std::size_t packs) {
  constexpr int P = kPack<T>;
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= packs) return;
  float a[P], b[P];
  detail::load_pack(a, acc + i * P);
  detail::load_pack(b, g + i * P);
#pragma unroll
  for (int j = 0; j < P; ++j) a[j] += b[j];
  detail::store_pack(acc + i * P, a);
}

}  // namespace

void train_scalars_init(TrainScalars* scalars, const LossScaling& scaling, cudaStream_t stream) {
  if (!scalars) XF_THROW(InvalidArgument, "train_scalars_init: scalars must be set");
  if (scaling.dynamic &&
      !(scaling.init_scale > 0.f && scaling.growth_factor >= 1.f && scaling.backoff_factor > 0.f &&
        scaling.backoff_factor < 1.f && scaling.growth_interval > 0))
    XF_THROW(InvalidArgument,
             "train_scalars_init: dynamic loss scaling needs init_scale > 0, "
             "growth_factor >= 1, 0 < backoff_factor < 1, growth_interval > 0");
  init_kernel<<<1, 1, 0, stream>>>(scalars, scaling.dynamic ? scaling.init_scale : 1.f);
  XF_CUDA_CHECK_LAUNCH();
}

std::size_t grad_norm_scratch_bytes() { return sizeof(float) * kNormBlocks; }

template <class T>
void grad_norm_partials(float* scratch, const T* grads, std::size_t n, cudaStream_t stream) {
  if (!scratch || (n > 0 && !grads))
    XF_THROW(InvalidArgument, "grad_norm_partials: scratch and grads must be set");
  detail::require_aligned(grads, "grad_norm_partials: grads");
  sum_squares_kernel<T><<<kNormBlocks, kNormThreads, 0, stream>>>(scratch, grads, n, Contiguous{});
  XF_CUDA_CHECK_LAUNCH();
}

GradPieces::GradPieces(const std::vector<Piece>& pieces) {
  std::vector<DevicePiece> table;
  for (const Piece& p : pieces) {
    if (p.offset % 8 || p.count % 8)
      XF_THROW(InvalidArgument, "GradPieces: piece at " + std::to_string(p.offset) + " of " +
                                    std::to_string(p.count) + " elements is not 8-aligned");
    table.push_back({p.offset, p.count});
    elements_ += p.count;
  }
  table_ = detail::upload_table(table);
}
GradPieces::~GradPieces() {
  if (table_) cudaFree(table_);
}
GradPieces::GradPieces(GradPieces&& o) noexcept : elements_(o.elements_), table_(o.table_) {
  o.elements_ = 0, o.table_ = nullptr;
}
GradPieces& GradPieces::operator=(GradPieces&& o) noexcept {
  std::swap(elements_, o.elements_);
  std::swap(table_, o.table_);
  return *this;
}

template <class T>
void grad_norm_partials(float* scratch, const T* grads, const GradPieces& pieces,
                        cudaStream_t stream) {
  if (!scratch || (pieces.elements() > 0 && !grads))
    XF_THROW(InvalidArgument, "grad_norm_partials: scratch and grads must be set");
  detail::require_aligned(grads, "grad_norm_partials: grads");
  const InPieces where{static_cast<const DevicePiece*>(pieces.table())};
  sum_squares_kernel<T>
      <<<kNormBlocks, kNormThreads, 0, stream>>>(scratch, grads, pieces.elements(), where);
  XF_CUDA_CHECK_LAUNCH();
}

void grad_norm_finish(TrainScalars* scalars, const float* scratch, float max_norm,
                      const LossScaling& scaling, cudaStream_t stream) {
  if (!scalars || !scratch)
    XF_THROW(InvalidArgument, "grad_norm_finish: scalars and scratch must be set");
  finish_kernel<<<1, kNormBlocks, 0, stream>>>(scalars, scratch, max_norm, scaling);
  XF_CUDA_CHECK_LAUNCH();
}

template <class T>
void grad_norm_clip(TrainScalars* scalars, float* scratch, const T* grads, std::size_t n,
                    float max_norm, const LossScaling& scaling, cudaStream_t stream) {
  if (!scalars) XF_THROW(InvalidArgument, "grad_norm_clip: scalars must be set");
  grad_norm_partials<T>(scratch, grads, n, stream);
  grad_norm_finish(scalars, scratch, max_norm, scaling, stream);
}

template <class T>
void grad_accumulate(T* acc, const T* g, std::size_t n, cudaStream_t stream) {
  if (n % kPack<T> != 0)
    XF_THROW(InvalidArgument, "grad_accumulate: n = " + std::to_string(n) +
                                  " must be a multiple of " + std::to_string(kPack<T>));
  detail::require_aligned(acc, "grad_accumulate: acc");
  detail::require_aligned(g, "grad_accumulate: g");
  const std::size_t packs = n / kPack<T>;
  if (packs == 0) return;
  accumulate_kernel<T><<<unsigned((packs + 255) / 256), 256, 0, stream>>>(acc, g, packs);
  XF_CUDA_CHECK_LAUNCH();
}

#define XF_INSTANTIATE(T)                                                              \
  template void grad_norm_clip<T>(TrainScalars*, float*, const T*, std::size_t, float, \
                                  const LossScaling&, cudaStream_t);                   \
  template void grad_accumulate<T>(T*, const T*, std::size_t, cudaStream_t);           \
  template void grad_norm_partials<T>(float*, const T*, std::size_t, cudaStream_t);    \
  template void grad_norm_partials<T>(float*, const T*, const GradPieces&, cudaStream_t);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
