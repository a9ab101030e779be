// The FP8 cast that also writes the transpose, as a pass any producer of a linear layer's input or
// gradient can run (fp8.cu's fp8_cast_transpose from bf16; the GELU's backward from its gradient):
// 64 x 64 tiles of [rows, cols], 256 threads a block, each block down its strip of 64 columns.
// op.value(offset, column, float(&)[8]) gives each 8-wide vector; Fp8Store casts it (amax and
// overflow carried along) into q, row-major (where store.q is set), and into a tile in shared
// memory, from which qt [cols, rows] gets 16-byte column runs. With `partials`, each block also
// leaves the column sums of the values it saw, [gridDim.y][cols] in fp32, for the fixed-order sum
// of a bias gradient (reduce.cuh): the values' sum, not their FP8 roundings'.
// An op with kParts = 2 writes two matrices side by side, [rows, 2·cols] (the gated FFN's gradient
// dgate | dlinear): op.parts(offset, column, float(&)[2][8]) gives a vector of each from one
// vector of its [rows, cols] domain, and qt [2·cols, rows] is the whole output's transpose.
// Internal to kernels/; include only from .cu files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/detail/fp8_store.cuh"
#include "kernels/detail/reduce.cuh"

namespace xfbench::kernels::detail {

constexpr int kTile = 64;
using Tile = std::uint8_t[kTile][kTile + 16];  // rows padded: the column reads spread over banks

// The tile at (r0, c0) of a [rows, cols] matrix into qt [cols, rows]: each of 256 threads stores
// one 16-byte column run.
__device__ __forceinline__ void store_column_run(std::uint8_t* qt, const Tile& tile, int r0, int c0,
                                                 int rows, int cols) {
  const int c = threadIdx.x / (kTile / 16), r = (threadIdx.x % (kTile / 16)) * 16;
  if (c0 + c >= cols || r0 + r >= rows) return;
  union {
    uint4 raw;
    std::uint8_t b[16];
  } u;
#pragma unroll
  for (int j = 0; j < 16; ++j) u.b[j] = tile[r + j][c];
  *reinterpret_cast<uint4*>(qt + std::size_t(c0 + c) * rows + r0 + r) = u.raw;
}

// How many matrices an op writes side by side (Op::kParts, else 1).
template <class Op, class = void>
struct PartsOf : std::integral_constant<int, 1> {};
template <class Op>
struct PartsOf<Op, std::void_t<decltype(Op::kParts)>> : std::integral_constant<int, Op::kParts> {};

// Thread t casts the vectors at rows t/8 and t/8 + 32 of each tile, columns (t % 8)·8 to +7: its
// columns stay fixed, so its column sums stay in registers until the block adds them up.
template <class Op>
__global__ __launch_bounds__(256) void cast_transpose_tiles_kernel(Op op, std::uint8_t* qt,
                                                                   int rows, int cols,
                                                                   Fp8Store store,
                                                                   float* partials) {
  constexpr int P = PartsOf<Op>::value;
  static_assert(P == 1 || P == 2, "one matrix or two side by side");
  __shared__ Tile tile[P];
  const float s = store.scale_value();
  const int c0 = blockIdx.x * kTile, row = threadIdx.x / 8, c = (threadIdx.x % 8) * kVec;
  float m = 0.f, acc[kVec] = {};
  unsigned long long over = 0;
  for (int r0 = blockIdx.y * kTile; r0 < rows; r0 += gridDim.y * kTile) {
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int r = row + k * 32;
      if (r0 + r >= rows || c0 + c >= cols) continue;
      const std::size_t at = std::size_t(r0 + r) * cols + c0 + c;
      float v[P][kVec];
      if constexpr (P == 1)
        op.value(at, c0 + c, v[0]);
      else
        op.parts(at, c0 + c, v);
      if (store.measure) {
#pragma unroll
        for (int p = 0; p < P; ++p)
#pragma unroll
          for (int j = 0; j < kVec; ++j) m = fmaxf(m, fabsf(v[p][j]));
        continue;
      }
      if (partials)
#pragma unroll
        for (int j = 0; j < kVec; ++j) acc[j] += v[0][j];
#pragma unroll
      for (int p = 0; p < P; ++p) {
        const uint2 bytes = fp8_cast8(v[p], s, store.clip, store.f, m, over);
        if (store.q)
          *reinterpret_cast<uint2*>(store.q + std::size_t(r0 + r) * P * cols + p * cols + c0 + c) =
              bytes;
        *reinterpret_cast<uint2*>(&tile[p][r][c]) = bytes;
      }
    }
    if (store.measure || !qt) continue;
    __syncthreads();
#pragma unroll
    for (int p = 0; p < P; ++p)
      store_column_run(qt + std::size_t(p) * cols * rows, tile[p], r0, c0, rows, cols);
    if (r0 + gridDim.y * kTile < rows) __syncthreads();  // the tile is written again
  }
  store.finish(m, over, s);
  if (!partials || store.measure) return;
  __shared__ float sums[32][kTile];  // [thread row][column]
#pragma unroll
  for (int j = 0; j < kVec; ++j) sums[row][c + j] = acc[j];
  __syncthreads();
  if (threadIdx.x < kTile && c0 + int(threadIdx.x) < cols) {
    float t = 0.f;
    for (int q = 0; q < 32; ++q) t += sums[q][threadIdx.x];  // fixed order
    partials[std::size_t(blockIdx.y) * cols + c0 + threadIdx.x] = t;
  }
}

