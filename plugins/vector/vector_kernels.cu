
#include <cstdint>
#include <cstring>

#include "vector_kernels.hpp"
#include "xfbench/convert.hpp"
#include "xfbench/error.hpp"

namespace xfbench::vector {
namespace {

// Tuned on the H100 (plugins/vector/TUNING.md): one 16-byte access per thread in blocks of 1024
// threads, one tile per block (no persistent grid), streaming cache hints.
constexpr int kThreads = 1024;
constexpr int kUnroll = 1;
constexpr int kReduceBlocks = 1024;
constexpr int kSumUnroll = 4;  // the sum keeps several loads in flight inside its grid-stride loop

// 16 bytes of T, loaded and stored as one uint4 and streamed (no reuse, so evict first).
template <class T>
struct alignas(16) Vec {
  static constexpr int kN = 16 / sizeof(T);
  T v[kN];
};
// Load flavours: 0 streaming (evict-first), 1 read-only with a 256-byte L2 prefetch, 2 plain.
template <int kLoad>
__device__ __forceinline__ uint4 load_raw(const uint4* p) {
  if constexpr (kLoad == 1) {
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
    return r;
  } else if constexpr (kLoad == 2) {
    return *p;
  } else {
    return __ldcs(p);
  }
}
template <class T, int kLoad = 0>
__device__ __forceinline__ Vec<T> load(const Vec<T>* p) {
  uint4 raw = load_raw<kLoad>(reinterpret_cast<const uint4*>(p));
  Vec<T> out;
  std::memcpy(&out, &raw, 16);
  return out;
}
// Store flavours: 0 streaming (evict-first), 1 plain.
template <class T, int kStore = 0>
__device__ __forceinline__ void store(Vec<T>* p, const Vec<T>& v) {
  uint4 raw;
  std::memcpy(&raw, &v, 16);
  if constexpr (kStore == 1) {
    *reinterpret_cast<uint4*>(p) = raw;
  } else {
    __stcs(reinterpret_cast<uint4*>(p), raw);
  }
}

struct ScaleF {
  template <class T>
  __device__ T operator()(T a) const {
    return from_float<T>(to_float(a) * kScale);
  }
};
struct CopyF {
  template <class T>
  __device__ T operator()(T a) const {
    return a;
  }
};

// y[i] = f(a[i]) over whole vectors; each thread handles kU vectors of one tile.
template <class T, class F, int kU = kUnroll, int kTh = kThreads, int kLoad = 0, int kStore = 0>
__global__ void __launch_bounds__(kTh)
    unary_kernel(const Vec<T>* a, Vec<T>* y, std::size_t nvec, F f) {
  std::size_t base = std::size_t(blockIdx.x) * kTh * kU + threadIdx.x;
  Vec<T> r[kU];
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    std::size_t i = base + std::size_t(u) * kTh;
    if (i < nvec) r[u] = load<T, kLoad>(a + i);
  }
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    std::size_t i = base + std::size_t(u) * kTh;
    if (i < nvec) {
#pragma unroll
      for (int k = 0; k < Vec<T>::kN; ++k) r[u].v[k] = f(r[u].v[k]);
      store<T, kStore>(y + i, r[u]);
    }
  }
}

