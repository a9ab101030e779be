// Embedding forward/backward (see embedding.hpp). The backward's word-table gradient:
//   1. cub's stable radix sort of (id, token) pairs: the tokens of each id, in token order;
//   2. scatter: one block per tile of kTile sorted tokens sums each run of equal ids in order; a
//      run inside the tile is its id's whole segment and is added to dword directly (the only
//      writer of that row), a run touching a tile edge that its segment crosses goes to
//      partials[tile][leading or trailing];
//   3. join: the tile where such a segment starts adds its trailing piece and the following
//      tiles' leading pieces in order and adds the sum to dword.
// Every sum has a fixed order, so the result does not depend on scheduling.
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <string>

#include "kernels/detail/pack.cuh"
#include "kernels/embedding.hpp"

namespace xfbench::kernels {
namespace {

using detail::kPack;

constexpr int kTile = 32;        // sorted tokens per scatter block
constexpr int kBatch = 8;        // rows a scatter thread loads at once
constexpr int kColThreads = 32;  // column packs per block of the position/type kernel
constexpr int kRowThreads = 8;   // its rows of threads over the batch (or positions)

template <class T>
__device__ __forceinline__ void add_pack(float (&acc)[kPack<T>], const T* p) {
  float v[kPack<T>];
  detail::load_pack(v, p);
#pragma unroll
  for (int j = 0; j < kPack<T>; ++j) acc[j] += v[j];
}

// row += acc (read, add in fp32, round once).
template <class T>
__device__ __forceinline__ void accumulate_row(T* row, const float (&acc)[kPack<T>]) {
  float v[kPack<T>];
  detail::load_pack(v, row);
#pragma unroll
  for (int j = 0; j < kPack<T>; ++j) v[j] += acc[j];
  detail::store_pack(row, v);
}

template <class T>
__global__ void embedding_forward_kernel(T* out, const int* ids, const int* type_ids, const T* word,
                                         const T* position, const T* type, int S, int C,
                                         std::size_t packs) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= packs) return;
  const int per_row = C / kPack<T>;
  const std::size_t row = i / per_row;
  const int c = int(i % per_row) * kPack<T>;
  float v[kPack<T>];
  detail::load_pack(v, word + std::size_t(ids[row]) * C + c);
  if (position) add_pack<T>(v, position + std::size_t(row % S) * C + c);
  if (type) add_pack<T>(v, type + std::size_t(type_ids[row]) * C + c);
  detail::store_pack(out + row * C + c, v);
}

// Step 2. Block = C / kPack threads, one pack of columns each; tile t covers sorted[t·kTile ...].
template <class T>
__global__ void word_scatter_kernel(T* dword, float* partials, const T* __restrict__ dout,
                                    const int* sorted_ids, const int* sorted_tokens, int N, int C) {
  __shared__ int s_id[kTile], s_token[kTile];
  const int begin = blockIdx.x * kTile, end = min(N, begin + kTile);
  for (int k = threadIdx.x; k < end - begin; k += blockDim.x) {
    s_id[k] = sorted_ids[begin + k];
    s_token[k] = sorted_tokens[begin + k];
  }
  __syncthreads();
  const int prev_id = begin > 0 ? sorted_ids[begin - 1] : -1;
  const int next_id = end < N ? sorted_ids[end] : -1;
  const int c = threadIdx.x * kPack<T>;
  float acc[kPack<T>] = {};
  int run_start = begin;
  for (int k0 = begin; k0 < end; k0 += kBatch) {
    int4 raw[kBatch];  // the batch's rows loaded together (independent loads in flight)
#pragma unroll
    for (int q = 0; q < kBatch; ++q)
      if (k0 + q < end)
        raw[q] = detail::load_raw(dout + std::size_t(s_token[k0 + q - begin]) * C + c);
#pragma unroll
    for (int q = 0; q < kBatch; ++q) {
      const int k = k0 + q;
      if (k >= end) break;
      float v[kPack<T>];
      detail::unpack<T>(v, raw[q]);
#pragma unroll
      for (int j = 0; j < kPack<T>; ++j) acc[j] += v[j];
      const int id = s_id[k - begin];
      if (k + 1 < end && s_id[k + 1 - begin] == id) continue;
      const bool leading = run_start == begin && id == prev_id;
      const bool trailing = k + 1 == end && id == next_id;
      if (!leading && !trailing) {
        accumulate_row(dword + std::size_t(id) * C + c, acc);
      } else {
        float* piece = partials + (std::size_t(blockIdx.x) * 2 + (leading ? 0 : 1)) * C + c;
#pragma unroll
        for (int j = 0; j < kPack<T>; ++j) piece[j] = acc[j];
      }
#pragma unroll
      for (int j = 0; j < kPack<T>; ++j) acc[j] = 0.f;
      run_start = k + 1;
    }
  }
}