// Runs the tile pass with `store` (one launch; fp8_produce or the caller runs the launches a
// recipe needs). partials (nullable): the blocks' column sums, `row_groups()` rows of cols.
struct CastTransposeTiles {
  int rows = 0, cols = 0;
  bool sums = false;
  // Blocks down the rows: about four waves of blocks in all (~8 resident per SM; a block that
  // takes a few tiles in turn spends less of its time on its amax and column sums), at most one
  // per tile and as many as the bias gradients' scratch holds partial rows of (reduce.cuh).
  int row_groups() const {
    const int tiles = (rows + kTile - 1) / kTile, strips = (cols + kTile - 1) / kTile;
    const int waves = 4 * 8 * partial_blocks() / 2;  // partial_blocks(): two per SM
    const int g = std::clamp((waves + strips - 1) / strips, 1, tiles);
    return sums ? std::min(g, kMaxPartialArrays * partial_blocks()) : std::min(g, 65535);
  }
  template <class Op>
  void launch(const Op& op, std::uint8_t* qt, const Fp8Store& store, float* partials,
              cudaStream_t stream) const {
    const dim3 grid((cols + kTile - 1) / kTile, row_groups());
    cast_transpose_tiles_kernel<Op>
        <<<grid, 256, 0, stream>>>(op, qt, rows, cols, store, sums ? partials : nullptr);
    XF_CUDA_CHECK_LAUNCH();
  }
  // dbias [cols] = the launch's column sums (its partials), in a fixed order.
  template <class T>
  void sum(T* dbias, const float* partials, cudaStream_t stream) const {
    PartialOutputs<T> outs;
    outs.out[0] = dbias;
    sum_partials(outs, partials, row_groups(), cols, stream);
  }
};

// A producer's output as FP8 with its transpose: the tile pass of `op` over [rows, cols] into out.q
// (and out.qt where set; with two parts, [rows, 2·cols] and its transpose) as out's recipe needs
// (fp8_produce), and dbias (nullable, one part) from its column sums, with
// `scratch` of partial_scratch_bytes(cols) (a linear layer's input gradient and bias gradient in
// one pass).
template <class T, class Op>
void produce_cast_transpose(const Op& op, int rows, int cols, const Fp8Output& out, T* dbias,
                            float* scratch, cudaStream_t stream) {
  if (out.qt && rows % 16)
    XF_THROW(InvalidArgument, "a transposed FP8 output needs rows % 16 == 0");
  if (out.qt) require_aligned(out.qt, "a transposed FP8 output");
  if (dbias && !scratch) XF_THROW(InvalidArgument, "a bias gradient without scratch");
  if (dbias && PartsOf<Op>::value != 1) XF_THROW(InvalidArgument, "a bias gradient of two parts");
  const CastTransposeTiles tiles{rows, cols, dbias != nullptr};
  fp8_produce(out, stream, [&](const Fp8Store& store) {
    tiles.launch(op, static_cast<std::uint8_t*>(out.qt), store, scratch, stream);
  });
  if (dbias) tiles.sum(dbias, scratch, stream);
}

}  // namespace xfbench::kernels::detail
