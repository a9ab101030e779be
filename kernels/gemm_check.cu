// Float64 reference kernels for GEMM results (gemm.hpp, "Checking results"): a product's value
// at sampled positions in double precision from the operands as stored, the GPU's values gathered
// at the same positions, and a count of non-finite values in a buffer.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "kernels/gemm.hpp"
#include "xfbench/convert.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

namespace {

template <class T>
__device__ __forceinline__ double widen(T v) {
  return double(to_float(v));
}
template <>
__device__ __forceinline__ double widen<double>(double v) {
  return v;
}

struct RefArgs {
  bool trans_a, trans_b;
  std::int64_t k, lda, ldb, sa, sb;
};

// One block per sample: threads split k, partial sums meet in shared memory.
template <class TA, class TB>
__global__ void reference_kernel(RefArgs g, const TA* a, const TB* b, const GemmSample* samples,
                                 double* out) {
  __shared__ double partial[256];
  const GemmSample s = samples[blockIdx.x];
  const TA* pa = a + s.batch * g.sa;
  const TB* pb = b + s.batch * g.sb;
  double acc = 0;
  for (std::int64_t kk = threadIdx.x; kk < g.k; kk += blockDim.x) {
    double x = widen(g.trans_a ? pa[kk * g.lda + s.row] : pa[s.row * g.lda + kk]);
    double y = widen(g.trans_b ? pb[s.col * g.ldb + kk] : pb[kk * g.ldb + s.col]);
    acc += x * y;
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

template <class T>
__global__ void gather_kernel(const T* c, std::int64_t ldc, std::int64_t sc,
                              const GemmSample* samples, int count, double* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    const GemmSample s = samples[i];
    out[i] = widen(c[s.batch * sc + s.row * ldc + s.col]);
  }
}

template <class Bits, Bits kExpMask>
__global__ void nonfinite_kernel(const Bits* data, std::size_t n, unsigned long long* counter) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    mine += (data[i] & kExpMask) == kExpMask;
  }
  if (mine) atomicAdd(counter, mine);
}

// e4m3 has no infinity; NaN is S.1111.111.
__global__ void nonfinite_e4m3_kernel(const std::uint8_t* data, std::size_t n,
                                      unsigned long long* counter) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    mine += (data[i] & 0x7F) == 0x7F;
  }
  if (mine) atomicAdd(counter, mine);
}

template <class TA, class TB>
void launch_reference(cudaStream_t stream, const GemmDesc& d, const void* a, const void* b,
                      const GemmSample* samples, int count, double* out) {
  RefArgs g{d.trans_a, d.trans_b, d.k, d.a_ld(), d.b_ld(), d.a_stride(), d.b_stride()};
  reference_kernel<TA, TB><<<count, 256, 0, stream>>>(g, static_cast<const TA*>(a),
                                                      static_cast<const TB*>(b), samples, out);
  XF_CUDA_CHECK_LAUNCH();
}

// Calls f with a null pointer of element type t's C++ type.
template <class F>
void with_type(ElemType t, F&& f) {
  switch (t) {
    case ElemType::f32:
      return f(static_cast<float*>(nullptr));
    case ElemType::f16:
      return f(static_cast<__half*>(nullptr));
    case ElemType::bf16:
      return f(static_cast<__nv_bfloat16*>(nullptr));
    case ElemType::e4m3:
      return f(static_cast<__nv_fp8_e4m3*>(nullptr));
    case ElemType::e5m2:
      return f(static_cast<__nv_fp8_e5m2*>(nullptr));
    case ElemType::f64:
      return f(static_cast<double*>(nullptr));
  }
}

template <class T>
void launch_gather(cudaStream_t stream, const GemmDesc& d, const void* c, const GemmSample* samples,
                   int count, double* out) {
  gather_kernel<T><<<(count + 127) / 128, 128, 0, stream>>>(static_cast<const T*>(c), d.c_ld(),
                                                            d.c_stride(), samples, count, out);
  XF_CUDA_CHECK_LAUNCH();
}

}  // namespace

void gemm_reference_at(cudaStream_t stream, const GemmDesc& d, const void* a, const void* b,
                       const GemmSample* samples, int count, double* out) {
  if (count <= 0) return;
  if (d.a_type() == d.b_type()) {  // one instantiation per type
    return with_type(d.a_type(), [&](auto* t) {
      using T = std::remove_pointer_t<decltype(t)>;
      launch_reference<T, T>(stream, d, a, b, samples, count, out);
    });
  }
  if (d.a_e5m2)
    return launch_reference<__nv_fp8_e5m2, __nv_fp8_e4m3>(stream, d, a, b, samples, count, out);
  return launch_reference<__nv_fp8_e4m3, __nv_fp8_e5m2>(stream, d, a, b, samples, count, out);
}

void gemm_gather_at(cudaStream_t stream, const GemmDesc& d, const void* c,
                    const GemmSample* samples, int count, double* out) {
  if (count <= 0) return;
  with_type(d.out_type(), [&](auto* t) {
    launch_gather<std::remove_pointer_t<decltype(t)>>(stream, d, c, samples, count, out);
  });
}

void count_nonfinite(cudaStream_t stream, ElemType t, const void* data, std::size_t count,
                     unsigned long long* counter) {
  if (count == 0) return;
  const unsigned blocks = unsigned(std::min<std::size_t>((count + 255) / 256, 4096));
  switch (t) {
    case ElemType::f32:
      nonfinite_kernel<std::uint32_t, 0x7F800000u>
          <<<blocks, 256, 0, stream>>>(static_cast<const std::uint32_t*>(data), count, counter);
      break;
    case ElemType::f16:
      nonfinite_kernel<std::uint16_t, 0x7C00>
          <<<blocks, 256, 0, stream>>>(static_cast<const std::uint16_t*>(data), count, counter);
      break;
    case ElemType::bf16:
      nonfinite_kernel<std::uint16_t, 0x7F80>
          <<<blocks, 256, 0, stream>>>(static_cast<const std::uint16_t*>(data), count, counter);
      break;
    case ElemType::e4m3:
      nonfinite_e4m3_kernel<<<blocks, 256, 0, stream>>>(static_cast<const std::uint8_t*>(data),
                                                        count, counter);
      break;
    case ElemType::e5m2:  // IEEE-like: exponent all ones is infinity or NaN
      nonfinite_kernel<std::uint8_t, std::uint8_t(0x7C)>
          <<<blocks, 256, 0, stream>>>(static_cast<const std::uint8_t*>(data), count, counter);
      break;
    case ElemType::f64:
      nonfinite_kernel<std::uint64_t, 0x7FF0000000000000ull>
          <<<blocks, 256, 0, stream>>>(static_cast<const std::uint64_t*>(data), count, counter);
      break;
  }
  XF_CUDA_CHECK_LAUNCH();
}

}  // namespace xfbench::kernels