// Step 3. Block per tile: if a segment starts in this tile and crosses its end, sum its pieces.
template <class T>
__global__ void word_join_kernel(T* dword, const float* partials, const int* sorted_ids, int N,
                                 int C) {
  const int tile = blockIdx.x, begin = tile * kTile, end = min(N, begin + kTile);
  if (end >= N) return;
  const int id = sorted_ids[end - 1];
  if (sorted_ids[end] != id) return;                                                // no crossing
  if (begin > 0 && sorted_ids[begin] == id && sorted_ids[begin - 1] == id) return;  // middle
  // The segment's last tile: the first tile after this one whose end leaves the segment, found
  // blockDim tiles at a time (a heavy id's segment may cross hundreds of tiles).
  __shared__ int s_last;
  const int tiles = (N + kTile - 1) / kTile;
  if (threadIdx.x == 0) s_last = tiles - 1;
  __syncthreads();
  for (int base = tile + 1; base < tiles; base += blockDim.x) {
    const int u = base + threadIdx.x, u_end = min(N, (u + 1) * kTile);
    if (u < tiles && (u_end >= N || sorted_ids[u_end] != id)) atomicMin(&s_last, u);
    __syncthreads();
    if (s_last < base + int(blockDim.x)) break;  // later rounds only lower it past this round
  }
  const int last = s_last;
  const int c = threadIdx.x * kPack<T>;
  float acc[kPack<T>];
  const float* trailing = partials + (std::size_t(tile) * 2 + 1) * C + c;
#pragma unroll
  for (int j = 0; j < kPack<T>; ++j) acc[j] = trailing[j];
#pragma unroll 8
  for (int t = tile + 1; t <= last; ++t) {
    const float* leading = partials + std::size_t(t) * 2 * C + c;
#pragma unroll
    for (int j = 0; j < kPack<T>; ++j) acc[j] += leading[j];
  }
  accumulate_row(dword + std::size_t(id) * C + c, acc);
}

// Block (kColThreads, kRowThreads) per position s and kColThreads packs of columns: thread row y
// sums batch items b = y, y + kRowThreads, ...; the rows are then added in order. dposition[s] +=
// the sum; the per-type sums of position s go to type_partials[s][t][C].
template <class T>
__global__ void position_type_kernel(T* dposition, float* type_partials, const T* __restrict__ dout,
                                     const int* type_ids, int B, int S, int C, int num_types) {
  constexpr int P = kPack<T>;
  __shared__ float s_acc[kRowThreads][1 + kMaxTokenTypes][kColThreads * P];
  const int s = blockIdx.x, pack = blockIdx.y * kColThreads + threadIdx.x;
  const bool active = pack * P < C;
  float pos[P] = {}, typ[kMaxTokenTypes][P] = {};
  if (active)
    for (int b = threadIdx.y; b < B; b += kRowThreads) {
      const std::size_t row = std::size_t(b) * S + s;
      float v[P];
      detail::load_pack(v, dout + row * C + pack * P);
      const int t = type_ids ? type_ids[row] : 0;
#pragma unroll
      for (int j = 0; j < P; ++j) pos[j] += v[j];
#pragma unroll
      for (int tt = 0; tt < kMaxTokenTypes; ++tt)
        if (tt == t)
#pragma unroll
          for (int j = 0; j < P; ++j) typ[tt][j] += v[j];
    }
#pragma unroll
  for (int j = 0; j < P; ++j) {
    s_acc[threadIdx.y][0][threadIdx.x * P + j] = pos[j];
#pragma unroll
    for (int tt = 0; tt < kMaxTokenTypes; ++tt)
      s_acc[threadIdx.y][1 + tt][threadIdx.x * P + j] = typ[tt][j];
  }
  __syncthreads();
  if (threadIdx.y != 0 || !active) return;
  float sum[1 + kMaxTokenTypes][P];
#pragma unroll
  for (int a = 0; a <= kMaxTokenTypes; ++a)
#pragma unroll
    for (int j = 0; j < P; ++j) {
      float x = 0.f;
      for (int y = 0; y < kRowThreads; ++y) x += s_acc[y][a][threadIdx.x * P + j];
      sum[a][j] = x;
    }
  if (dposition) accumulate_row(dposition + std::size_t(s) * C + pack * P, sum[0]);
  if (type_partials)
    for (int tt = 0; tt < num_types; ++tt) {
      float* out = type_partials + (std::size_t(s) * num_types + tt) * C + pack * P;
#pragma unroll
      for (int j = 0; j < P; ++j) out[j] = sum[1 + tt][j];
    }
}

