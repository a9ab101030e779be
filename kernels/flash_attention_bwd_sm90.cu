// xfbench's flash attention backward on Hopper's warpgroup MMAs (sm_90a, like
// flash_attention_sm90.cu). With P = softmax(scale·Q·Kᵀ) recomputed from the forward's row
// statistics, Z the dropout mask (the forward's Philox stream), r = 1/(1-p):
//   dV = (P∘Z·r)ᵀ·dO    dS = P∘(dO·Vᵀ∘Z·r − D),  D_i = Σ_d dO_id·O_id
//   dK = scale·dSᵀ·Q    dQ = scale·dS·K
// No atomics: a pre-pass computes D per query row; then one launch holds blocks of two kinds,
// dK and dV per 64 keys (accumulators stay in registers over all query tiles) and dQ per 64
// queries (over all key tiles). Both recompute S and P (two more products than with fp32 dQ
// atomics) and read the mask the forward saved (1 bit per score), or draw it from Philox again
// when it was not saved. With a causal mask (Sq = Sk) tiles wholly above the diagonal are
// neither loaded nor computed, and diagonal tiles are masked as the forward masks them (the same
// mask_tile). One warpgroup per block; S and dO·Vᵀ come out as [query][key] fragments
// (rows are queries, as in the forward, so the mask's Philox groups are the forward's), and the
// products over queries read P and dS back transposed from shared memory.
//
// Grouped-query attention (NKV K/V heads, each shared by G = NH / NKV query heads): dK and dV of
// a K/V head are the sums over its G query heads, so a dK/dV block is per K/V head and runs
// through all query tiles of each of them in turn, accumulating in registers (no scratch, no
// atomics, a fixed order); dQ blocks are per query head.
//
// Head dim 128 (no bias): every Q, dO, K, V tile and every dQ, dK, dV accumulator is two
// 64-column panels (detail/flash.cuh): S and dO·Vᵀ sum eight k16 steps over both panels, and the
// products into [.][128] outputs one n128 product per step over both panels. dK and dV then
// hold 128 floats a thread, so two blocks share an SM (three at head dim 64).
//
// With a score bias (T5) both block kinds read it (P is recomputed from s·scale + bias: dQ
// blocks stage its tiles beside K and V, dK/dV blocks load it into registers), and the bias
// gradient, dS summed over the batch, is returned as its sums along each diagonal j − i (all that
// T5's bucketed table needs, without an [NH, Sq, Sk] write): each dK/dV block sums its staged dS
// tiles along their diagonals while the dK/dV products run, and a last small kernel adds the
// blocks' sums in a fixed order (no atomics: bitwise reproducible).
#include "kernels/detail/flash.cuh"
#include "kernels/detail/wgmma.cuh"
#include "xfbench/error.hpp"

