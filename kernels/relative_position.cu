// T5's relative position bias on the GPU (see relative_position.hpp): a gather from the table, and
// its adjoint reduced along diagonals, where the bucket is constant.
#include <string>
#include <vector>

#include "kernels/detail/pack.cuh"  // vec.cuh, and fp32 storage (tf32/fp32 steps)
#include "kernels/relative_position.hpp"

namespace xfbench::kernels {
namespace {

using detail::kVec;

constexpr int kThreads = 256;
constexpr int kChunkRows = 64;  // rows of dbias one thread of the first pass sums
constexpr int kMaxDiagonals =
    12 * 1024;  // the second pass keeps a head's diagonals in shared memory

// One block per (query row i, head h); each thread writes 8 consecutive keys.
template <class T>
__global__ __launch_bounds__(kThreads) void bias_forward_kernel(T* bias, const T* table,
                                                                const int* buckets, int heads,
                                                                int sq, int sk) {
  const int i = blockIdx.x, h = blockIdx.y;
  T* row = bias + (static_cast<size_t>(h) * sq + i) * sk;
  const int* diag = buckets + (sq - 1 - i);  // diag[j] = bucket(j - i)
  for (int j0 = threadIdx.x * kVec; j0 < sk; j0 += kThreads * kVec) {
    float v[kVec];  // T values: widened and stored back exactly
#pragma unroll
    for (int k = 0; k < kVec; ++k) v[k] = detail::to_float(table[diag[j0 + k] * heads + h]);
    detail::store8(row + j0, v);
  }
}

// partial[c][h][d] = sum over rows i of chunk c of dbias[h, i, i + d - (sq - 1)]. At each step i
// the threads of a warp read neighbouring keys of one row.
template <class T>
__global__ __launch_bounds__(kThreads) void diagonal_sums_kernel(float* partial, const T* dbias,
                                                                 int heads, int sq, int sk) {
  const int diagonals = sq + sk - 1;
  const int d = blockIdx.x * kThreads + threadIdx.x, h = blockIdx.y, c = blockIdx.z;
  if (d >= diagonals) return;
  const int offset = d - (sq - 1);  // j - i
  const int first = max(c * kChunkRows, -offset),
            last = min(min((c + 1) * kChunkRows, sq), sk - offset);
  const T* head = dbias + static_cast<size_t>(h) * sq * sk;
  float s = 0.f;
  for (int i = first; i < last; ++i)
    s += detail::to_float(head[static_cast<size_t>(i) * sk + i + offset]);
  partial[(static_cast<size_t>(c) * heads + h) * diagonals + d] = s;
}

// One block per head: each diagonal's chunks in order, then each bucket's diagonals in order.
template <class T>
__global__ __launch_bounds__(kThreads) void bucket_sums_kernel(T* dtable, const float* partial,
                                                               const int* buckets, int heads,
                                                               int diagonals, int chunks,
                                                               int num_buckets) {
  extern __shared__ float diag[];
  const int h = blockIdx.x;
  for (int d = threadIdx.x; d < diagonals; d += kThreads) {
    float s = 0.f;
    for (int c = 0; c < chunks; ++c)
      s += partial[(static_cast<size_t>(c) * heads + h) * diagonals + d];
    diag[d] = s;
  }
  __syncthreads();
  for (int k = threadIdx.x; k < num_buckets; k += kThreads) {
    float s = 0.f;
    for (int d = 0; d < diagonals; ++d)
      if (buckets[d] == k) s += diag[d];
    dtable[k * heads + h] = detail::from_float<T>(s);
  }
}

int chunks_of(int sq) { return (sq + kChunkRows - 1) / kChunkRows; }

}  // namespace

RelativePositionBias::RelativePositionBias(int heads, int sq, int sk, bool bidirectional,
                                           int num_buckets, int max_distance)
    : heads_(heads), sq_(sq), sk_(sk), num_buckets_(num_buckets) {
  if (heads < 1 || sq < 1 || sk < 1 || sk % kVec != 0 || sq + sk - 1 > kMaxDiagonals)
    XF_THROW(InvalidArgument,
             "T5 relative position bias: heads " + std::to_string(heads) + ", sq " +
                 std::to_string(sq) + ", sk " + std::to_string(sk) +
                 " (need sk % 8 == 0 and sq + sk - 1 <= " + std::to_string(kMaxDiagonals) + ")");
  std::vector<int> buckets(sq + sk - 1);
  for (int d = 0; d < sq + sk - 1; ++d)  // throws on a bad bucket setting
    buckets[d] =
        t5_relative_position_bucket(d - (sq - 1), bidirectional, num_buckets, max_distance);
  XF_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&buckets_), buckets.size() * sizeof(int)));
  XF_CUDA_CHECK(
      cudaMemcpy(buckets_, buckets.data(), buckets.size() * sizeof(int), cudaMemcpyHostToDevice));
}

