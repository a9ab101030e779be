// Kernel skeletons for [N, C] element-wise work on 16-byte vectors, parameterised by a functor:
//   for_each_vector:  op(row_offset_in_elements, column, float(&)[8]) for every vector, flat grid.
//   for_each_vector_colsum: the same per row, and per-block column sums of the values op leaves in
//   its array (partials [G][C]) for the deterministic two-pass bias gradients (reduce.cuh).
//   for_each_vector_fp8: op.value(row_offset, column, float(&)[8]) computes each vector and an
//   FP8 output (fp8_store.cuh) takes it: a producer whose output an FP8 product reads next
//   (for_each_vector_write_fp8: op.write_fp8 stores its outputs itself, e.g. two per vector).
// Internal to kernels/; include only from .cu files.
#pragma once

#include <algorithm>

#include "kernels/detail/fp8_store.cuh"
#include "kernels/detail/reduce.cuh"
#include "kernels/detail/vec.cuh"

namespace xfbench::kernels::detail {

constexpr int kEwThreads = 256;
constexpr int kMaxColsumWidth = 16384;  // C <= 256 threads * 8 vectors * 8

constexpr int kFlatThreads = 1024;  // blocks of the flat grid (plugins/vector/TUNING.md)

// Column of a flat vector index without a 64-bit division: i = q·V + column, q = ⌊i·magic /
// 2^shift⌋ with magic = ⌈2^shift / V⌉, shift = 32 + ⌈log2 V⌉ (exact for every 32-bit i; the
// product takes up to 65 bits, so its high word is used too).
struct ColumnOf {
  unsigned V = 1;
  unsigned long long magic = 1ull << 32;
  int shift = 32;
  explicit ColumnOf(unsigned v) : V(v) {
    int s = 0;
    while ((1ull << s) < v) ++s;
    shift = 32 + s;
    magic = ((1ull << shift) + v - 1) / v;
  }
  __host__ __device__ __forceinline__ unsigned operator()(unsigned i) const {
    const unsigned long long lo = i * magic;
#ifdef __CUDA_ARCH__
    const unsigned long long hi = __umul64hi(i, magic);
#else
    const unsigned long long hi = (unsigned __int128)i * magic >> 64;
#endif
    return i - unsigned(hi << (64 - shift) | lo >> shift) * V;
  }
};

// kWide: more than 2^32 vectors, a grid-stride loop with 64-bit indices.
template <class Op, bool kWide>
__global__ __launch_bounds__(kFlatThreads) void for_each_vector_kernel(Op op, size_t vectors,
                                                                       ColumnOf column) {
  float d[kVec];
  if constexpr (!kWide) {
    const unsigned i = blockIdx.x * kFlatThreads + threadIdx.x;
    if (i < vectors) op(size_t(i) * kVec, int(column(i)) * kVec, d);
  } else {
    for (size_t i = blockIdx.x * size_t(kFlatThreads) + threadIdx.x; i < vectors;
         i += size_t(gridDim.x) * kFlatThreads)
      op(i * kVec, int(i % column.V) * kVec, d);
  }
}

// Launch over N rows of C (C % 8 == 0): one vector per thread. Many short blocks keep more
// loads in flight than a grid-stride loop over a GPU-sized grid (plugins/vector/TUNING.md).
template <class Op>
void for_each_vector(const Op& op, size_t N, int C, cudaStream_t stream) {
  const size_t vectors = N * (C / kVec);
  if (vectors == 0) return;
  const ColumnOf column(unsigned(C / kVec));
  const size_t blocks = (vectors + kFlatThreads - 1) / kFlatThreads;
  if (vectors <= 0xffffffffull)
    for_each_vector_kernel<Op, false>
        <<<unsigned(blocks), kFlatThreads, 0, stream>>>(op, vectors, column);
  else
    for_each_vector_kernel<Op, true>
        <<<unsigned(std::min<size_t>(blocks, 0x7fffffff)), kFlatThreads, 0, stream>>>(op, vectors,
                                                                                      column);
  XF_CUDA_CHECK_LAUNCH();
}

// A grid-stride loop (one amax atomic per block): op.write_fp8 computes a vector and hands what
// it writes to the store (Fp8Store::store8, one or more outputs per vector).
template <class Op>
__global__ __launch_bounds__(kEwThreads) void for_each_vector_fp8_kernel(Op op, size_t vectors,
                                                                         unsigned V,
                                                                         Fp8Store store) {
  const float s = store.scale_value();
  float m = 0.f;
  unsigned long long over = 0;
  for (size_t i = blockIdx.x * size_t(kEwThreads) + threadIdx.x; i < vectors;
       i += size_t(gridDim.x) * kEwThreads)
    op.write_fp8(i * kVec, int(i % V) * kVec, store, s, m, over);
  store.finish(m, over, s);
}

// An op with value(offset, column, float(&)[8]) writing one output, as write_fp8 sees it.
template <class Op>
struct WriteValueFp8 {
  Op op;
  __device__ void write_fp8(size_t off, int col, const Fp8Store& store, float s, float& m,
                            unsigned long long& over) const {
    float v[kVec];
    op.value(off, col, v);
    store.store8(off, v, s, m, over);
  }
};

// Launch over N rows of C (C % 8 == 0) writing `out` (its q set; bf16 or fp16 inputs): op.write_fp8
// stores each vector's outputs itself.
template <class Op>
void for_each_vector_write_fp8(const Op& op, size_t N, int C, const Fp8Output& out,
                               cudaStream_t stream) {
  const size_t vectors = N * (C / kVec);
  if (vectors == 0) return;
  const unsigned blocks =
      unsigned(std::min<size_t>((vectors + kEwThreads - 1) / kEwThreads, 8 * 132));
  fp8_produce(out, stream, [&](const Fp8Store& store) {
    for_each_vector_fp8_kernel<Op>
        <<<blocks, kEwThreads, 0, stream>>>(op, vectors, unsigned(C / kVec), store);
    XF_CUDA_CHECK_LAUNCH();
  });
}

// The same for an op whose value(...) is its one output [N, C].
template <class Op>
void for_each_vector_fp8(const Op& op, size_t N, int C, const Fp8Output& out, cudaStream_t stream) {
  for_each_vector_write_fp8(WriteValueFp8<Op>{op}, N, C, out, stream);
}

// A block covers R = 256 / V rows at a time when V = C / 8 <= 256, otherwise one row with VPT
// vectors per thread; each thread's columns are fixed, so its sums stay in registers.
template <int VPT, class Op>
__global__ __launch_bounds__(kEwThreads) void for_each_vector_colsum_kernel(Op op, float* partials,
                                                                            int N, int C) {
  __shared__ float rows_acc[kEwThreads * kVec];  // [R][C], R * C <= 2048
  const int V = C / kVec;
  const int R = V <= kEwThreads ? kEwThreads / V : 1;
  const int sub = V <= kEwThreads ? threadIdx.x / V : 0;
  const int v0 = V <= kEwThreads ? threadIdx.x % V : threadIdx.x;
  float acc[VPT][kVec] = {};
  if (sub < R) {
    for (int r = blockIdx.x * R + sub; r < N; r += gridDim.x * R) {
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int vi = v0 + k * kEwThreads;
        if (vi >= V) continue;
        float d[kVec];
        op(static_cast<size_t>(r) * C + static_cast<size_t>(vi) * kVec, vi * kVec, d);
#pragma unroll
        for (int j = 0; j < kVec; ++j) acc[k][j] += d[j];
      }
    }
  }
  float* out = partials + static_cast<size_t>(blockIdx.x) * C;
  if (R == 1) {
    if (sub >= R) return;  // threads past the row's vectors own no columns
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int vi = v0 + k * kEwThreads;
      if (vi >= V) continue;
#pragma unroll
      for (int j = 0; j < kVec; ++j) out[vi * kVec + j] = acc[k][j];
    }
    return;
  }
  if (sub < R)
