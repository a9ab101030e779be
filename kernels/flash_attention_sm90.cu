// xfbench's flash attention forward on Hopper's warpgroup MMAs (wgmma), which only the
// arch-specific target sm_90a has: kernels/CMakeLists.txt compiles this file for 90a where the
// build covers 90 (elsewhere the kernel is empty and FlashAttention never launches it).
//
// Two warpgroups of 64 query rows. S = Q·Kᵀ reads Q and K straight from shared memory and P·V
// takes P from registers, both as asynchronous warpgroup MMAs, so the tensor cores of one
// warpgroup's products run while the other warpgroup does its softmax and dropout. The shared
// tiles of detail/flash.cuh are exactly wgmma's 128-byte-swizzled layouts: K-major for Q and K,
// MN-major for V. (At head dim 64, where two blocks share an SM, issuing the next tile's S before
// this tile's softmax, FA3's intra-warpgroup overlap, and three K/V stages measured no faster:
// plugins/bert_layer/PERF.md. At head dim 128, one block an SM, the overlap is 4-5% faster:
// flash_forward_overlap_kernel below, kernels/PERF_attention.md.)
// With a score bias its [128][64] tiles are double-buffered beside K and V. Head dim 128 (no
// bias): every tile is two 64-column panels; one block per SM (O is 64 floats a thread), so
// nothing hides a block's own waits: key tiles of 128 (two of 64 one after the other, the last
// one half empty where Sk is an odd multiple of 64) halve the tiles and their barriers. S is then
// one n128 product of eight k16 steps over both panels of Q and K, P·V eight n128 steps over
// both panels of V into O.
#include "kernels/detail/flash.cuh"
#include "kernels/detail/wgmma.cuh"
#include "xfbench/error.hpp"

namespace xfbench::kernels::detail {
namespace {

constexpr int kWgThreads = 256;
// Blocks per SM: two at head dim 64; one at 128 (O's registers double).
constexpr int blocks_per_sm(int hd) { return hd == kHD ? 2 : 1; }

// Keys per tile: 64 at head dim 64, 128 at 128 (above).
__host__ __device__ constexpr int keys_per_tile(int hd) {
  return hd == kHD ? kBlockN : 2 * kBlockN;
}

// Shared memory: Q, two K and two V stages (each `hd` columns), with a bias two bias stages.
constexpr std::size_t forward_smem_bytes(bool bias, int hd) {
  return ((kBlockM + 4 * keys_per_tile(hd)) * hd + (bias ? 2 * kBlockM * kHD : 0)) * 2;
}

template <class T, bool Masked, bool Bias, int HD>
__global__ void __launch_bounds__(kWgThreads, blocks_per_sm(HD))
    flash_forward_wgmma_kernel(FlashParams p, BlockOrder order) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kPanels = HD / kHD, kKeys = keys_per_tile(HD), kNT = kKeys / 8;
  extern __shared__ __align__(1024) std::uint16_t smem[];  // 128-byte swizzle: 1024-byte atoms
  std::uint16_t* sQ = smem;  // panel c of a [rows][HD] tile: rows · 64 elements after panel c - 1
  auto sK = [&](int buf) { return sQ + (kBlockM + buf * kKeys) * HD; };
  auto sV = [&](int buf) { return sQ + (kBlockM + (2 + buf) * kKeys) * HD; };
  auto sB = [&](int buf) { return sQ + (kBlockM + 4 * kKeys) * HD + buf * kBlockM * kHD; };

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wg = warp / 4;
  const BlockTiles<kWgThreads, kKeys> blk(p, order);
  blk.template load_q_and_keys<Bias, kPanels>(p, sQ, sK(0), sV(0), sB(0));
  // Keys past Sk in the last tile (a half tile of 128) are hidden as the masks hide theirs. (Tiles
  // of 64 are never ragged: the unmasked kernel then has no masking code, 4% faster.)
  const bool ragged = kKeys != kBlockN && p.Sk % kKeys != 0;

  float o[1][8 * kPanels][4] = {};
  RowState<1> rows;
  // K-major tiles: 8-row groups 1024 bytes apart, a 16-element k step is 32 bytes further in.
  // V (MN-major): 16-key steps are 2048 bytes apart.
  std::uint64_t q_desc[kPanels];
#pragma unroll
  for (int c = 0; c < kPanels; ++c)
    q_desc[c] = wgmma_desc(sQ + c * kBlockM * kHD + wg * 64 * kHD, 16, 1024);