RelativePositionBias::~RelativePositionBias() { cudaFree(buckets_); }

std::size_t RelativePositionBias::bias_elements() const {
  return static_cast<std::size_t>(heads_) * sq_ * sk_;
}
std::size_t RelativePositionBias::table_elements() const {
  return static_cast<std::size_t>(num_buckets_) * heads_;
}
std::size_t RelativePositionBias::scratch_bytes() const {
  return sizeof(float) * static_cast<std::size_t>(chunks_of(sq_)) * heads_ * (sq_ + sk_ - 1);
}

template <class T>
void RelativePositionBias::forward(T* bias, const T* table, cudaStream_t stream) const {
  if (!bias || !table) XF_THROW(InvalidArgument, "T5 relative position bias forward: null tensor");
  detail::require_aligned(bias, "T5 relative position bias");
  bias_forward_kernel<T>
      <<<dim3(sq_, heads_), kThreads, 0, stream>>>(bias, table, buckets_, heads_, sq_, sk_);
  XF_CUDA_CHECK_LAUNCH();
}

template <class T>
void RelativePositionBias::backward(T* dtable, const T* dbias, void* scratch,
                                    cudaStream_t stream) const {
  if (!dtable || !dbias || !scratch)
    XF_THROW(InvalidArgument, "T5 relative position bias backward: null tensor");
  const int diagonals = sq_ + sk_ - 1, chunks = chunks_of(sq_);
  float* partial = static_cast<float*>(scratch);
  diagonal_sums_kernel<T>
      <<<dim3((diagonals + kThreads - 1) / kThreads, heads_, chunks), kThreads, 0, stream>>>(
          partial, dbias, heads_, sq_, sk_);
  XF_CUDA_CHECK_LAUNCH();
  bucket_sums_kernel<T><<<heads_, kThreads, diagonals * sizeof(float), stream>>>(
      dtable, partial, buckets_, heads_, diagonals, chunks, num_buckets_);
  XF_CUDA_CHECK_LAUNCH();
}

template <class T>
void RelativePositionBias::backward_from_diagonals(T* dtable, const float* diagonals,
                                                   cudaStream_t stream) const {
  if (!dtable || !diagonals)
    XF_THROW(InvalidArgument, "T5 relative position bias backward: null tensor");
  const int count = sq_ + sk_ - 1;
  bucket_sums_kernel<T><<<heads_, kThreads, count * sizeof(float), stream>>>(
      dtable, diagonals, buckets_, heads_, count, 1, num_buckets_);
  XF_CUDA_CHECK_LAUNCH();
}

#define XF_INSTANTIATE(T)                                                                        \
  template void RelativePositionBias::forward<T>(T*, const T*, cudaStream_t) const;              \
  template void RelativePositionBias::backward<T>(T*, const T*, void*, cudaStream_t) const;      \
  template void RelativePositionBias::backward_from_diagonals<T>(T*, const float*, cudaStream_t) \
      const;
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