namespace xfbench::kernels::detail {
namespace {

constexpr int kBwdThreads = 128;         // one warpgroup
constexpr int kTile = kBlockN;           // 64 queries or keys per tile
constexpr int kTileElems = kTile * kHD;  // one 64-column panel of a tile
static_assert(kTile == 64, "the warpgroup's m64 tiles");
// Blocks per SM: three at head dim 64, two at 128 (dK and dV: 128 floats a thread).
constexpr int bwd_blocks_per_sm(int hd) { return hd == kHD ? 3 : 2; }
// Shared memory of the dK/dV blocks (the larger kind; dQ: 6 panels a head dim of 64, with a bias
// 8): K and V, Q and dO double-buffered (each hd / 64 panels), P and dS one panel each.
constexpr std::size_t bwd_smem_bytes(int hd) { return (6 * (hd / kHD) + 2) * kTileElems * 2; }

// What the kernels do with a score bias: nothing (none), read it, or also return its gradient.
enum class BiasMode { none, read, grad };

// D_i = Σ_d dO_id·O_id. Eight lanes share a row (one 16-byte chunk of each 64-column panel, so a
// warp reads whole 128-byte rows) and each group takes kDeltaRows consecutive rows of D, all loads
// issued before the sums: 0.096 -> 0.062 ms at s512 b64 against one thread per row with its eight
// chunks in a loop (rows in memory order instead, heads of a token together: 0.070 ms).
constexpr int kDeltaRows = 4;
constexpr int kDeltaThreads = 256;

template <int Panels>
__global__ void delta_kernel(FlashBwdParams p, int B) {
  static_assert(kChunks == 8, "eight lanes per row");
  const FlashParams& f = p.f;
  const std::int64_t n = std::int64_t(B) * f.NH * f.Sq;
  const int chunk = threadIdx.x % kChunks;
  const std::int64_t first =
      (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x) / kChunks * kDeltaRows;
  float x[kDeltaRows][Panels][8], y[kDeltaRows][Panels][8];
#pragma unroll
  for (int r = 0; r < kDeltaRows; ++r) {
    const std::int64_t row = first + r < n ? first + r : n - 1;  // clamped rows are not stored
    const int i = int(row % f.Sq), h = int(row / f.Sq % f.NH), b = int(row / f.Sq / f.NH);
#pragma unroll
    for (int c = 0; c < Panels; ++c) {
      const std::int64_t off = row_bytes(f.so, b, h, i) + (c * kChunks + chunk) * 16;
      unpack8(x[r][c], f.o + off, p.fp16);
      unpack8(y[r][c], p.dout + off, p.fp16);
    }
  }
#pragma unroll
  for (int r = 0; r < kDeltaRows; ++r) {
    float acc = 0.f;
#pragma unroll
    for (int c = 0; c < Panels; ++c)
#pragma unroll
      for (int j = 0; j < 8; ++j) acc += x[r][c][j] * y[r][c][j];
#pragma unroll
    for (int m = kChunks / 2; m > 0; m /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, m);
    if (chunk == 0 && first + r < n) p.delta[first + r] = acc;
  }
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// acc = A·Bᵀ of two 64-row tiles over the head dim (both K-major in shared memory, Panels
// 64-column panels each: four k16 steps of every panel), issued, not waited for.
template <class T, int Panels>
__device__ __forceinline__ void issue_row_products(float (&acc)[8][4], const std::uint16_t* a,
                                                   const std::uint16_t* b) {
#pragma unroll
  for (int c = 0; c < Panels; ++c) {
    const std::uint64_t da = wgmma_desc(a + c * kTileElems, 16, 1024),
                        db = wgmma_desc(b + c * kTileElems, 16, 1024);
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
      wgmma_ss<T, false, false>(acc, da + kKMajorStep * ks, db + kKMajorStep * ks, c * 4 + ks);
  }
}

// S = Q·Kᵀ and dP = dO·Vᵀ of one query tile and one key tile.
template <class T, int Panels>
__device__ __forceinline__ void scores_and_dp(float (&s)[8][4], float (&dp)[8][4],
                                              const std::uint16_t* sQ, const std::uint16_t* sdO,
                                              const std::uint16_t* sK, const std::uint16_t* sV) {
  wgmma_fence();
  issue_row_products<T, Panels>(s, sQ, sK);
  issue_row_products<T, Panels>(dp, sdO, sV);
  wgmma_commit_and_wait();
}

// From S and dP of (query tile, key tile t): pd <- P∘Z·r and ds <- P∘(dP∘Z·r − D) for this
// thread's rows (row0: its first query row). diagonal: the tile holds the causal diagonal, and the
// scores of later keys are hidden as in the forward (P = 0, so pd = ds = 0). Bias:
// bias_chunk(0, hf, c) gives the thread's bias chunks as add_bias reads them.
template <class T, bool Bias, class Chunk>
__device__ __forceinline__ void probs_and_grads(float (&s)[8][4], float (&dp)[8][4],
                                                const FlashBwdParams& p, int b, int h, int row0,
                                                int t, bool diagonal, Chunk&& bias_chunk) {
  const FlashParams& f = p.f;
  auto& s1 = reinterpret_cast<float(&)[1][8][4]>(s);
  if (diagonal) mask_tile(s1, f, b, row0, t);
  if constexpr (Bias) add_bias<T>(s1, f.scale, bias_chunk);
  const float scale_log2 = Bias ? kLog2e : f.scale_log2;
  float lse[2], delta[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const std::int64_t r = (std::int64_t(b) * f.NH + h) * f.Sq + row0 + hf * 8;
    lse[hf] = f.lse[r];
    delta[hf] = p.delta[r];
  }
  // P, then with the mask: pd = P∘Z·r (into s) and dS = P∘(dP∘Z·r − D) (into dp).
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int j = 0; j < 4; ++j) s[nt][j] = exp2_approx(fmaf(s[nt][j], scale_log2, -lse[j / 2]));
  const float r = f.drop.scale;
  auto apply = [&](int hf, int nt, int e, bool kept) {
    float &pr = s[nt][2 * hf + e], &g = dp[nt][2 * hf + e];
    g = pr * ((kept ? g * r : 0.f) - delta[hf]);
    pr = kept ? pr * r : 0.f;
  };
  if (f.drop.active() && f.keep) {  // the forward's bits
    const std::int64_t at = keep_index(f, b, h, row0) + t * (kTile / 16);
    const std::uint32_t bits[2] = {f.keep[at], f.keep[at + 8 * (f.Sk / 16)]};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) apply(j / 2, nt, j % 2, (bits[j / 2] >> (2 * nt + j % 2)) & 1u);
  } else if (f.drop.active()) {
    for_each_keep<1>(f.drop, first_group(f, b, h, row0), f.Sk / 8, t,
                     [&](int, int hf, int nt, int e, bool kept) { apply(hf, nt, e, kept); });
  } else {
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) apply(j / 2, nt, j % 2, true);
  }
}

