// Rotary position embeddings (see rope.hpp): the inverse frequencies and the cos/sin table in
// float64 on the host, and one in-place rotation kernel for the forward (angle a) and the backward
// (angle -a, the transpose). Each thread rotates N elements of a head's first half against the
// matching N of its second half: N = 8 (16-byte vectors) when D/2 % 8 == 0, else N = 4.
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/detail/cast_transpose.cuh"
#include "kernels/detail/pack.cuh"  // vec.cuh, and fp32 storage
#include "kernels/rope.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {
namespace {

constexpr int kThreads = 256;

// N consecutive elements as fp32: 8 through the repo's 16-byte vectors, 4 (D/2 % 8 == 4) through
// one 8-byte (fp16 / bf16) or 16-byte (fp32) access.
template <class T>
using Raw4 = std::conditional_t<sizeof(T) == 2, int2, int4>;

template <int N, class T>
__device__ __forceinline__ void load_n(float (&f)[N], const T* p) {
  if constexpr (N == detail::kVec) {
    detail::load8(f, p);
  } else {
    union {
      Raw4<T> raw;
      T v[4];
    } u;
    u.raw = *reinterpret_cast<const Raw4<T>*>(p);
#pragma unroll
    for (int j = 0; j < 4; ++j) f[j] = detail::to_float(u.v[j]);
  }
}

template <int N, class T>
__device__ __forceinline__ void store_n(T* p, const float (&f)[N]) {
  if constexpr (N == detail::kVec) {
    detail::store8(p, f);
  } else {
    union {
      Raw4<T> raw;
      T v[4];
    } u;
#pragma unroll
    for (int j = 0; j < 4; ++j) u.v[j] = detail::from_float<T>(f[j]);
    *reinterpret_cast<Raw4<T>*>(p) = u.raw;
  }
}

struct RopeShape {
  unsigned vectors;    // tokens · heads · per_head: one thread each
  unsigned per_row;    // heads · per_head
  unsigned per_head;   // D / 2 / N
  unsigned seq;        // position = row % seq
  unsigned row_width;  // (NH + 2·NKV)·D
  unsigned D;
};

// The (cos, sin) of N consecutive frequencies, sin negated for the backward: R(-a) = R(a)^T.
template <int N, bool kBackward>
__device__ __forceinline__ void angles(float (&c)[N], float (&sn)[N], const float2* cs) {
  float4 t[N / 2];  // (cos, sin) of two frequencies each
#pragma unroll
  for (int k = 0; k < N / 2; ++k) t[k] = __ldg(reinterpret_cast<const float4*>(cs) + k);
#pragma unroll
  for (int k = 0; k < N; ++k) {
    c[k] = k % 2 ? t[k / 2].z : t[k / 2].x;
    sn[k] = (kBackward ? -1.f : 1.f) * (k % 2 ? t[k / 2].w : t[k / 2].y);
  }
}

// Thread i: row, rotated head (q heads then k heads, contiguous) and the N-element slice j of
// the head's first half. Consecutive threads share a row, so the table row of its position is
// read from L2 once and from L1 by every head after.
template <class T, int N, bool kBackward>
__global__ __launch_bounds__(kThreads) void rope_kernel(T* qkv, const float2* __restrict__ table,
                                                        RopeShape s) {
  const unsigned i = blockIdx.x * kThreads + threadIdx.x;
  if (i >= s.vectors) return;
  const unsigned row = i / s.per_row, rem = i - row * s.per_row;
  const unsigned head = rem / s.per_head, j = rem - head * s.per_head;
  const unsigned half = s.D / 2;
  T* x1 = qkv + static_cast<size_t>(row) * s.row_width + head * s.D + j * N;
  T* x2 = x1 + half;
  const float2* cs = table + static_cast<size_t>(row % s.seq) * half + j * N;

  float a[N], b[N];
  load_n<N>(a, x1);
  load_n<N>(b, x2);
  float c[N], sn[N];
  angles<N, kBackward>(c, sn, cs);
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const float lo = a[k] * c[k] - b[k] * sn[k], hi = b[k] * c[k] + a[k] * sn[k];
    a[k] = lo;
    b[k] = hi;
  }
  store_n<N>(x1, a);
  store_n<N>(x2, b);
}

