// AdamW, fused and unfused (see adamw.hpp). Both run the element update of AdamWMath, whose every
// operation is an explicitly rounded fp32 intrinsic (no FMA contraction): the fused kernel chains
// them in registers, the unfused chain stores each intermediate in fp32 memory, and the results
// are the same bits.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/adamw.hpp"
#include "kernels/detail/pack.cuh"

namespace xfbench::kernels {
namespace {

using detail::kPack;

constexpr int kThreads = 256;
constexpr int kPieceGroups = 4;                           // 8-element groups per thread
constexpr int kPieceElems = kThreads * 8 * kPieceGroups;  // elements per fused block
constexpr unsigned kChainBlocks = 2048;                   // grid of an unfused link, at most

// A fused block's work: elements [begin, begin + count) of one segment. Vector pieces have begin
// and count multiples of 8; the rest (a segment's unaligned head and tail) go element by element.
struct Piece {
  std::uint64_t begin;
  std::uint32_t count;
  std::uint16_t decay;
  std::uint16_t vector;
};

// The step's constants from the config and the device step count (the same in every kernel).
struct AdamWMath {
  float grad_mult, decay_factor, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step;

  __device__ AdamWMath(const AdamWConfig& c, const TrainScalars& s, bool decay) {
    const float t = float(s.step);
    grad_mult = s.grad_mult;
    decay_factor = decay ? __fsub_rn(1.f, __fmul_rn(c.lr, c.weight_decay)) : 1.f;
    one_minus_beta1 = __fsub_rn(1.f, c.beta1);
    beta2 = c.beta2;
    one_minus_beta2 = __fsub_rn(1.f, c.beta2);
    bc2_sqrt = __fsqrt_rn(__fsub_rn(1.f, powf(c.beta2, t)));
    eps = c.eps;
    neg_step = -__fdiv_rn(c.lr, __fsub_rn(1.f, powf(c.beta1, t)));
  }
  // The steps of the update, in the unfused chain's order.
  __device__ float grad(float g) const { return __fmul_rn(g, grad_mult); }
  __device__ float decay(float p) const { return __fmul_rn(p, decay_factor); }
  __device__ float lerp_m(float m, float g) const {  // torch.lerp's formula for weight < 0.5
    const float w = one_minus_beta1;
    return w < 0.5f ? __fadd_rn(m, __fmul_rn(w, __fsub_rn(g, m)))
                    : __fsub_rn(g, __fmul_rn(__fsub_rn(g, m), __fsub_rn(1.f, w)));
  }
  __device__ float mul_v(float v) const { return __fmul_rn(v, beta2); }
  __device__ float addcmul_v(float v, float g) const {
    return __fadd_rn(v, __fmul_rn(__fmul_rn(one_minus_beta2, g), g));
  }
  __device__ float denom(float v) const {
    return __fadd_rn(__fdiv_rn(__fsqrt_rn(v), bc2_sqrt), eps);
  }
  __device__ float update(float p, float m, float d) const {
    return __fadd_rn(p, __fmul_rn(neg_step, __fdiv_rn(m, d)));
  }
  // The whole update of one element; p, m, v updated in place.
  __device__ void apply(float g_raw, float& p, float& m, float& v) const {
    const float g = grad(g_raw);
    p = decay(p);
    m = lerp_m(m, g);
    v = addcmul_v(mul_v(v), g);
    p = update(p, m, denom(v));
  }
};

__device__ __forceinline__ void load8f(float (&f)[8], const float* p) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}
__device__ __forceinline__ void store8f(float* p, const float (&f)[8]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(f[0], f[1], f[2], f[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(f[4], f[5], f[6], f[7]);
}

// 8 elements of T from p (16-byte aligned for 2-byte T, 32-byte for float).
template <class T>
__device__ __forceinline__ void load8(float (&f)[8], const T* p) {
  if constexpr (kPack<T> == 8) {
    detail::load_pack(f, p);
  } else {
    load8f(f, p);
  }
}
template <class T>
__device__ __forceinline__ void store8(T* p, const float (&f)[8]) {
  if constexpr (kPack<T> == 8) {
    detail::store_pack(p, f);
  } else {
    store8f(p, f);
  }
}

template <class T>
__global__ __launch_bounds__(kThreads) void adamw_fused_kernel(T* params, float* master, float* m,
                                                               float* v, const T* grads,
                                                               const Piece* pieces,
                                                               AdamWConfig config,
                                                               const TrainScalars* scalars) {
  const TrainScalars sc = *scalars;
  if (sc.nonfinite) return;
  const Piece piece = pieces[blockIdx.x];
  const AdamWMath math(config, sc, piece.decay != 0);
  if (piece.vector) {
    for (std::uint32_t e = threadIdx.x * 8; e < piece.count; e += kThreads * 8) {
      const std::size_t i = piece.begin + e;
      float g[8], p[8], mm[8], vv[8];
      load8(g, grads + i);
      load8f(p, master + i);
      load8f(mm, m + i);
      load8f(vv, v + i);
#pragma unroll
      for (int j = 0; j < 8; ++j) math.apply(g[j], p[j], mm[j], vv[j]);
      store8f(master + i, p);
      store8f(m + i, mm);
      store8f(v + i, vv);
      if (params) store8(params + i, p);
    }
  } else {
    for (std::uint32_t e = threadIdx.x; e < piece.count; e += kThreads) {
      const std::size_t i = piece.begin + e;
      float p = master[i], mm = m[i], vv = v[i];
      math.apply(detail::to_float(grads[i]), p, mm, vv);
      master[i] = p, m[i] = mm, v[i] = vv;
      if (params) params[i] = detail::from_float<T>(p);
    }
  }
}

// The links of the unfused chain, in order (G: fp32 gradient, D: denominator temporaries).
enum class Link { grad, decay, lerp_m, mul_v, addcmul_v, sqrt_d, div_d, add_d, update, weights };

template <class T>
struct Segment {
  float *P, *M, *V, *G, *D;
  const T* g;
  T* W;
};

// One link on elements [0, n) of a segment, a grid-stride loop (the step's constants, two powf,
// are computed once per thread, so a thread takes many elements of a large tensor).
template <class T>
__global__ __launch_bounds__(kThreads) void chain_kernel(Link link, Segment<T> s, std::size_t n,
                                                         AdamWConfig config,
                                                         const TrainScalars* scalars, bool decay) {
  const TrainScalars sc = *scalars;
  if (sc.nonfinite) return;
  const AdamWMath a(config, sc, decay);
  for (std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * kThreads) {
    switch (link) {
      case Link::grad:
        s.G[i] = a.grad(detail::to_float(s.g[i]));
        break;
      case Link::decay:
        s.P[i] = a.decay(s.P[i]);
        break;
      case Link::lerp_m:
        s.M[i] = a.lerp_m(s.M[i], s.G[i]);
        break;
      case Link::mul_v:
        s.V[i] = a.mul_v(s.V[i]);
        break;
      case Link::addcmul_v:
        s.V[i] = a.addcmul_v(s.V[i], s.G[i]);
        break;
      case Link::sqrt_d:
        s.D[i] = __fsqrt_rn(s.V[i]);
        break;
      case Link::div_d:
        s.D[i] = __fdiv_rn(s.D[i], a.bc2_sqrt);
        break;
      case Link::add_d:
        s.D[i] = __fadd_rn(s.D[i], a.eps);
        break;
      case Link::update:
        s.P[i] = a.update(s.P[i], s.M[i], s.D[i]);
        break;
      case Link::weights:
        s.W[i] = detail::from_float<T>(s.P[i]);
        break;
    }
  }
}

template <class T>
__global__ void init_master_kernel(float* master, const T* params, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    master[i] = detail::to_float(params[i]);
}

void check_config(const AdamWConfig& c, const char* what) {
  if (!(c.lr >= 0.f && c.beta1 >= 0.f && c.beta1 < 1.f && c.beta2 >= 0.f && c.beta2 < 1.f &&
        c.eps > 0.f && c.weight_decay >= 0.f))
    XF_THROW(InvalidArgument, std::string(what) +
                                  ": AdamW needs lr >= 0, 0 <= beta1, beta2 < 1, eps > 0, "
                                  "weight_decay >= 0");
}

template <class T>
void check_buffers(T* params, float* master, float* m, float* v, const T* grads,
                   const TrainScalars* scalars, const char* what) {
  if (!master || !m || !v || !grads || !scalars || (!params && !std::is_same<T, float>::value))
    XF_THROW(InvalidArgument, std::string(what) +
                                  ": master, m, v, grads and scalars must be set (params too "
                                  "unless T = float)");
  for (const void* p : {(const void*)params, (const void*)master, (const void*)m, (const void*)v,
                        (const void*)grads})
    detail::require_aligned(p, what);
}

}  // namespace

AdamWPlan::AdamWPlan(std::vector<ParamSegment> segments) : segments_(std::move(segments)) {
  std::vector<ParamSegment> sorted = segments_;
  std::sort(sorted.begin(), sorted.end(),
            [](const ParamSegment& a, const ParamSegment& b) { return a.offset < b.offset; });
  for (std::size_t k = 0; k < sorted.size(); ++k) {
    if (k > 0 && sorted[k - 1].offset + sorted[k - 1].count > sorted[k].offset)
      XF_THROW(InvalidArgument, "AdamWPlan: segments at offsets " +
                                    std::to_string(sorted[k - 1].offset) + " and " +
                                    std::to_string(sorted[k].offset) + " overlap");
    total_ = std::max(total_, sorted[k].offset + sorted[k].count);
    largest_ = std::max(largest_, sorted[k].count);
  }
  std::vector<Piece> pieces;
  auto add = [&](std::size_t begin, std::size_t end, bool decay, bool vector) {
    for (std::size_t b = begin; b < end; b += kPieceElems)
      pieces.push_back({b, std::uint32_t(std::min<std::size_t>(kPieceElems, end - b)),
                        std::uint16_t(decay), std::uint16_t(vector)});
  };
  for (const ParamSegment& s : segments_) {
    const std::size_t end = s.offset + s.count;
    const std::size_t body_begin = std::min(end, (s.offset + 7) / 8 * 8);
    const std::size_t body_end = std::max(body_begin, end / 8 * 8);
    add(s.offset, body_begin, s.decay, false);
    add(body_begin, body_end, s.decay, true);
    add(body_end, end, s.decay, false);
  }
  if (pieces.size() > 0x7fffffff) XF_THROW(InvalidArgument, "AdamWPlan: too many parameters");
  num_pieces_ = int(pieces.size());
  pieces_ = detail::upload_table(pieces);
}

AdamWPlan::~AdamWPlan() {
  if (pieces_) cudaFree(pieces_);
}
AdamWPlan::AdamWPlan(AdamWPlan&& o) noexcept
    : segments_(std::move(o.segments_)),
      total_(o.total_),
      largest_(o.largest_),
      pieces_(std::exchange(o.pieces_, nullptr)),
      num_pieces_(std::exchange(o.num_pieces_, 0)) {}
AdamWPlan& AdamWPlan::operator=(AdamWPlan&& o) noexcept {
  std::swap(segments_, o.segments_);
  std::swap(total_, o.total_);
  std::swap(largest_, o.largest_);
  std::swap(pieces_, o.pieces_);
  std::swap(num_pieces_, o.num_pieces_);
  return *this;
}

template <class T>
void adamw_init_master(float* master, const T* params, std::size_t n, cudaStream_t stream) {
  if (n > 0 && (!master || !params))
    XF_THROW(InvalidArgument, "adamw_init_master: master and params must be set");
  if (n == 0) return;
  const std::size_t blocks = std::min<std::size_t>((n + kThreads - 1) / kThreads, 1u << 20);
  init_master_kernel<T><<<unsigned(blocks), kThreads, 0, stream>>>(master, params, n);
  XF_CUDA_CHECK_LAUNCH();
}

template <class T>
void adamw_fused(T* params, float* master, float* m, float* v, const T* grads,
                 const AdamWPlan& plan, const AdamWConfig& config, const TrainScalars* scalars,
                 cudaStream_t stream) {
  check_config(config, "adamw_fused");
  check_buffers(params, master, m, v, grads, scalars, "adamw_fused");
  if (plan.num_pieces() == 0) return;
  adamw_fused_kernel<T><<<plan.num_pieces(), kThreads, 0, stream>>>(
      params, master, m, v, grads, static_cast<const Piece*>(plan.pieces()), config, scalars);
  XF_CUDA_CHECK_LAUNCH();
}

std::size_t adamw_unfused_scratch_bytes(const AdamWPlan& plan) {
  return 2 * sizeof(float) * std::max<std::size_t>(plan.largest(), 1);
}

template <class T>
void adamw_unfused(T* params, float* master, float* m, float* v, const T* grads, void* scratch,
                   const AdamWPlan& plan, const AdamWConfig& config, const TrainScalars* scalars,
                   cudaStream_t stream) {
  check_config(config, "adamw_unfused");
  check_buffers(params, master, m, v, grads, scalars, "adamw_unfused");
  if (!scratch) XF_THROW(InvalidArgument, "adamw_unfused: scratch must be set");
  float* G = static_cast<float*>(scratch);
  float* D = G + std::max<std::size_t>(plan.largest(), 1);
  const std::size_t links = params ? kAdamWUnfusedLaunches : kAdamWUnfusedLaunches - 1;
  for (const ParamSegment& seg : plan.segments()) {
    if (seg.count == 0) continue;
    const std::size_t o = seg.offset;
    const Segment<T> s{master + o, m + o, v + o, G, D, grads + o, params ? params + o : nullptr};
    const unsigned blocks =
        unsigned(std::min<std::size_t>((seg.count + kThreads - 1) / kThreads, kChainBlocks));
    for (std::size_t k = 0; k < links; ++k) {
      chain_kernel<T>
          <<<blocks, kThreads, 0, stream>>>(Link(k), s, seg.count, config, scalars, seg.decay);
      XF_CUDA_CHECK_LAUNCH();
    }
  }
}

#define XF_INSTANTIATE(T)                                                                       \
  template void adamw_init_master<T>(float*, const T*, std::size_t, cudaStream_t);              \
  template void adamw_fused<T>(T*, float*, float*, float*, const T*, const AdamWPlan&,          \
                               const AdamWConfig&, const TrainScalars*, cudaStream_t);          \
  template void adamw_unfused<T>(T*, float*, float*, float*, const T*, void*, const AdamWPlan&, \
                                 const AdamWConfig&, const TrainScalars*, cudaStream_t);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