// Stores this thread's fragment rows (row = warp·16 + lane/4 + 8·hf) of a [64][8·NT] tile into
// NT / 8 swizzled shared panels, at row remap(row).
template <class T, int NT, class Remap>
__device__ __forceinline__ void stage_rows(std::uint16_t* tile, const float (&x)[NT][4], float mul,
                                           Remap remap) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int row = remap(warp * 16 + hf * 8 + lane / 4);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
      *reinterpret_cast<std::uint32_t*>(tile + (nt / 8) * kTileElems + swizzled(row, nt % 8) +
                                        2 * (lane % 4)) =
          pack2<T>(x[nt][2 * hf] * mul, x[nt][2 * hf + 1] * mul);
  }
}

// Writes a staged tile of 64 rows and Panels panels to global rows row0 ... (pitch ld elements),
// 16 bytes a thread.
template <int Panels>
__device__ __forceinline__ void write_tile(char* dst, std::int64_t ld, const std::uint16_t* tile) {
#pragma unroll
  for (int c = 0; c < Panels; ++c)
#pragma unroll
    for (int i = 0; i < kTile * kChunks / kBwdThreads; ++i) {
      const int idx = threadIdx.x + i * kBwdThreads, row = idx / kChunks, chunk = idx % kChunks;
      *reinterpret_cast<int4*>(dst + (row * ld + c * kHD + chunk * 8) * 2) =
          *reinterpret_cast<const int4*>(tile + c * kTileElems + swizzled(row, chunk));
    }
}

// Key row of shared row c of a key_order tile.
__device__ __forceinline__ int key_of_row(int c) {
  return 16 * ((c % 8) / 2) + 2 * (c / 8) + c % 2;
}

// A dK/dV block's sums of dS along the diagonals d = key − query, over its query tiles. In a
// 64 × 64 tile, wrapped diagonal w holds the elements (r, (r + w) mod 64): those with key >= query
// lie on d = n0 − 64·i + w (query tile i, key tile from n0), the others on the same diagonal of
// query tile i + 1, so each part goes into its own sum and the second is carried to the next
// tile. Per tile the block writes one row of kDiagRow sums (rows i = 0 ... Sq / 64; blocks that
// skip query tiles under a causal mask leave theirs unwritten): row[w] is diagonal n0 − 64·i + w,
// and row[64 + v] a second part of w = 16·v − 1 (mod 64), see below.
//
// dS is read as staged for the dK product (keys in key_order, so a 4-byte word holds the two
// consecutive keys 2m, 2m + 1), 16 words a thread: thread (warp v, lane l) takes the pair
// u = 8v + l % 8 and the rows 16·(l / 8) ... + 15. In an even row the pair's word holds diagonals
// 2u and 2u + 1, in an odd row 2u − 1 and 2u, so 2u + 1 is completed by the odd rows of pair
// u + 1: the lane beside it, except for the last pair of a warp, whose odd-row part goes to
// row[64 + v] of the next warp's. The four row quarters of a pair are added by shuffles.
struct DiagonalSums {
  float carry[3] = {};  // next tile's parts of diagonals 2u, 2u + 1, and 2u − 1 (odd rows)