template <int kU, int kTh, int kLoad, int kStore>
void scale_variant(const float* a, float* y, std::size_t n, cudaStream_t s) {
  std::size_t nvec = n / 4;
  unsigned grid = unsigned((nvec + kTh * kU - 1) / (kTh * kU));
  unary_kernel<float, ScaleF, kU, kTh, kLoad, kStore><<<grid, kTh, 0, s>>>(
      reinterpret_cast<const Vec<float>*>(a), reinterpret_cast<Vec<float>*>(y), nvec, ScaleF{});
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    triad_kernel(const Vec<T>* b, const Vec<T>* c, Vec<T>* y, std::size_t nvec) {
  std::size_t base = std::size_t(blockIdx.x) * kThreads * kUnroll + threadIdx.x;
  Vec<T> rb[kUnroll], rc[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    std::size_t i = base + std::size_t(u) * kThreads;
    if (i < nvec) {
      rb[u] = load(b + i);
      rc[u] = load(c + i);
    }
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    std::size_t i = base + std::size_t(u) * kThreads;
    if (i < nvec) {
#pragma unroll
      for (int k = 0; k < Vec<T>::kN; ++k)
        rb[u].v[k] = from_float<T>(to_float(rb[u].v[k]) + kScale * to_float(rc[u].v[k]));
      store(y + i, rb[u]);
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) fill_kernel(Vec<T>* y, std::size_t nvec) {
  std::size_t base = std::size_t(blockIdx.x) * kThreads * kUnroll + threadIdx.x;
  Vec<T> v;
#pragma unroll
  for (int k = 0; k < Vec<T>::kN; ++k) v.v[k] = from_float<T>(kFill);
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    std::size_t i = base + std::size_t(u) * kThreads;
    if (i < nvec) store(y + i, v);
  }
}

// Elements past the last whole vector (n not a multiple of 16 bytes).
template <class T>
__global__ void tail_kernel(Op op, const T* a, const T* b, const T* c, T* y, std::size_t from,
                            std::size_t n) {
  std::size_t i = from + blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  switch (op) {
    case Op::scale:
      y[i] = from_float<T>(to_float(a[i]) * kScale);
      break;
    case Op::copy:
      y[i] = a[i];
      break;
    case Op::triad:
      y[i] = from_float<T>(to_float(b[i]) + kScale * to_float(c[i]));
      break;
    case Op::write:
      y[i] = from_float<T>(kFill);
      break;
    case Op::read:
      break;
  }
}

__device__ __forceinline__ float block_sum(float v) {
  __shared__ float warp_sums[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.f;
  if (threadIdx.x < 32) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  }
  return v;
}

// Sum: a fixed grid strides over the input (fp32 accumulation), one partial per block, then one
// block adds the partials. Deterministic: no atomics.
template <class T>
__global__ void __launch_bounds__(kThreads)
    sum_kernel(const Vec<T>* a, const T* tail, std::size_t nvec, std::size_t n, float* partials) {
  float acc[kSumUnroll] = {};
  const std::size_t stride = std::size_t(gridDim.x) * kThreads * kSumUnroll;
  for (std::size_t base = std::size_t(blockIdx.x) * kThreads * kSumUnroll + threadIdx.x;
       base < nvec; base += stride) {
    Vec<T> r[kSumUnroll];
#pragma unroll
    for (int u = 0; u < kSumUnroll; ++u) {
      std::size_t i = base + std::size_t(u) * kThreads;
      if (i < nvec) r[u] = load(a + i);
    }
#pragma unroll
    for (int u = 0; u < kSumUnroll; ++u) {
      std::size_t i = base + std::size_t(u) * kThreads;
      if (i < nvec) {
#pragma unroll
        for (int k = 0; k < Vec<T>::kN; ++k) acc[u] += to_float(r[u].v[k]);
      }
    }
  }
  float v = 0;
#pragma unroll
  for (int u = 0; u < kSumUnroll; ++u) v += acc[u];
  if (blockIdx.x == 0) {
    for (std::size_t i = nvec * Vec<T>::kN + threadIdx.x; i < n; i += kThreads)
      v += to_float(tail[i]);
  }
  v = block_sum(v);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

__global__ void __launch_bounds__(kThreads) sum_partials_kernel(float* partials, int count) {
  float v = 0;
  for (int i = threadIdx.x; i < count; i += kThreads) v += partials[i];
  v = block_sum(v);
  __syncthreads();
  if (threadIdx.x == 0) partials[0] = v;
}

unsigned tiles(std::size_t nvec) {
  return unsigned((nvec + kThreads * kUnroll - 1) / (kThreads * kUnroll));
}

template <class T>
void launch_typed(Op op, const Operands& x, std::size_t n, cudaStream_t s) {
  const std::size_t nvec = n / Vec<T>::kN, done = nvec * Vec<T>::kN;
  auto va = static_cast<const Vec<T>*>(x.a);
  auto vy = static_cast<Vec<T>*>(x.y);
  if (op == Op::read) {
    sum_kernel<T>
        <<<kReduceBlocks, kThreads, 0, s>>>(va, static_cast<const T*>(x.a), nvec, n, x.partials);
    sum_partials_kernel<<<1, kThreads, 0, s>>>(x.partials, kReduceBlocks);
    XF_CUDA_CHECK_LAUNCH();
    return;
  }
  if (nvec > 0) {
    switch (op) {
      case Op::scale:
        unary_kernel<T><<<tiles(nvec), kThreads, 0, s>>>(va, vy, nvec, ScaleF{});
        break;
      case Op::copy:
        unary_kernel<T><<<tiles(nvec), kThreads, 0, s>>>(va, vy, nvec, CopyF{});
        break;
      case Op::triad:
        triad_kernel<T><<<tiles(nvec), kThreads, 0, s>>>(static_cast<const Vec<T>*>(x.b),
                                                         static_cast<const Vec<T>*>(x.c), vy, nvec);
        break;
      case Op::write:
        fill_kernel<T><<<tiles(nvec), kThreads, 0, s>>>(vy, nvec);
        break;
      case Op::read:
        break;
    }
  }
  if (done < n) {
    tail_kernel<T><<<unsigned((n - done + 255) / 256), 256, 0, s>>>(
        op, static_cast<const T*>(x.a), static_cast<const T*>(x.b), static_cast<const T*>(x.c),
        static_cast<T*>(x.y), done, n);
  }
  XF_CUDA_CHECK_LAUNCH();
}

// ---- checking, in float64 -------------------------------------------------------------------

template <class T>
__device__ double to_d(T v) {
  return double(to_float(v));
}

// Unit roundoff of T, doubled for margin: the result is rounded once from float.
template <class T>
__host__ __device__ constexpr double roundoff() {
  return sizeof(T) == 4 ? 1.2e-7 : 8e-3;  // fp32 2^-24, bf16 2^-8 (x2)
}
template <>
__host__ __device__ constexpr double roundoff<__half>() {
  return 1e-3;  // 2^-11 (x2)
}
// Half the spacing of subnormals: near zero, rounding error is absolute, not relative.
template <class T>
__host__ __device__ constexpr double subnormal_step() {
  return 1e-38;
}
template <>
__host__ __device__ constexpr double subnormal_step<__half>() {
  return 3e-8;  // fp16's smallest subnormal is 2^-24 = 5.96e-8
}

template <class T>
__global__ void check_kernel(Op op, const T* a, const T* b, const T* c, const T* y, std::size_t n,
                             unsigned long long* bad) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    double ref = 0, magnitude = 0;  // magnitude bounds float rounding inside the operation
    switch (op) {
      case Op::scale:
        ref = to_d(a[i]) * double(kScale), magnitude = fabs(ref);
        break;
      case Op::copy:
        ref = to_d(a[i]);
        break;
      case Op::triad:
        ref = to_d(b[i]) + double(kScale) * to_d(c[i]);
        magnitude = fabs(to_d(b[i])) + fabs(double(kScale) * to_d(c[i]));
        break;
      case Op::write:
        ref = double(kFill);
        break;
      case Op::read:
        break;
    }
    double got = to_d(y[i]);
    double tol = op == Op::copy || op == Op::write
                     ? 0.0
                     : roundoff<T>() * fabs(ref) + 1.2e-7 * magnitude + subnormal_step<T>();
    if (!(fabs(got - ref) <= tol)) ++local;  // NaN (poison) counts as a mismatch
  }
  if (local) atomicAdd(bad, local);
}

template <class T>
__global__ void sum_reference_kernel(const T* a, std::size_t n, double* sums /* [sum, sum|x|] */) {
  double s = 0, s_abs = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    double v = to_d(a[i]);
    s += v;
    s_abs += fabs(v);
  }
  atomicAdd(&sums[0], s);
  atomicAdd(&sums[1], s_abs);
}

