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
// plugins/bert_layer/PERF.md. At head dim 128, one block an SM, the overlap with FA3's ping-pong
// of the warpgroups is 18% faster: flash_forward_pingpong_kernel below, kernels/PERF_attention.md.)
// With a score bias its [128][64] tiles are double-buffered beside K and V. Head dim 128 (no
// bias): every tile is two 64-column panels; one block per SM (O is 64 floats a thread), so
// nothing hides a block's own waits: key tiles of 128 (two of 64 one after the other, the last
// one half empty where Sk is an odd multiple of 64) halve the tiles and their barriers. S is then
// one n128 product of eight k16 steps over both panels of Q and K, P·V eight n128 steps over
// both panels of V into O.
#include "kernels/detail/flash.cuh"
#include "kernels/detail/mbarrier.cuh"
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

// K and V stages of the head-dim-128 ping-pong kernel: the warpgroups may be an iteration apart.
constexpr int kPingPongStages = 3;

// Shared memory: Q, `stages` K and V stages (each `hd` columns), with a bias two bias stages.
constexpr std::size_t forward_smem_bytes(bool bias, int hd, int stages = 2) {
  return ((kBlockM + 2 * stages * keys_per_tile(hd)) * hd + (bias ? 2 * kBlockM * kHD : 0)) * 2;
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
// And FlashAttention-3's inter-warpgroup ping-pong: no __syncthreads a tile. Three K and V
// stages; every thread's copies of a tile arrive on an mbarrier ("full") that the warpgroups wait
// on, and each warp says on another ("freed") when it has retired an iteration's products, which
// the loads two iterations later wait on, so the warpgroups may be an iteration apart; they take
// turns issuing their products (named barriers 1 + wg: a warpgroup waits at its own until the
// other has issued; warpgroup 0 first), so one's products run under the other's softmax.
// Measured on an H100 (reports/results/h100/flash_split/): 14% faster than the overlap with a
// __syncthreads a tile; the mbarriers alone gave 12%, the turns 2% more.
template <class T, bool Masked>
__global__ void __launch_bounds__(kWgThreads, 1)
    flash_forward_pingpong_kernel(FlashParams p, BlockOrder order) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int HD = kMaxHD, kPanels = HD / kHD, kKeys = keys_per_tile(HD), kNT = kKeys / 8;
  constexpr int kStages = kPingPongStages;
  extern __shared__ __align__(1024) std::uint16_t smem[];
  __shared__ std::uint64_t full[kStages], freed[kStages];
  std::uint16_t* sQ = smem;
  auto sK = [&](int tile) { return sQ + (kBlockM + tile % kStages * kKeys) * HD; };
  auto sV = [&](int tile) { return sQ + (kBlockM + (kStages + tile % kStages) * kKeys) * HD; };
  if (threadIdx.x == 0)
    for (int i = 0; i < kStages; ++i) mbar_init(&full[i], kWgThreads), mbar_init(&freed[i], 8);
  __syncthreads();  // the barriers' initialisation seen by all

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wg = warp / 4;
  const int row0 = warp * 16 + lane / 4;  // the thread's first row in the block
  const BlockTiles<kWgThreads, kKeys> blk(p, order);
  const int tiles = blk.tiles;
  const bool ragged = p.Sk % kKeys != 0;
  blk.template load_q<kPanels>(p, sQ);
  blk.template load_rows<kPanels>(p, 0, sK(0), blk.k, p.sk.s);
  cp_async_commit();
  // What iteration t reads (K of t + 1, V of t), loaded during iteration t - 1 (0: here).
  auto load_for = [&](int t) {
    if (t + 1 < tiles) blk.template load_rows<kPanels>(p, t + 1, sK(t + 1), blk.k, p.sk.s);
    blk.template load_rows<kPanels>(p, t, sV(t), blk.v, p.sv.s);
    mbar_arrive_on_copies(&full[t % kStages]);
    cp_async_commit();
  };
  load_for(0);

  std::uint64_t q_desc[kPanels];
#pragma unroll
  for (int c = 0; c < kPanels; ++c)
    q_desc[c] = wgmma_desc(sQ + c * kBlockM * kHD + wg * 64 * kHD, 16, 1024);
  float s[1][kNT][4];
  auto issue_s = [&](int tile) {
#pragma unroll
    for (int c = 0; c < kPanels; ++c) {
      const std::uint64_t k_desc = wgmma_desc(sK(tile) + c * kKeys * kHD, 16, 1024);
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

  // Wait for this warpgroup's turn to issue products; give the other its turn (every issue but
  // warpgroup 1's last, so that each barrier's arrivals match its waits).
  auto my_turn = [&] { asm volatile("bar.sync %0, 256;\n" ::"r"(1 + wg) : "memory"); };
  auto your_turn = [&] { asm volatile("bar.arrive %0, 256;\n" ::"r"(2 - wg) : "memory"); };
  if (wg == 1) your_turn();  // warpgroup 0 issues first

  float o[1][8 * kPanels][4] = {};
  std::uint32_t pa[kNT / 2][1][4];
  cp_async_wait<1>();  // Q and K of tile 0
  fence_proxy_async();
  __syncthreads();
  my_turn();
  wgmma_fence();
  issue_s(0);
  your_turn();
  wgmma_wait();
  fence_registers(s);
  probabilities(0);
  pack_p<T>(pa, s);

  // O += P·V of tile t, after O takes the factor to tile t's max.
  auto issue_pv = [&](int t) {
    rows.rescale(o, corr);
    // V N-major: its two panels (kKeys rows of 128 bytes apart) are one n128 operand
    const std::uint64_t v_desc = wgmma_desc(sV(t), kKeys * 128, 1024);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kNT / 2; ++kk) wgmma_rs<T>(o[0], pa[kk][0], v_desc + kMnMajorStep * kk);
    wgmma_commit();
  };
  // Iteration t's K and V landed.
  auto tile_landed = [&](int t) {
    mbar_wait(&full[t % kStages], t / kStages & 1);
    fence_proxy_async();
  };
  // This warp has retired iteration t's products (t = -1: the first S).
  auto retired = [&](int t) {
    __syncwarp();
    if (lane == 0) mbar_arrive(&freed[(t + 1) % kStages]);
  };
  retired(-1);
  // Every S issued is waited for before the P·V behind it (wgmma_wait<1>): ptxas serialises all
  // of a kernel's wgmma where a path reads accumulators it cannot prove retired, so the last
  // tile's P·V is outside the loop rather than the loop's S conditional.
  for (int t = 0; t + 1 < tiles; ++t) {
    // The next loads take the buffers of K of t + 2 - kStages and V of t + 1 - kStages, read in
    // iteration t + 1 - kStages and "freed" by every warp since.
    if (t >= kStages - 2) mbar_wait(&freed[(t - 1) % kStages], (t - 1) / kStages & 1);
    load_for(t + 1);
    tile_landed(t);  // K of t + 1, V of t
    my_turn();
    wgmma_fence();
    issue_s(t + 1);
    issue_pv(t);  // O's factor applied while S runs
    your_turn();
    wgmma_wait<1>();  // S of tile t + 1 (P·V of tile t runs on)
    fence_registers(s);
    probabilities(t + 1);
    wgmma_wait();
    fence_registers(o);
    fence_registers(pa);  // P·V read pa until here
    pack_p<T>(pa, s);
    retired(t);
  }
  tile_landed(tiles - 1);
  my_turn();
  issue_pv(tiles - 1);
  if (wg == 0) your_turn();
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
      launch_kernel<flash_forward_pingpong_kernel<T, kMasked>>(
          forward_smem_bytes(false, HD, kPingPongStages), order, p, stream);
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