  template <class T>
  __device__ __forceinline__ void add_tile(const std::uint16_t* sdS, float* out) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, quarter = lane / 8;
    const int u = 8 * warp + lane % 8;
    // Rows s < same_rows of the quarter have key >= query for the pair's words (both keys of a
    // word wrap together), except the odd rows' 2u − 1 at u = 0 (diagonal −1: always below).
    const int same_rows = 64 - 2 * u - 16 * quarter;
    const char* rows = reinterpret_cast<const char*>(sdS) + 16 * quarter * kHD * 2;
    // Sums of diagonals 2u, 2u + 1 (even rows), 2u − 1 (odd rows): all, and the key >= query part.
    float all[3] = {}, same[3] = {};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      // Rows 2j and 2j + 1 both read keys 16·quarter + 2j + 2u (mod 64) and the one after (the
      // odd row: the one before), i.e. key pair kp; its 4-byte word in a row is 4·nt + q for key
      // 16q + 2nt, the chunk nt XOR-swizzled by the row (row % 8 = s % 8).
      const int kp = (8 * quarter + u + j) & 31;
      const int word = (kp & 7) << 2 | kp >> 3;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int s = 2 * j + e;
        const std::uint32_t bits =
            *reinterpret_cast<const std::uint32_t*>(rows + s * kHD * 2 + (word ^ (s & 7) << 2) * 4);
        float x[2];
        unpack2<T>(x, bits);
        const int lo = e == 0 ? 0 : 2, hi = e == 0 ? 1 : 0;  // even: 2u, 2u + 1; odd: 2u − 1, 2u
        all[lo] += x[0];
        all[hi] += x[1];
        if (s < same_rows) same[lo] += x[0], same[hi] += x[1];
      }
    }
    if (u == 0) same[2] = 0.f;
#pragma unroll
    for (int k = 0; k < 3; ++k)
#pragma unroll
      for (int m = 8; m <= 16; m *= 2) {
        all[k] += __shfl_xor_sync(0xffffffffu, all[k], m);
        same[k] += __shfl_xor_sync(0xffffffffu, same[k], m);
      }
    // Diagonal 2u + 1's odd rows from pair u + 1 (the lane beside; none for a warp's last).
    const int beside = (lane & ~7) | ((lane + 1) & 7);
    const float all_next = __shfl_sync(0xffffffffu, all[2], beside);
    const float same_next = __shfl_sync(0xffffffffu, same[2], beside);
    if (lane % 8 != 7) all[1] += all_next, same[1] += same_next;
    if (lane < 8) {
      out[2 * u] = same[0] + carry[0];
      out[2 * u + 1] = same[1] + carry[1];
      if (lane == 0) out[kTile + warp] = same[2] + carry[2];
#pragma unroll
      for (int k = 0; k < 3; ++k) carry[k] = all[k] - same[k];
    }
  }
  // After the last query tile: the parts below it (the row at Sq / 64).
  __device__ __forceinline__ void finish(float* out) const {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, u = 8 * warp + lane % 8;
    if (lane < 8) {
      out[2 * u] = carry[0];
      out[2 * u + 1] = carry[1];
      if (lane == 0) out[kTile + warp] = carry[2];
    }
  }
};
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// The 64-row tiles of head (b, h) from `row` on that both block kinds stage (cp.async, not yet
// committed), Panels 64-column panels each: Q and dO as stored, K and V in key order.
template <int Panels>
__device__ __forceinline__ void load_q_do(std::uint16_t* q, std::uint16_t* d_o,
                                          const FlashBwdParams& p, int b, int h, int row) {
  const FlashParams& f = p.f;
#pragma unroll
  for (int c = 0; c < Panels; ++c) {
    load_tile<kTile, kBwdThreads>(q + c * kTileElems,
                                  f.q + row_bytes(f.sq, b, h, row) + c * kHD * 2, f.sq.s, kTile);
    load_tile<kTile, kBwdThreads>(d_o + c * kTileElems,
                                  p.dout + row_bytes(f.so, b, h, row) + c * kHD * 2, f.so.s, kTile);
  }
}
template <int Panels>
__device__ __forceinline__ void load_k_v(std::uint16_t* k, std::uint16_t* v,
                                         const FlashBwdParams& p, int b, int h, int row) {
  const FlashParams& f = p.f;
#pragma unroll
  for (int c = 0; c < Panels; ++c) {
    load_tile<kTile, kBwdThreads, true>(
        k + c * kTileElems, f.k + row_bytes(f.sk, b, h, row) + c * kHD * 2, f.sk.s, kTile);
    load_tile<kTile, kBwdThreads, true>(
        v + c * kTileElems, f.v + row_bytes(f.sv, b, h, row) + c * kHD * 2, f.sv.s, kTile);
  }
}