template <class T>
std::size_t count_typed(Op op, const Operands& x, std::size_t n, cudaStream_t s) {
  void* scratch = nullptr;
  XF_CUDA_CHECK(cudaMallocAsync(&scratch, 16, s));
  XF_CUDA_CHECK(cudaMemsetAsync(scratch, 0, 16, s));
  std::size_t bad = 0;
  if (op == Op::read) {
    auto sums = static_cast<double*>(scratch);
    sum_reference_kernel<T><<<1024, 256, 0, s>>>(static_cast<const T*>(x.a), n, sums);
    XF_CUDA_CHECK_LAUNCH();
    double host[2] = {};
    float got = 0;
    XF_CUDA_CHECK(cudaMemcpyAsync(host, sums, sizeof host, cudaMemcpyDeviceToHost, s));
    XF_CUDA_CHECK(cudaMemcpyAsync(&got, x.partials, sizeof got, cudaMemcpyDeviceToHost, s));
    XF_CUDA_CHECK(cudaStreamSynchronize(s));
    // fp32 accumulation error grows with the sum of magnitudes, not with the (cancelling) sum.
    bad = !(fabs(double(got) - host[0]) <= 1e-5 * host[1]);
  } else {
    auto counter = static_cast<unsigned long long*>(scratch);
    check_kernel<T><<<1024, 256, 0, s>>>(op, static_cast<const T*>(x.a), static_cast<const T*>(x.b),
                                         static_cast<const T*>(x.c), static_cast<const T*>(x.y), n,
                                         counter);
    XF_CUDA_CHECK_LAUNCH();
    unsigned long long host = 0;
    XF_CUDA_CHECK(cudaMemcpyAsync(&host, counter, sizeof host, cudaMemcpyDeviceToHost, s));
    XF_CUDA_CHECK(cudaStreamSynchronize(s));
    bad = std::size_t(host);
  }
  XF_CUDA_CHECK(cudaFreeAsync(scratch, s));
  return bad;
}

}  // namespace