// The backward's rotation as the FP8 tile pass's op (detail/cast_transpose.cuh) over dqkv
// [tokens, width]: each 8-wide vector of a q or k head rotated back against the 8 of its other
// half (D/2 away in the same head), v's columns as they are. D/2 % 8 == 0.
template <class T>
struct RopeBackwardValues {
  const T* dqkv;
  const float2* table;
  unsigned width, rotated, seq, D;  // row width, q and k columns, positions, head dim
  __device__ void value(size_t at, int col, float (&v)[detail::kVec]) const {
    detail::load8(v, dqkv + at);
    if (unsigned(col) >= rotated) return;
    const unsigned half = D / 2, i = unsigned(col) % D, row = unsigned(at / width);
    const bool first = i < half;  // lo = a·c − b·s, hi = b·c + a·s (s = −sin: backward)
    float other[detail::kVec], c[detail::kVec], sn[detail::kVec];
    detail::load8(other, dqkv + (first ? at + half : at - half));
    angles<detail::kVec, true>(c, sn, table + size_t(row % seq) * half + (first ? i : i - half));
#pragma unroll
    for (int k = 0; k < detail::kVec; ++k)
      v[k] = first ? v[k] * c[k] - other[k] * sn[k] : v[k] * c[k] + other[k] * sn[k];
  }
};

void check_config(const RopeConfig& c, int head_dim) {
  if (head_dim <= 0 || head_dim % 2 != 0)
    XF_THROW(InvalidArgument,
             "RoPE: head dim " + std::to_string(head_dim) + " must be even and positive");
  if (!(c.theta > 1.0) || !std::isfinite(c.theta))
    XF_THROW(InvalidArgument, "RoPE: theta " + std::to_string(c.theta) + " must be > 1");
  if (!(c.factor >= 0.0) || !std::isfinite(c.factor))
    XF_THROW(InvalidArgument,
             "RoPE: scaling factor " + std::to_string(c.factor) + " must be >= 0 (0: no scaling)");
  if (c.factor > 0.0 && (!(c.low_freq_factor > 0.0) || !(c.high_freq_factor > c.low_freq_factor) ||
                         !std::isfinite(c.high_freq_factor) || c.original_max_position < 1))
    XF_THROW(InvalidArgument, "RoPE llama3 scaling: need 0 < low_freq_factor (" +
                                  std::to_string(c.low_freq_factor) + ") < high_freq_factor (" +
                                  std::to_string(c.high_freq_factor) +
                                  ") and original_max_position (" +
                                  std::to_string(c.original_max_position) + ") >= 1");
}

}  // namespace

std::vector<double> rope_inv_freq(const RopeConfig& config, int head_dim) {
  check_config(config, head_dim);
  const int half = head_dim / 2;
  std::vector<double> f(half);
  for (int i = 0; i < half; ++i)
    f[i] = 1.0 / std::pow(config.theta, static_cast<double>(2 * i) / head_dim);
  if (config.factor == 0.0) return f;

  // HF _compute_llama3_parameters, element by element.
  const double orig = config.original_max_position, factor = config.factor;
  const double low = config.low_freq_factor, high = config.high_freq_factor;
  const double low_freq_wavelen = orig / low, high_freq_wavelen = orig / high;
  const double pi = 3.14159265358979323846;
  for (double& x : f) {
    const double wavelen = 2 * pi / x;
    const double llama = wavelen > low_freq_wavelen ? x / factor : x;
    const double smooth = (orig / wavelen - low) / (high - low);
    const double smoothed = (1 - smooth) * llama / factor + smooth * llama;
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    x = medium ? smoothed : llama;
  }
  return f;
}

RotaryEmbedding::RotaryEmbedding(const RopeConfig& config, int head_dim, int max_seq)
    : head_dim_(head_dim), max_seq_(max_seq) {
  if (head_dim <= 0 || head_dim % detail::kVec != 0 || max_seq < 1)
    XF_THROW(InvalidArgument, "RotaryEmbedding: head dim " + std::to_string(head_dim) +
                                  " must be a positive multiple of 8, max_seq " +
                                  std::to_string(max_seq) + " at least 1");
  const std::vector<double> f = rope_inv_freq(config, head_dim);
  const int half = head_dim / 2;
  std::vector<float2> table(static_cast<size_t>(max_seq) * half);
  for (int p = 0; p < max_seq; ++p)
    for (int i = 0; i < half; ++i) {
      const double a = p * f[i];
      table[static_cast<size_t>(p) * half + i] =
          make_float2(static_cast<float>(std::cos(a)), static_cast<float>(std::sin(a)));
    }
  table_ = static_cast<float2*>(detail::upload_table(table));
}

RotaryEmbedding::~RotaryEmbedding() { cudaFree(table_); }