// The [64][64] bias tile of queries from `row` and keys from `key` of head h (not committed).
__device__ __forceinline__ void load_bias(std::uint16_t* tile, const FlashParams& f, int h, int row,
                                          int key) {
  load_tile<kTile, kBwdThreads>(tile, f.bias + ((std::int64_t(h) * f.Sq + row) * f.Sk + key) * 2,
                                f.Sk, kTile);
}

// This thread's bias chunks (as add_bias reads them: rows row0 and row0 + 8, keys
// key0 + 16·(lane % 4) ... + 15) of head h, straight from global memory (L2: the batch shares it).
__device__ __forceinline__ void load_bias_fragment(int4 (&chunks)[2][2], const FlashParams& f,
                                                   int h, int row0, int key0) {
  const char* row =
      f.bias + ((std::int64_t(h) * f.Sq + row0) * f.Sk + key0 + 16 * (threadIdx.x % 4)) * 2;
#pragma unroll
  for (int hf = 0; hf < 2; ++hf)
#pragma unroll
    for (int c = 0; c < 2; ++c)
      chunks[hf][c] =
          *reinterpret_cast<const int4*>(row + (8 * hf * std::int64_t(f.Sk) + 8 * c) * 2);
}

// dK and dV of keys 64·kv_block ... of K/V head (b, hk): the sums over its query heads
// hk·group ... (one, without grouped-query attention), taken one after the other through all
// their query tiles with the accumulators in registers (a fixed order: reproducible, no atomics
// and no scratch). Causal: query tiles before the key tile see none of its keys and are skipped.
// The bias comes from global memory straight into registers, its loads issued before the S and dP
// products: these blocks use all 64 KB of their shared memory, and a staged bias tile (72 KB)
// measured 12% slower at T5-large s512 b64 (1.11 vs 0.97 ms, the loads then issued after the
// products; the L1 left beside three such blocks is smaller, and the kernel spills).
template <class T, bool Causal, BiasMode Bias, int HD>
__device__ __forceinline__ void dkdv_block(const FlashBwdParams& p, int b, int hk, int kv_block) {
  constexpr int kPanels = HD / kHD, kTileSize = kPanels * kTileElems;  // a [64][HD] tile
  extern __shared__ __align__(1024) std::uint16_t smem[];
  std::uint16_t *sK = smem, *sV = sK + kTileSize, *sP = sV + kTileSize, *sdS = sP + kTileElems;
  auto sQ = [&](int buf) { return sdS + kTileElems + buf * kTileSize; };
  auto sdO = [&](int buf) { return sdS + kTileElems + (2 + buf) * kTileSize; };
  const FlashParams& f = p.f;
  const int n0 = kv_block * kTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first = Causal ? kv_block : 0, tiles = f.Sq / kTile;
  const int h_end = (hk + 1) * f.group;
  auto load_queries = [&](int h, int i, int buf) {
    load_q_do<kPanels>(sQ(buf), sdO(buf), p, b, h, i * kTile);
    cp_async_commit();
  };
  // This block's diagonal sums for query head h.
  auto partial = [&](int h) {
    return p.dbias_partial +
           ((std::int64_t(b) * f.NH + h) * (f.Sk / kTile) + kv_block) * (tiles + 1) * kDiagRow;
  };
  load_k_v<kPanels>(sK, sV, p, b, hk, n0);
  load_queries(hk * f.group, first, 0);
  DiagonalSums diagonals;

  float dk[8 * kPanels][4] = {}, dv[8 * kPanels][4] = {};  // rows: shared key rows (key_order)
  // Step u: query tile i of query head h; the next step's tiles load during this one.
  for (int h = hk * f.group, i = first, u = 0; h < h_end; ++u) {
    const int buf = u & 1;
    const bool last_tile = i + 1 == tiles;
    cp_async_wait_all();
    fence_proxy_async();
    __syncthreads();  // tiles visible to wgmma; sP and sdS of the last step consumed
    if (!last_tile)
      load_queries(h, i + 1, buf ^ 1);
    else if (h + 1 < h_end)
      load_queries(h + 1, first, buf ^ 1);

    int4 bias[2][2];  // in flight during the S and dP products
    if constexpr (Bias != BiasMode::none)
      load_bias_fragment(bias, f, h, i * kTile + warp * 16 + lane / 4, n0);
    float s[8][4], dp[8][4];
    scores_and_dp<T, kPanels>(s, dp, sQ(buf), sdO(buf), sK, sV);
    probs_and_grads<T, Bias != BiasMode::none>(s, dp, p, b, h, i * kTile + warp * 16 + lane / 4,
                                               kv_block, Causal && i == kv_block,
                                               [&](int, int hf, int c) { return bias[hf][c]; });
    stage_rows<T>(sP, s, 1.f, [](int r) { return r; });
    stage_rows<T>(sdS, dp, 1.f, [](int r) { return r; });
    fence_proxy_async();
    __syncthreads();

    // Products over this tile's queries: P and dS transposed (M-major), dO and Q N-major (at
    // head dim 128 one n128 product over both panels, 8192 bytes apart).
    const std::uint64_t dp_desc = wgmma_desc(sP, 8192, 1024), ds_desc = wgmma_desc(sdS, 8192, 1024);
    const std::uint64_t o_desc = wgmma_desc(sdO(buf), 8192, 1024);
    const std::uint64_t q_desc = wgmma_desc(sQ(buf), 8192, 1024);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      wgmma_ss<T, true, true>(dv, dp_desc + kMnMajorStep * kk, o_desc + kMnMajorStep * kk, 1);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      wgmma_ss<T, true, true>(dk, ds_desc + kMnMajorStep * kk, q_desc + kMnMajorStep * kk, 1);
    wgmma_commit();
    if constexpr (Bias == BiasMode::grad) diagonals.add_tile<T>(sdS, partial(h) + i * kDiagRow);
    wgmma_wait();
    if (last_tile) {
      if constexpr (Bias == BiasMode::grad) {  // the head's sums are complete
        diagonals.finish(partial(h) + tiles * kDiagRow);
        diagonals = DiagonalSums();
      }
      ++h, i = first;
    } else {
      ++i;
    }
  }
  // Shared key row c is key n0 + key_of_row(c): stage in key order (where K and V were), then
  // write.
  __syncthreads();
  stage_rows<T>(sK, dk, f.scale, [](int c) { return key_of_row(c); });
  stage_rows<T>(sV, dv, 1.f, [](int c) { return key_of_row(c); });
  __syncthreads();
  write_tile<kPanels>(p.dk + row_bytes(f.sk, b, hk, n0), f.sk.s, sK);
  write_tile<kPanels>(p.dv + row_bytes(f.sv, b, hk, n0), f.sv.s, sV);
}