// dtype[t][c] += Σ_s type_partials[s][t][c]: block (32 columns, 32 rows of positions).
template <class T>
__global__ void type_join_kernel(T* dtype, const float* type_partials, int S, int C,
                                 int num_types) {
  __shared__ float s_acc[32][33];
  const int t = blockIdx.y, c = blockIdx.x * 32 + threadIdx.x;
  float x = 0.f;
  if (c < C)
    for (int s = threadIdx.y; s < S; s += 32)
      x += type_partials[(std::size_t(s) * num_types + t) * C + c];
  s_acc[threadIdx.y][threadIdx.x] = x;
  __syncthreads();
  if (threadIdx.y != 0 || c >= C) return;
  float sum = 0.f;
  for (int y = 0; y < 32; ++y) sum += s_acc[y][threadIdx.x];
  T* out = dtype + std::size_t(t) * C + c;
  *out = detail::from_float<T>(detail::to_float(*out) + sum);
}

std::size_t align256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// Bits the radix sort looks at: ids < V.
int id_bits(int V) {
  int bits = 1;
  while (bits < 31 && (1ll << bits) < V) ++bits;
  return bits;
}

// The pieces of embedding_backward's scratch.
struct Scratch {
  int *tokens_in, *sorted_ids, *sorted_tokens;
  float *word_partials, *type_partials;
  void* sort_temp;
  std::size_t sort_bytes, total;
};

Scratch carve(char* base, int B, int S, int C, int V, int num_types) {
  const int N = B * S, tiles = (N + kTile - 1) / kTile;
  Scratch s{};
  std::size_t sort_bytes = 0;
  XF_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, (const int*)nullptr,
                                                (int*)nullptr, (const int*)nullptr, (int*)nullptr,
                                                N, 0, id_bits(V)));
  std::size_t at = 0;
  auto take = [&](std::size_t bytes) {
    char* p = base ? base + at : nullptr;
    at += align256(bytes);
    return p;
  };
  s.tokens_in = reinterpret_cast<int*>(take(sizeof(int) * N));
  s.sorted_ids = reinterpret_cast<int*>(take(sizeof(int) * N));
  s.sorted_tokens = reinterpret_cast<int*>(take(sizeof(int) * N));
  s.word_partials = reinterpret_cast<float*>(take(sizeof(float) * 2 * std::size_t(tiles) * C));
  s.type_partials =
      reinterpret_cast<float*>(take(sizeof(float) * std::size_t(S) * std::max(num_types, 0) * C));
  s.sort_temp = take(sort_bytes);
  s.sort_bytes = sort_bytes;
  s.total = at;
  return s;
}

__global__ void iota_kernel(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i;
}

template <class T>
void check_shape(const char* what, int B, int S, int C, int V,
                 std::initializer_list<const void*> ptrs) {
  if (B <= 0 || S <= 0 || V <= 0 || C <= 0 || C % kPack<T> != 0 || C / kPack < T >> 1024 ||
      (long long)B * S > (1ll << 30))
    XF_THROW(InvalidArgument,
             std::string(what) + ": bad shape B=" + std::to_string(B) + " S=" + std::to_string(S) +
                 " C=" + std::to_string(C) + " V=" + std::to_string(V) + " (C a multiple of " +
                 std::to_string(kPack<T>) + ", at most " + std::to_string(1024 * kPack<T>) + ")");
  for (const void* p : ptrs) detail::require_aligned(p, what);
}

}  // namespace