  for (int t = 0; t < blk.tiles; ++t) {
    const int buf = t & 1;
    cp_async_wait_all();
    fence_proxy_async();
    __syncthreads();  // tile t visible to wgmma; everyone is done with tile t - 1's buffers
    if (t + 1 < blk.tiles)
      blk.template load_keys<Bias, kPanels>(p, t + 1, sK(buf ^ 1), sV(buf ^ 1), sB(buf ^ 1));
    if constexpr (Masked)
      if (blk.above_diagonal(p, t, wg * 64 + 63)) continue;  // the other warpgroup's tile

    std::uint64_t k_desc[kPanels];
#pragma unroll
    for (int c = 0; c < kPanels; ++c) k_desc[c] = wgmma_desc(sK(buf) + c * kKeys * kHD, 16, 1024);
    // V N-major: at head dim 128 its two panels (kKeys rows of 128 bytes apart) are one n128
    // operand
    const std::uint64_t v_desc = wgmma_desc(sV(buf), kKeys * 128, 1024);

    float s[1][kNT][4];
    wgmma_fence();
#pragma unroll
    for (int c = 0; c < kPanels; ++c)
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        wgmma_ss<T, false, false>(s[0], q_desc[c] + kKMajorStep * ks, k_desc[c] + kKMajorStep * ks,
                                  c * 4 + ks);
    wgmma_commit_and_wait();

    if constexpr (Bias)
      add_bias<T>(s, p.scale, [&](int, int hf, int c) {
        return bias_chunk(sB(buf), warp * 16 + hf * 8 + lane / 4, c);
      });
    const int t64 = t * (kKeys / kBlockN);  // the tile's first tile of 64 keys
    if (Masked || ragged) mask_tile(s, p, blk.b, blk.m0 + warp * 16 + lane / 4, t64);
    rows.softmax(s, o, Bias ? kLog2e : p.scale_log2);
    if (p.drop.active()) drop_tile(s, p, blk.b, blk.h, blk.m0 + warp * 16 + lane / 4, t64);
    std::uint32_t pa[kNT / 2][1][4];
    pack_p<T>(pa, s);

    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kNT / 2; ++kk) wgmma_rs<T>(o[0], pa[kk][0], v_desc + kMnMajorStep * kk);
    wgmma_commit_and_wait();
  }
  __syncthreads();  // every warpgroup's reads of sQ are done before it becomes the output stage
  store_o<T>(p, rows, o, sQ, warp * 16, blk.m0, blk.b, blk.h);
#endif
}

// Head dim 128, FlashAttention-3's intra-warpgroup overlap: a warpgroup issues key tile t + 1's
// S = Q·Kᵀ and tile t's O += P·V together, and runs tile t + 1's softmax while P·V is still on
// the tensor cores; P is packed from S once P·V is done, and O takes the new max's factor while
// the next S runs. K so runs a tile ahead of V: iteration t reads K of tile t + 1 and V of tile
// t, and loads K of t + 2 and V of t + 1, each into the buffer the tile before them has left.
// Live at once: S, O and P (64 + 64 + 32 registers). No bias (head dim 128 takes none); with tiles
// of 128 keys and blocks of 128 rows no tile lies above the diagonal for either warpgroup.
template <class T, bool Masked>
__global__ void __launch_bounds__(kWgThreads, 1)
    flash_forward_overlap_kernel(FlashParams p, BlockOrder order) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int HD = kMaxHD, kPanels = HD / kHD, kKeys = keys_per_tile(HD), kNT = kKeys / 8;
  extern __shared__ __align__(1024) std::uint16_t smem[];
  std::uint16_t* sQ = smem;
  auto sK = [&](int buf) { return sQ + (kBlockM + buf * kKeys) * HD; };
  auto sV = [&](int buf) { return sQ + (kBlockM + (2 + buf) * kKeys) * HD; };

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wg = warp / 4;
  const int row0 = warp * 16 + lane / 4;  // the thread's first row in the block
  const BlockTiles<kWgThreads, kKeys> blk(p, order);
  const int tiles = blk.tiles;
  const bool ragged = p.Sk % kKeys != 0;
  blk.template load_q<kPanels>(p, sQ);
  blk.template load_rows<kPanels>(p, 0, sK(0), blk.k, p.sk.s);
  cp_async_commit();
  if (tiles > 1) blk.template load_rows<kPanels>(p, 1, sK(1), blk.k, p.sk.s);
  blk.template load_rows<kPanels>(p, 0, sV(0), blk.v, p.sv.s);
  cp_async_commit();

  std::uint64_t q_desc[kPanels];