// dQ of queries 64·q_block ... of head (b, h) (K and V: its K/V head's). Causal: key tiles after
// the query tile are hidden from all its rows and skipped. Bias tiles are double-buffered with K
// and V.
template <class T, bool Causal, BiasMode Bias, int HD>
__device__ __forceinline__ void dq_block(const FlashBwdParams& p, int b, int h, int q_block) {
  constexpr int kPanels = HD / kHD, kTileSize = kPanels * kTileElems;  // a [64][HD] tile
  extern __shared__ __align__(1024) std::uint16_t smem[];
  std::uint16_t *sQ = smem, *sdO = sQ + kTileSize;
  auto sK = [&](int buf) { return sdO + (1 + buf) * kTileSize; };
  auto sV = [&](int buf) { return sdO + (3 + buf) * kTileSize; };
  auto sB = [&](int buf) { return sdO + (5 + buf) * kTileSize; };  // head dim 64 only
  const FlashParams& f = p.f;
  const int m0 = q_block * kTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tiles = Causal ? q_block + 1 : f.Sk / kTile;
  auto load_keys = [&](int j, int buf) {
    load_k_v<kPanels>(sK(buf), sV(buf), p, b, h / f.group, j * kTile);
    if constexpr (Bias != BiasMode::none) load_bias(sB(buf), f, h, m0, j * kTile);
    cp_async_commit();
  };
  load_q_do<kPanels>(sQ, sdO, p, b, h, m0);
  load_keys(0, 0);

  float dq[8 * kPanels][4] = {};
  for (int j = 0; j < tiles; ++j) {
    const int buf = j & 1;
    cp_async_wait_all();
    fence_proxy_async();
    __syncthreads();
    if (j + 1 < tiles) load_keys(j + 1, buf ^ 1);

    float s[8][4], dp[8][4];
    scores_and_dp<T, kPanels>(s, dp, sQ, sdO, sK(buf), sV(buf));
    probs_and_grads<T, Bias != BiasMode::none>(
        s, dp, p, b, h, m0 + warp * 16 + lane / 4, j, Causal && j == q_block,
        [&](int, int hf, int c) { return bias_chunk(sB(buf), warp * 16 + hf * 8 + lane / 4, c); });
    std::uint32_t da[4][1][4];
    pack_p<T>(da, reinterpret_cast<const float(&)[1][8][4]>(dp));

    const std::uint64_t k_desc = wgmma_desc(sK(buf), 8192, 1024);  // N-major: keys are k
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wgmma_rs<T>(dq, da[kk][0], k_desc + kMnMajorStep * kk);
    wgmma_commit_and_wait();
  }
  __syncthreads();
  stage_rows<T>(sdO, dq, f.scale, [](int r) { return r; });
  __syncthreads();
  write_tile<kPanels>(p.dq + row_bytes(f.sq, b, h, m0), f.sq.s, sdO);
}
#endif