#pragma unroll
    for (int j = 0; j < kVec; ++j) rows_acc[sub * C + v0 * kVec + j] = acc[0][j];
  __syncthreads();
  for (int c = threadIdx.x; c < C; c += kEwThreads) {
    float s = 0.f;
    for (int q = 0; q < R; ++q) s += rows_acc[q * C + c];  // fixed order
    out[c] = s;
  }
}

// Runs op over every vector and writes the column sums of its values to colsum (T, [C]).
// The scratch holds kMaxPartialArrays · partial_blocks() partials of C; one array may use all of
// it, so these kernels run up to three times as many blocks (as many as fit on the GPU at once):
// more loads in flight than the two blocks per SM of the norm backward.
template <int VPT, class Op>
int colsum_blocks() {
  int per_sm = 0;
  XF_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, for_each_vector_colsum_kernel<VPT, Op>, kEwThreads, 0));
  const int two_per_sm = partial_blocks();
  return std::max(1, std::min(kMaxPartialArrays * two_per_sm, per_sm * two_per_sm / 2));
}

// Runs op over every vector and writes the column sums of its values to colsum (T, [C]).
template <class T, class Op>
void for_each_vector_colsum(const Op& op, T* colsum, float* scratch, int N, int C,
                            cudaStream_t stream) {
  const int V = C / kVec;
  int G = 0;
  if (V <= kEwThreads) {
    G = colsum_blocks<1, Op>();
    for_each_vector_colsum_kernel<1><<<G, kEwThreads, 0, stream>>>(op, scratch, N, C);
  } else if (V <= 2 * kEwThreads) {
    G = colsum_blocks<2, Op>();
    for_each_vector_colsum_kernel<2><<<G, kEwThreads, 0, stream>>>(op, scratch, N, C);
  } else if (V <= 4 * kEwThreads) {
    G = colsum_blocks<4, Op>();
    for_each_vector_colsum_kernel<4><<<G, kEwThreads, 0, stream>>>(op, scratch, N, C);
  } else {  // a GPT layer of hidden 4096: MLP 16384 wide
    G = colsum_blocks<8, Op>();
    for_each_vector_colsum_kernel<8><<<G, kEwThreads, 0, stream>>>(op, scratch, N, C);
  }
  XF_CUDA_CHECK_LAUNCH();
  PartialOutputs<T> outs;
  outs.out[0] = colsum;
  sum_partials(outs, scratch, G, C, stream);
}

}  // namespace xfbench::kernels::detail