std::size_t reduction_partials() { return kReduceBlocks; }

// Variants of fp32 scale for tuning (tests/vector's disabled Tune test times them on the GPU).
int tuning_variants() { return 5; }
const char* launch_tuning_variant(int v, const float* a, float* y, std::size_t n, cudaStream_t s) {
  switch (v) {
    case 0:
      scale_variant<4, 256, 0, 0>(a, y, n, s);
      return "u4 t256 ldcs stcs";
    case 1:
      scale_variant<2, 512, 1, 0>(a, y, n, s);
      return "u2 t512 ldnc.L2::256B stcs";
    case 2:
      scale_variant<1, 1024, 1, 0>(a, y, n, s);
      return "u1 t1024 ldnc.L2::256B stcs";
    case 3:
      scale_variant<1, 1024, 0, 0>(a, y, n, s);
      return "u1 t1024 ldcs stcs (production)";
    case 4:
      scale_variant<1, 1024, 1, 1>(a, y, n, s);
      return "u1 t1024 ldnc.L2::256B st";
  }
  return nullptr;
}

void launch(Op op, Dtype t, const Operands& x, std::size_t n, cudaStream_t stream) {
  switch (t) {
    case Dtype::fp32:
      return launch_typed<float>(op, x, n, stream);
    case Dtype::fp16:
      return launch_typed<__half>(op, x, n, stream);
    case Dtype::bf16:
      return launch_typed<__nv_bfloat16>(op, x, n, stream);
    default:
      XF_THROW(InvalidArgument, std::string("Vector has no ") + xfbench::to_string(t) + " kernels");
  }
}

std::size_t count_mismatches(Op op, Dtype t, const Operands& x, std::size_t n,
                             cudaStream_t stream) {
  switch (t) {
    case Dtype::fp32:
      return count_typed<float>(op, x, n, stream);
    case Dtype::fp16:
      return count_typed<__half>(op, x, n, stream);
    case Dtype::bf16:
      return count_typed<__nv_bfloat16>(op, x, n, stream);
    default:
      XF_THROW(InvalidArgument, std::string("Vector has no ") + xfbench::to_string(t) + " kernels");
  }
}

}  // namespace xfbench::vector