namespace {

void check_shape(const void* qkv, int max_seq, int tokens, int seq, int NH, int NKV,
                 const char* what) {
  if (!qkv) XF_THROW(InvalidArgument, std::string(what) + ": null tensor");
  if (tokens < 0 || seq < 1 || seq > max_seq || tokens % seq != 0 || NH < 1 || NKV < 1)
    XF_THROW(InvalidArgument, std::string(what) + ": tokens " + std::to_string(tokens) + ", seq " +
                                  std::to_string(seq) + " (max " + std::to_string(max_seq) +
                                  "), NH " + std::to_string(NH) + ", NKV " + std::to_string(NKV) +
                                  " (need tokens % seq == 0, NH, NKV >= 1)");
  detail::require_aligned(qkv, what);
}

template <class T, bool kBackward>
void launch(T* qkv, const float2* table, int D, int max_seq, int tokens, int seq, int NH, int NKV,
            cudaStream_t stream, const char* what) {
  check_shape(qkv, max_seq, tokens, seq, NH, NKV, what);
  const int N = (D / 2) % detail::kVec == 0 ? detail::kVec : 4;
  const unsigned long long per_head = D / 2 / N, per_row = per_head * (NH + NKV),
                           vectors = per_row * tokens,
                           row_width = static_cast<unsigned long long>(NH + 2 * NKV) * D;
  if (vectors > 0xffffffffull || row_width > 0xffffffffull)
    XF_THROW(InvalidArgument,
             std::string(what) + ": tensor too large (" + std::to_string(vectors) + " vectors)");
  if (vectors == 0) return;
  const RopeShape s{unsigned(vectors), unsigned(per_row),   unsigned(per_head),
                    unsigned(seq),     unsigned(row_width), unsigned(D)};
  const unsigned blocks = unsigned((vectors + kThreads - 1) / kThreads);
  if (N == detail::kVec)
    rope_kernel<T, detail::kVec, kBackward><<<blocks, kThreads, 0, stream>>>(qkv, table, s);
  else
    rope_kernel<T, 4, kBackward><<<blocks, kThreads, 0, stream>>>(qkv, table, s);
  XF_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <class T>
void RotaryEmbedding::forward(T* qkv, int tokens, int seq, int NH, int NKV,
                              cudaStream_t stream) const {
  launch<T, false>(qkv, table_, head_dim_, max_seq_, tokens, seq, NH, NKV, stream,
                   "RotaryEmbedding::forward");
}

template <class T>
void RotaryEmbedding::backward(T* dqkv, int tokens, int seq, int NH, int NKV,
                               cudaStream_t stream) const {
  launch<T, true>(dqkv, table_, head_dim_, max_seq_, tokens, seq, NH, NKV, stream,
                  "RotaryEmbedding::backward");
}

template <class T>
void RotaryEmbedding::backward_fp8(const T* dqkv, int tokens, int seq, int NH, int NKV,
                                   const Fp8Output& out, cudaStream_t stream) const {
  const char* what = "RotaryEmbedding::backward_fp8";
  check_shape(dqkv, max_seq_, tokens, seq, NH, NKV, what);
  if ((head_dim_ / 2) % detail::kVec != 0)
    XF_THROW(InvalidArgument, std::string(what) + ": head dim " + std::to_string(head_dim_) +
                                  " (need head dim / 2 a multiple of 8)");
  if (!out.q) XF_THROW(InvalidArgument, std::string(what) + ": no FP8 output");
  const long long width = static_cast<long long>(NH + 2 * NKV) * head_dim_;
  if (width > 0x7fffffffll || static_cast<long long>(tokens) * width > 0xffffffffffll)
    XF_THROW(InvalidArgument, std::string(what) + ": tensor too large");
  const RopeBackwardValues<T> op{dqkv,
                                 table_,
                                 unsigned(width),
                                 unsigned((NH + NKV) * head_dim_),
                                 unsigned(seq),
                                 unsigned(head_dim_)};
  detail::produce_cast_transpose<T>(op, tokens, int(width), out, nullptr, nullptr, stream);
}

#define XF_INSTANTIATE(T)                                                                \
  template void RotaryEmbedding::forward<T>(T*, int, int, int, int, cudaStream_t) const; \
  template void RotaryEmbedding::backward<T>(T*, int, int, int, int, cudaStream_t) const;
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE
template void RotaryEmbedding::backward_fp8<__nv_bfloat16>(const __nv_bfloat16*, int, int, int, int,
                                                           const Fp8Output&, cudaStream_t) const;

}  // namespace xfbench::kernels