// One launch for both: the blocks of a K/V head do dK and dV per key tile and dQ per query tile
// of each of its G query heads (G = group, 1 without grouped-query attention), so the two kinds
// share the GPU instead of running one after the other. Without a mask, a [items, NKV, B] grid
// whose first kv_blocks items are the dK/dV blocks and the rest the dQ blocks of query head
// G·y + (x − kv_blocks) / q_blocks (b and the head read from blockIdx, not kept in registers:
// this kernel spills at three blocks per SM). Causal, a dK/dV block does G·(T − j) query tiles
// (j: its key tile, T tiles) and a dQ block i + 1 key tiles, so BlockOrder's ranks go down the
// key tiles, heaviest first: (G + 1)·n is key tile n, and the G ranks after it query tile
// T − 1 − n of each query head (T − n tiles each; with G = 1 the pairs 2n, 2n + 1 of equal work).
// The heaviest, key tile 0's dK/dV block, has G·T tile pairs of 4 products (S, dP, dV, dK) of a
// head's G·T·(T + 1) / 2 of 4 and as many of 3 (dQ's S, dP, dQ): 8 / (7·(T + 1)), whatever G.
// At head dim 64 three blocks per SM (168 registers, a few spilled) beat two without spills: 0.88
// vs 0.93 ms at s512 b64 (plugins/bert_layer/PERF.md). With a bias the dQ blocks stage its tiles in
// the two tiles they leave free, so the shared memory stays 64 KB.
template <class T, bool Causal, BiasMode Bias, int HD>
__global__ void __launch_bounds__(kBwdThreads, bwd_blocks_per_sm(HD))
    backward_kernel(FlashBwdParams p, BlockOrder order) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  const int G = p.f.group;
  if constexpr (Causal) {
    int rank, head;
    order.locate(blockIdx.x, rank, head);
    const int nkv = p.f.NH / G, b = head / nkv, hk = head % nkv;
    const int n = rank / (G + 1), r = rank % (G + 1);
    if (r == 0)
      dkdv_block<T, true, Bias, HD>(p, b, hk, n);
    else
      dq_block<T, true, Bias, HD>(p, b, hk * G + r - 1, p.f.Sq / kTile - 1 - n);
  } else {
    const int kv_blocks = p.f.Sk / kTile, q_blocks = p.f.Sq / kTile;
    const int x = int(blockIdx.x) - kv_blocks;
    if (x < 0)
      dkdv_block<T, false, Bias, HD>(p, blockIdx.z, blockIdx.y, blockIdx.x);
    else
      dq_block<T, false, Bias, HD>(p, blockIdx.z, blockIdx.y * G + x / q_blocks, x % q_blocks);
  }
#endif
}