template <class T>
void embedding_forward(T* out, const int* ids, const int* type_ids, const T* word,
                       const T* position, const T* type, int B, int S, int C, int V,
                       cudaStream_t stream) {
  check_shape<T>("embedding_forward", B, S, C, V, {out, word, position, type});
  if (!out || !ids || !word)
    XF_THROW(InvalidArgument, "embedding_forward: out, ids and word must be set");
  if ((type == nullptr) != (type_ids == nullptr))
    XF_THROW(InvalidArgument, "embedding_forward: type and type_ids must be both set or both null");
  const std::size_t packs = std::size_t(B) * S * (C / kPack<T>);
  const unsigned threads = 256, blocks = unsigned((packs + threads - 1) / threads);
  embedding_forward_kernel<T>
      <<<blocks, threads, 0, stream>>>(out, ids, type_ids, word, position, type, S, C, packs);
  XF_CUDA_CHECK_LAUNCH();
}

std::size_t embedding_backward_scratch_bytes(int B, int S, int C, int V, int num_types) {
  return carve(nullptr, B, S, C, V, num_types).total;
}

template <class T>
void embedding_backward(T* dword, T* dposition, T* dtype, void* scratch, const T* dout,
                        const int* ids, const int* type_ids, int B, int S, int C, int V,
                        int num_types, cudaStream_t stream) {
  check_shape<T>("embedding_backward", B, S, C, V, {dword, dposition, dtype, dout, scratch});
  if (!dout) XF_THROW(InvalidArgument, "embedding_backward: dout must be set");
  if (dword && !ids) XF_THROW(InvalidArgument, "embedding_backward: dword needs ids");
  if (dtype && (!type_ids || num_types < 1 || num_types > kMaxTokenTypes))
    XF_THROW(InvalidArgument, "embedding_backward: dtype needs type_ids and 1 <= num_types <= " +
                                  std::to_string(kMaxTokenTypes));
  if (!dtype) num_types = 0;
  const Scratch s = carve(static_cast<char*>(scratch), B, S, C, V, num_types);
  const int N = B * S, col_threads = C / kPack<T>;
  if (dword) {
    const int tiles = (N + kTile - 1) / kTile;
    iota_kernel<<<(N + 255) / 256, 256, 0, stream>>>(s.tokens_in, N);
    XF_CUDA_CHECK_LAUNCH();
    std::size_t sort_bytes = s.sort_bytes;
    XF_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(s.sort_temp, sort_bytes, ids, s.sorted_ids,
                                                  s.tokens_in, s.sorted_tokens, N, 0, id_bits(V),
                                                  stream));
    word_scatter_kernel<T><<<tiles, col_threads, 0, stream>>>(dword, s.word_partials, dout,
                                                              s.sorted_ids, s.sorted_tokens, N, C);
    XF_CUDA_CHECK_LAUNCH();
    word_join_kernel<T>
        <<<tiles, col_threads, 0, stream>>>(dword, s.word_partials, s.sorted_ids, N, C);
    XF_CUDA_CHECK_LAUNCH();
  }
  if (dposition || dtype) {
    const dim3 grid(S, (col_threads + kColThreads - 1) / kColThreads);
    position_type_kernel<T><<<grid, dim3(kColThreads, kRowThreads), 0, stream>>>(
        dposition, dtype ? s.type_partials : nullptr, dout, dtype ? type_ids : nullptr, B, S, C,
        num_types);
    XF_CUDA_CHECK_LAUNCH();
  }
  if (dtype) {
    type_join_kernel<T><<<dim3((C + 31) / 32, num_types), dim3(32, 32), 0, stream>>>(
        dtype, s.type_partials, S, C, num_types);
    XF_CUDA_CHECK_LAUNCH();
  }
}

#define XF_INSTANTIATE(T)                                                                       \
  template void embedding_forward<T>(T*, const int*, const int*, const T*, const T*, const T*,  \
                                     int, int, int, int, cudaStream_t);                         \
  template void embedding_backward<T>(T*, T*, T*, void*, const T*, const int*, const int*, int, \
                                      int, int, int, int, cudaStream_t);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