#pragma unroll
  for (int c = 0; c < kPanels; ++c)
    q_desc[c] = wgmma_desc(sQ + c * kBlockM * kHD + wg * 64 * kHD, 16, 1024);
  float s[1][kNT][4];
  auto issue_s = [&](int buf) {
#pragma unroll
    for (int c = 0; c < kPanels; ++c) {
      const std::uint64_t k_desc = wgmma_desc(sK(buf) + c * kKeys * kHD, 16, 1024);
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        wgmma_ss<T, false, false>(s[0], q_desc[c] + kKMajorStep * ks, k_desc + kKMajorStep * ks,
                                  c * 4 + ks);
    }
    wgmma_commit();
  };
  RowState<1> rows;
  float corr[1][2];  // O's factor to the max of the tile whose P is next
  // Tile t's scores into probabilities in place: masks, softmax, dropout.
  auto probabilities = [&](int t) {
    const int t64 = t * (kKeys / kBlockN);
    if (Masked || ragged) mask_tile(s, p, blk.b, blk.m0 + row0, t64);
    rows.exponentiate(s, p.scale_log2, corr);
    if (p.drop.active()) drop_tile(s, p, blk.b, blk.h, blk.m0 + row0, t64);
  };

  float o[1][8 * kPanels][4] = {};
  std::uint32_t pa[kNT / 2][1][4];
  cp_async_wait<1>();  // Q and K of tile 0
  fence_proxy_async();
  __syncthreads();
  wgmma_fence();
  issue_s(0);
  wgmma_wait();
  fence_registers(s);
  probabilities(0);
  pack_p<T>(pa, s);

  // O += P·V of tile t, after O takes the factor to tile t's max.
  auto issue_pv = [&](int t) {
    rows.rescale(o, corr);
    // V N-major: its two panels (kKeys rows of 128 bytes apart) are one n128 operand
    const std::uint64_t v_desc = wgmma_desc(sV(t & 1), kKeys * 128, 1024);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kNT / 2; ++kk) wgmma_rs<T>(o[0], pa[kk][0], v_desc + kMnMajorStep * kk);
    wgmma_commit();
  };
  auto tile_landed = [] {  // and everyone is done with the buffers the next loads take
    cp_async_wait_all();
    fence_proxy_async();
    __syncthreads();
  };
  // Every S issued is waited for before the P·V behind it (wgmma_wait<1>): ptxas serialises all
  // of a kernel's wgmma where a path reads accumulators it cannot prove retired, so the last
  // tile's P·V is outside the loop rather than the loop's S conditional.
  for (int t = 0; t + 1 < tiles; ++t) {
    tile_landed();  // K of t + 1, V of t; K of t and V of t - 1 are free
    if (t + 2 < tiles) blk.template load_rows<kPanels>(p, t + 2, sK(t & 1), blk.k, p.sk.s);
    blk.template load_rows<kPanels>(p, t + 1, sV((t + 1) & 1), blk.v, p.sv.s);
    cp_async_commit();
    wgmma_fence();
    issue_s((t + 1) & 1);
    issue_pv(t);      // O's factor applied while S runs
    wgmma_wait<1>();  // S of tile t + 1 (P·V of tile t runs on)
    fence_registers(s);
    probabilities(t + 1);
    wgmma_wait();
    fence_registers(o);
    fence_registers(pa);  // P·V read pa until here
    pack_p<T>(pa, s);
  }
  tile_landed();
  issue_pv(tiles - 1);
  wgmma_wait();
  fence_registers(o);
  __syncthreads();  // every warpgroup's reads of sQ are done before it becomes the output stage
  store_o<T>(p, rows, o, sQ, row0 - lane / 4, blk.m0, blk.b, blk.h);
#endif
}

template <auto kernel>
void launch_kernel(std::size_t smem, const BlockOrder& order, const FlashParams& p,
                   cudaStream_t stream) {
  if (smem > 48 * 1024) {
    static const bool ready = [&] {  // once per variant: above the 48 KB default
      XF_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      return true;
    }();
    (void)ready;
  }
  kernel<<<order.blocks(), kWgThreads, smem, stream>>>(p, order);
}

template <int HD>
void launch_with_head_dim(const FlashParams& p, bool fp16, int B, bool overlap,
                          cudaStream_t stream) {
  const BlockOrder order = forward_order(p, B, blocks_per_sm(HD));
  forward_variant(p, fp16, [&](auto t, auto masked, auto bias) {
    using T = typename decltype(t)::type;
    constexpr bool kBias = decltype(bias)::value, kMasked = decltype(masked)::value;
    constexpr std::size_t smem = forward_smem_bytes(kBias, HD);
    if constexpr (kBias && HD != kHD)
      XF_THROW(Unsupported, "flash attention: a score bias takes head dim 64");
    else if (HD == kMaxHD && overlap)
      launch_kernel<flash_forward_overlap_kernel<T, kMasked>>(smem, order, p, stream);
    else
      launch_kernel<flash_forward_wgmma_kernel<T, kMasked, kBias, HD>>(smem, order, p, stream);
  });
}

}  // namespace

void launch_flash_wgmma(const FlashParams& p, bool fp16, int B, bool overlap, cudaStream_t stream) {
  if (p.head_dim == kMaxHD)
    launch_with_head_dim<kMaxHD>(p, fp16, B, overlap, stream);
  else
    launch_with_head_dim<kHD>(p, fp16, B, overlap, stream);
}

}  // namespace xfbench::kernels::detail