template <class T, bool Causal, BiasMode Bias, int HD>
void launch(const FlashBwdParams& p, int B, cudaStream_t stream) {
  constexpr std::size_t smem = bwd_smem_bytes(HD);
  static const bool ready = [] {
    XF_CUDA_CHECK(cudaFuncSetAttribute(backward_kernel<T, Causal, Bias, HD>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    return true;
  }();
  (void)ready;
  const int G = p.f.group, nkv = p.f.NH / G;
  const int items = p.f.Sk / kTile + G * (p.f.Sq / kTile);
  const double heaviest = 8.0 / (7.0 * (p.f.Sk / kTile + 1));  // the kernel's comment says why
  const BlockOrder order =
      block_order(items, B * nkv, Causal ? heaviest : 0.0, resident_blocks(bwd_blocks_per_sm(HD)));
  const dim3 grid = Causal ? dim3(order.blocks()) : dim3(items, nkv, B);
  backward_kernel<T, Causal, Bias, HD><<<grid, kBwdThreads, smem, stream>>>(p, order);
}

// The bias gradient's diagonal sums from the dK/dV blocks' partial sums (DiagonalSums): the 64
// diagonals d = 64·c + x (x = threadIdx.x) of head blockIdx.y, c = blockIdx.x − Sq / 64. Block
// (b, key tile jt) holds diagonal d in row i = jt − c of its sums (x = 16·v − 1: with row[64 + v]);
// threadIdx.y takes the batch items b ≡ y mod kSumSlices, and the slices are added in order.
constexpr int kSumSlices = 4;

__global__ void __launch_bounds__(kTile* kSumSlices) diagonal_sums_kernel(FlashBwdParams p, int B) {
  const FlashParams& f = p.f;
  const int x = threadIdx.x, y = threadIdx.y, h = blockIdx.y;
  const int rows = f.Sq / kTile + 1, key_tiles = f.Sk / kTile, c = int(blockIdx.x) - f.Sq / kTile;
  float sum = 0.f;
  for (int b = y; b < B; b += kSumSlices) {
    const float* block =
        p.dbias_partial + (std::int64_t(b) * f.NH + h) * key_tiles * rows * kDiagRow;
    for (int jt = 0; jt < key_tiles; ++jt) {
      const int i = jt - c;
      if (i >= (f.causal ? jt : 0) && i < rows) {  // causal: rows before jt were skipped (zero)
        const float* row = block + (std::int64_t(jt) * rows + i) * kDiagRow;
        sum += row[x];
        if (x % 16 == 15) sum += row[kTile + (x + 1) / 16 % 4];
      }
    }
  }
  __shared__ float slices[kSumSlices][kTile];
  slices[y][x] = sum;
  __syncthreads();
  const int d = c * kTile + x;
  if (y == 0 && d > -f.Sq && d < f.Sk) {
    float total = 0.f;
#pragma unroll
    for (int k = 0; k < kSumSlices; ++k) total += slices[k][x];
    p.dbias[std::int64_t(h) * (f.Sq + f.Sk - 1) + d + f.Sq - 1] = total;
  }
}

}  // namespace

void launch_flash_backward(const FlashBwdParams& p, int B, cudaStream_t stream) {
  const bool wide = p.f.head_dim == kMaxHD;
  if (wide && p.f.bias) XF_THROW(Unsupported, "flash attention: a score bias takes head dim 64");
  const std::int64_t rows = std::int64_t(B) * p.f.NH * p.f.Sq;
  const std::int64_t threads = (rows + kDeltaRows - 1) / kDeltaRows * kChunks;
  const unsigned delta_blocks = unsigned((threads + kDeltaThreads - 1) / kDeltaThreads);
  if (wide)
    delta_kernel<2><<<delta_blocks, kDeltaThreads, 0, stream>>>(p, B);
  else
    delta_kernel<1><<<delta_blocks, kDeltaThreads, 0, stream>>>(p, B);
  auto with_type = [&](auto t) {
    using T = typename decltype(t)::type;
    auto with_mask = [&](auto causal) {
      constexpr bool C = decltype(causal)::value;
      if (wide)
        launch<T, C, BiasMode::none, kMaxHD>(p, B, stream);
      else if (!p.f.bias)
        launch<T, C, BiasMode::none, kHD>(p, B, stream);
      else if (!p.dbias)
        launch<T, C, BiasMode::read, kHD>(p, B, stream);
      else
        launch<T, C, BiasMode::grad, kHD>(p, B, stream);
    };
    p.f.causal ? with_mask(std::true_type{}) : with_mask(std::false_type{});
  };
  p.fp16 ? with_type(TypeTag<__half>{}) : with_type(TypeTag<__nv_bfloat16>{});
  if (p.dbias)
    diagonal_sums_kernel<<<dim3(p.f.Sq / kTile + p.f.Sk / kTile, p.f.NH), dim3(kTile, kSumSlices),
                           0, stream>>>(p, B);
}

}  // namespace xfbench::kernels::detail
