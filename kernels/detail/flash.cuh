// Internals of xfbench's flash attention (attention.hpp), shared by its kernels: the forward's
// flash_attention.cu (mma.sync, any sm_80+ GPU) and flash_attention_sm90.cu (Hopper's warpgroup
// MMAs), and the backward's flash_attention_bwd_sm90.cu. Include only from those files.
//
// The forward kernels walk the keys of one (b, h) in tiles of 64 for a block of query rows:
// S = Q·Kᵀ in fp32 registers, the online softmax (running max and sum per row, base-2 exponent),
// the dropout mask, then O += P·V with P rounded to storage precision. The row sum uses the kept
// and dropped probabilities alike (softmax first, dropout after, as in PyTorch); the 1/(1-p)
// scale is folded into the final 1/sum.
//
// The dropout mask is philox.hpp's over [B, NH, Sq, Sk]: one Philox call covers 8 consecutive
// keys of a row. In an mma tile a thread holds columns 2·q, 2·q + 1 (q = lane % 4) of each n8
// tile, so K and V rows are stored in shared memory permuted (key_order): the thread's 16 columns
// of a row are then 16 consecutive keys, two whole Philox calls with nothing to exchange, and the
// words of a call map to its columns in order. P·V sums over keys in any order as long as P's
// columns and V's rows agree.
//
// A score bias (T5's relative position bias, [NH, Sq, Sk] shared by the batch) comes in tiles
// beside K and V, in natural key order: a thread's 16 columns of a row are 16 consecutive keys,
// two 16-byte chunks of the bias row. With it the scores become s·scale + bias, and the softmax
// runs on those with the plain log2(e) factor (kernels whose template says Bias; the others are
// unchanged).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/attention.hpp"
#include "kernels/detail/vec.cuh"  // unpack8

namespace xfbench::kernels::detail {

// Shared tiles are panels of 64 columns: a head dim of 128 is two panels side by side (each
// its own swizzled [rows][64] block), so the same loads, swizzle and wgmma descriptors serve both.
constexpr int kHD = 64;           // the columns of one panel (and the head dim of every kernel)
constexpr int kMaxHD = 128;       // the Hopper kernels' largest head dim (two panels)
constexpr int kBlockM = 128;      // query rows per block
constexpr int kBlockN = 64;       // keys per tile (the Hopper forward at head dim 128: two)
constexpr int kChunks = kHD / 8;  // 16-byte chunks per panel row
constexpr float kLog2e = 1.4426950408889634f;

// Bytes from element 0 to sequence position `row` of head h in batch item b (2-byte elements).
__device__ __forceinline__ std::int64_t row_bytes(const HeadStrides& s, int b, int h,
                                                  std::int64_t row) {
  return 2 * (b * s.b + h * s.h + row * s.s);
}

struct FlashParams {
  const char *q, *k, *v;  // element 0 of (b=0, h=0)
  char* o;
  HeadStrides sq, sk, sv, so;  // in elements; K, V (and dK, dV) over NH / group heads
  int NH, Sq, Sk;
  int group;         // query heads per K/V head (grouped-query): head h reads K/V head h / group
  float scale_log2;  // softmax scale · log2(e)
  DropoutMask drop;
  const int* kv_lens;  // [B] (padding mask: keys j >= kv_lens[b] hidden) or null
  bool causal;         // query i sees keys j <= i
  float* lse;          // [B, NH, Sq] log2-domain row statistics for the backward, or null
  // [B, NH, Sq, Sk/16] dropout keep bits (bit j of word w of a row: key 16·w + j), written by the
  // forward and read by the backward when not null (else the backward draws them again).
  std::uint16_t* keep;
  const char* bias;    // [NH, Sq, Sk] score bias, or null (kernels with Bias read it)
  float scale;         // softmax scale
  int head_dim = kHD;  // 64, or 128 (the Hopper kernels, without a bias)
};

// Shared tiles are [rows][64] 16-bit elements with each row's 16-byte chunks XOR-swizzled by the
// row, so the 8 rows an ldmatrix reads (and cp.async writes) fall in distinct banks.
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * kHD + ((chunk ^ (row & 7)) << 3);
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared; zero-filled when !valid (the source is then not read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid = true) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }
// Waits until at most `Pending` of this thread's committed copy groups are still in flight.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}
__device__ __forceinline__ void cp_async_wait_all() { cp_async_wait<0>(); }

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += a·b for one m16n8k16 tile, fp32 accumulation.
template <class T>
__device__ __forceinline__ void mma(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                    std::uint32_t b1) {
  if constexpr (std::is_same<T, __half>::value) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

template <class T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same<T, __half>::value) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&h);
  } else {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&h);
  }
}

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Max and sum over the four threads of a quad (they hold one row of an mma tile).
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Shared row of key `key` of a 64-key tile: S column c = 8·nt + 2·q + e holds key 16·q + 2·nt + e.
// (A 128-key tile is two 64-key tiles one after the other.)
__device__ __forceinline__ int key_order(int key) {
  return ((key % 16) / 2) * 8 + (key / 16) * 2 + key % 2;
}

// Copies `Rows` rows of 64 elements (row stride `ld` elements) into a swizzled shared tile, rows
// at or past `valid_rows` zero-filled; KeyOrder stores source row r at row key_order(r) of its
// 64-row tile.
template <int Rows, int Threads, bool KeyOrder = false>
__device__ __forceinline__ void load_tile(std::uint16_t* tile, const char* src, std::int64_t ld,
                                          int valid_rows) {
  constexpr int kPerThread = Rows * kChunks / Threads;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int idx = threadIdx.x + i * Threads, row = idx / kChunks, chunk = idx % kChunks;
    const bool valid = row < valid_rows;
    const int at = !KeyOrder         ? row
                   : Rows == kBlockN ? key_order(row)
                                     : row / kBlockN * kBlockN + key_order(row % kBlockN);
    cp_async16(tile + swizzled(at, chunk), src + (valid ? row * ld * 2 + chunk * 16 : 0), valid);
  }
}

// 2 storage-precision values (4 bytes) as floats.
template <class T>
__device__ __forceinline__ void unpack2(float (&x)[2], std::uint32_t bits) {
  float2 f;
  if constexpr (std::is_same<T, __half>::value)
    f = __half22float2(*reinterpret_cast<const __half2*>(&bits));
  else
    f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits));
  x[0] = f.x, x[1] = f.y;
}

// s <- s·scale + bias for this thread's S fragments (layout as in RowState). chunk(mt, hf, c)
// gives the 16 bytes of bias for the fragment row's keys 16·(lane%4) + 8·c ... + 7: the
// thread's columns 2·nt + e = 8·c + j, i.e. n tiles 4c ... 4c + 3.
template <class T, int MT, class Chunk>
__device__ __forceinline__ void add_bias(float (&s)[MT][8][4], float scale, Chunk&& chunk) {
  int4 raw[MT][2][2];  // all loads first (loading a row at a time: 8% slower forward)
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf)
#pragma unroll
      for (int c = 0; c < 2; ++c) raw[mt][hf][c] = chunk(mt, hf, c);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        float b[8];
        unpack8<T>(b, raw[mt][hf][c]);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          float& x = s[mt][4 * c + j / 2][2 * hf + j % 2];
          x = fmaf(x, scale, b[j]);
        }
      }
}

// Chunk c of this thread's 16 bias values in row `row` of a [rows][64] shared tile (swizzled,
// natural key order).
__device__ __forceinline__ int4 bias_chunk(const std::uint16_t* tile, int row, int c) {
  return *reinterpret_cast<const int4*>(tile + swizzled(row, 2 * (threadIdx.x % 4) + c));
}

// The per-tile work both kernels share. A thread's S and O fragments are mma tiles [MT][8][4]
// (m16n8 accumulator layout: rows lane/4 and lane/4 + 8 of each 16-row tile, columns 2·(lane%4)
// + {0, 1} of each n8 tile); wgmma's accumulators have the same layout per warp.
template <int MT>
struct RowState {
  float max[MT][2], sum[MT][2];
  __device__ RowState() {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      max[mt][0] = max[mt][1] = -INFINITY, sum[mt][0] = sum[mt][1] = 0;
  }

  // s <- exp2(s·scale_log2 - new row max) over NT n8 tiles of keys (8: a 64-key tile); O (DT n8
  // tiles: 8 a 64-column panel) and the running sums are rescaled to the new max.
  template <int DT, int NT>
  __device__ __forceinline__ void softmax(float (&s)[MT][NT][4], float (&o)[MT][DT][4],
                                          float scale_log2) {
    float corr[MT][2];
    exponentiate(s, scale_log2, corr);
    rescale(o, corr);
  }
  // softmax without O: the new max, s's exponentials and the running sums; corr: the factor O
  // takes to the new max (rescale), for a caller whose O is still being accumulated.
  template <int NT>
  __device__ __forceinline__ void exponentiate(float (&s)[MT][NT][4], float scale_log2,
                                               float (&corr)[MT][2]) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
          mx = fmaxf(mx, fmaxf(s[mt][nt][2 * hf], s[mt][nt][2 * hf + 1]));
        const float m_new = fmaxf(max[mt][hf], quad_max(mx) * scale_log2);
        corr[mt][hf] = exp2_approx(max[mt][hf] - m_new);
        max[mt][hf] = m_new;
        float rs = 0.f;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& x = s[mt][nt][2 * hf + e];
            x = exp2_approx(fmaf(x, scale_log2, -m_new));
            rs += x;
          }
        sum[mt][hf] = sum[mt][hf] * corr[mt][hf] + rs;
      }
  }
  template <int DT>
  __device__ __forceinline__ static void rescale(float (&o)[MT][DT][4],
                                                 const float (&corr)[MT][2]) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf)
#pragma unroll
        for (int dt = 0; dt < DT; ++dt)
          o[mt][dt][2 * hf] *= corr[mt][hf], o[mt][dt][2 * hf + 1] *= corr[mt][hf];
  }
};

// Calls f(mt, hf, nt, e, kept) for each of this thread's elements of key tile t (the mask of
// dropout `drop`). row_groups: Philox group of the thread's first row and first key (16·(lane%4))
// of tile 0; rows mt·16 + hf·8 further down follow.
template <int MT, class F>
__device__ __forceinline__ void for_each_keep(const DropoutMask& drop, std::uint64_t row_groups,
                                              std::uint64_t groups_per_row, int t, F&& f) {
  const std::uint32_t keep_lo = drop.threshold, keep_hi = drop.threshold << 16;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf)
#pragma unroll
      for (int g = 0; g < 2; ++g) {
        const detail::Philox4 r =
            drop.random(row_groups + (mt * 16 + hf * 8) * groups_per_row + t * (kBlockN / 8) + g);
        const std::uint32_t words[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          f(mt, hf, 4 * g + j, 0, (words[j] & 0xFFFFu) < keep_lo);
          f(mt, hf, 4 * g + j, 1, words[j] < keep_hi);
        }
      }
}

// Philox group of element (row, 16·(lane%4)) of [B, NH, Sq, Sk] (the first key a thread holds).
__device__ __forceinline__ std::uint64_t first_group(const FlashParams& p, int b, int h, int row) {
  return ((std::uint64_t(b) * p.NH + h) * p.Sq + row) * std::uint64_t(p.Sk / 8) +
         2 * (threadIdx.x % 4);
}

// This thread's word of p.keep for its first row (row0) and key tile 0: the 16 keys it holds.
__device__ __forceinline__ std::int64_t keep_index(const FlashParams& p, int b, int h, int row0) {
  return ((std::int64_t(b) * p.NH + h) * p.Sq + row0) * (p.Sk / 16) + threadIdx.x % 4;
}

// Zeroes the dropped probabilities of the NT / 8 key tiles of 64 from `t` (see for_each_keep)
// of rows from row0 (s: NT n8 tiles), and saves the keep bits when p.keep is set. Tiles past Sk
// (the second half of a last tile of 128) hold no keys: nothing to draw or save.
template <int MT, int NT>
__device__ __forceinline__ void drop_tile(float (&s)[MT][NT][4], const FlashParams& p, int b, int h,
                                          int row0, int t) {
  const std::uint64_t groups = first_group(p, b, h, row0);
  const int tiles = NT == 8 ? 1 : min(NT / 8, p.Sk / kBlockN - t);
  if (!p.keep) {  // inference: no bits to build
#pragma unroll
    for (int sub = 0; sub < NT / 8; ++sub)
      if (sub < tiles)
        for_each_keep<MT>(p.drop, groups, p.Sk / 8, t + sub,
                          [&](int mt, int hf, int nt, int e, bool kept) {
                            if (!kept) s[mt][8 * sub + nt][2 * hf + e] = 0.f;
                          });
    return;
  }
#pragma unroll
  for (int sub = 0; sub < NT / 8; ++sub) {
    if (sub >= tiles) break;
    std::uint32_t bits[MT][2] = {};
    for_each_keep<MT>(p.drop, groups, p.Sk / 8, t + sub,
                      [&](int mt, int hf, int nt, int e, bool kept) {
                        if (!kept) s[mt][8 * sub + nt][2 * hf + e] = 0.f;
                        bits[mt][hf] |= std::uint32_t(kept) << (2 * nt + e);
                      });
    const std::int64_t at = keep_index(p, b, h, row0) + (t + sub) * (kBlockN / 16);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf)
        if (row0 + mt * 16 + hf * 8 < p.Sq)
          p.keep[at + std::int64_t(mt * 16 + hf * 8) * (p.Sk / 16)] = std::uint16_t(bits[mt][hf]);
  }
}

// P (S's probabilities in storage precision) as the A fragments of the NT / 2 16-key steps: n
// tiles 2j and 2j + 1 of S are key step j.
template <class T, int MT, int NT>
__device__ __forceinline__ void pack_p(std::uint32_t (&pa)[NT / 2][MT][4],
                                       const float (&s)[MT][NT][4]) {
#pragma unroll
  for (int kk = 0; kk < NT / 2; ++kk)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      pa[kk][mt][0] = pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      pa[kk][mt][1] = pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      pa[kk][mt][2] = pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      pa[kk][mt][3] = pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
}

// O / row sum · 1/(1-p), staged through the warp's own rows of `stage` (rows warp_row0 ...
// + 16·MT of the block; DT / 8 panels of kBlockM rows) for 16-byte stores.
template <class T, int MT, int DT>
__device__ __forceinline__ void store_o(const FlashParams& p, const RowState<MT>& rows,
                                        const float (&o)[MT][DT][4], std::uint16_t* stage,
                                        int warp_row0, int m0, int b, int h) {
  constexpr int kPanels = DT / 8;
  const int lane = threadIdx.x % 32;
  __syncwarp();  // the warp's earlier reads of these rows (Q fragments) come first
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const float sum = quad_sum(rows.sum[mt][hf]), inv = p.drop.scale / sum;
      const int row = warp_row0 + mt * 16 + hf * 8 + lane / 4;
      if (p.lse && lane % 4 == 0 && m0 + row < p.Sq)
        p.lse[(std::int64_t(b) * p.NH + h) * p.Sq + m0 + row] = rows.max[mt][hf] + __log2f(sum);
#pragma unroll
      for (int dt = 0; dt < DT; ++dt)
        *reinterpret_cast<std::uint32_t*>(stage + (dt / 8) * kBlockM * kHD + swizzled(row, dt % 8) +
                                          2 * (lane % 4)) =
            pack2<T>(o[mt][dt][2 * hf] * inv, o[mt][dt][2 * hf + 1] * inv);
    }
  __syncwarp();
  char* out = p.o + row_bytes(p.so, b, h, 0);
#pragma unroll
  for (int panel = 0; panel < kPanels; ++panel)
#pragma unroll
    for (int i = 0; i < 4 * MT; ++i) {
      const int row = warp_row0 + i * 4 + lane / 8, chunk = lane % 8;
      if (m0 + row < p.Sq)
        *reinterpret_cast<int4*>(out + ((m0 + row) * p.so.s + (panel * kChunks + chunk) * 8) * 2) =
            *reinterpret_cast<const int4*>(stage + panel * kBlockM * kHD + swizzled(row, chunk));
    }
}

// Key tiles of `Keys` keys a block of query rows from m0 needs: up to the last key any of its
// rows sees.
template <int Keys = kBlockN>
__device__ __forceinline__ int key_tiles(const FlashParams& p, int m0, int b) {
  int keys = p.Sk;
  if (p.causal) keys = min(keys, m0 + kBlockM);
  if (p.kv_lens) keys = min(keys, p.kv_lens[b]);
  return (keys + Keys - 1) / Keys;
}

// Hides (-inf) the scores of the NT / 8 key tiles of 64 from `t` that the masks (and the end of
// the keys) hide from this thread's rows (row0: its first row; mt, hf as in RowState). Columns
// are keys in key_order: 64·(nt / 8) + 16·(lane%4) + 2·(nt % 8) + e.
template <int MT, int NT>
__device__ __forceinline__ void mask_tile(float (&s)[MT][NT][4], const FlashParams& p, int b,
                                          int row0, int t) {
  const int len = p.kv_lens ? p.kv_lens[b] : p.Sk;
  const int key0 = t * kBlockN, keys = 8 * NT;
  if (key0 + keys <= len && (!p.causal || key0 + keys - 1 <= row0)) return;  // none hidden
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int row = row0 + mt * 16 + hf * 8;
      const int end = p.causal ? min(len, row + 1) : len;  // keys < end are seen
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (key0 + 64 * (nt / 8) + 16 * int(threadIdx.x % 4) + 2 * (nt % 8) + e >= end)
            s[mt][nt][2 * hf + e] = -INFINITY;
    }
}

// The order in which blocks take their work. Blocks start in index order; a head's items
// (blocks) are ranked heaviest first and heads are taken one after the other, so the blocks in
// flight share the rows of a few heads through L2. Where work differs between items (causal
// masks) the last `tail` heads are taken together instead, every head's rank r before any
// head's r + 1, so the grid ends on light items rather than on a heavy one running on while the
// rest of the GPU idles. (Heaviest first over all heads loses more to L2 misses than the tail
// costs: kernels/PERF_attention.md.)
struct BlockOrder {
  int items;  // work items (blocks) per head
  int heads;  // B·NH
  int tail;   // heads of the last section, 0: none
  // Rank of block `block` within its head and the head (b·NH + h) it works on.
  __host__ __device__ void locate(int block, int& rank, int& head) const {
    const int first = heads - tail;  // heads taken one after the other
    if (block < first * items) {
      head = block / items, rank = block % items;
    } else {
      const int r = block - first * items;
      rank = r / tail, head = first + r % tail;
    }
  }
  int blocks() const { return items * heads; }
};
// With uneven work (heaviest_share: the heaviest item's share of a head's work, 0 when even), a
// tail holding for each block the GPU runs at once (`slots`) 1.5 times the work of the heaviest
// item, so that the tail's heaviest items, which start first as slots free up, end no later than
// its lightest (1.5: where a schedule of the backward's work ends within 1-2% of even, the test
// FlashBlockOrderTailEndsTheGridOnTime). Grouped-query attention's backward makes its heaviest
// items G times a dQ block's; the old rule, two waves of blocks, then ended the grid on them.
BlockOrder block_order(int items, int heads, double heaviest_share, int slots);
// Blocks of a kernel with blocks_per_sm on each SM of the current device run at once.
int resident_blocks(int blocks_per_sm);

// A block's work: query rows m0 ... m0 + kBlockM - 1 of head (b, h) against the keys of its K/V
// head in tiles of Keys (64, or 128: two tiles of 64 one after the other), and the cp.async copies
// of its tiles into shared memory (one group per call). With a causal mask the blocks of a head
// are ranked from the last rows (the most key tiles) to the first.
template <int Threads, int Keys = kBlockN>
struct BlockTiles {
  static_assert(Keys % kBlockN == 0, "whole tiles of 64 keys");
  int m0, h, b, tiles;
  const char *q, *k, *v;  // the head's Q rows from m0, its first K and V rows
  const char* bias;       // the head's bias row m0 (when p.bias)

  __device__ BlockTiles(const FlashParams& p, const BlockOrder& order) {
    int rank, head;
    order.locate(blockIdx.x, rank, head);
    m0 = (p.causal ? order.items - 1 - rank : rank) * kBlockM;
    h = head % p.NH;
    b = head / p.NH;
    tiles = key_tiles<Keys>(p, m0, b);
    q = p.q + row_bytes(p.sq, b, h, m0);
    k = p.k + row_bytes(p.sk, b, h / p.group, 0);
    v = p.v + row_bytes(p.sv, b, h / p.group, 0);
    bias = p.bias + (std::int64_t(h) * p.Sq + m0) * p.Sk * 2;
  }

  // Whether key tile t lies wholly above the causal diagonal for the block's rows up to
  // m0 + last_row (the last tile can be, for a block's first rows): nothing to compute.
  __device__ bool above_diagonal(const FlashParams& p, int t, int last_row) const {
    return p.causal && t * Keys > m0 + last_row;
  }

  // The Q rows (past Sq zero-filled) with key tile 0; Panels 64-column panels of each (the head
  // dim / 64), panel c of a tile `rows` · 64 elements after panel c - 1.
  template <bool Bias = false, int Panels = 1>
  __device__ void load_q_and_keys(const FlashParams& p, std::uint16_t* sQ, std::uint16_t* sK,
                                  std::uint16_t* sV, std::uint16_t* sB = nullptr) const {
    load_q<Panels>(p, sQ);
    load_keys<Bias, Panels>(p, 0, sK, sV, sB);
  }
  template <int Panels = 1>
  __device__ void load_q(const FlashParams& p, std::uint16_t* sQ) const {  // not committed
#pragma unroll
    for (int c = 0; c < Panels; ++c)
      load_tile<kBlockM, Threads>(sQ + c * kBlockM * kHD, q + c * kHD * 2, p.sq.s, p.Sq - m0);
  }
  // K and V of key tile t, rows in key_order, rows past Sk zero-filled (the last tile of 128
  // can hold 64 keys); with Bias the block's [kBlockM][64] bias tile (natural key order, rows
  // past Sq zero-filled).
  template <bool Bias = false, int Panels = 1>
  __device__ void load_keys(const FlashParams& p, int t, std::uint16_t* sK, std::uint16_t* sV,
                            std::uint16_t* sB = nullptr) const {
    static_assert(!Bias || Keys == kBlockN, "bias tiles of 64 keys");
    load_rows<Panels>(p, t, sK, k, p.sk.s);
    load_rows<Panels>(p, t, sV, v, p.sv.s);
    if constexpr (Bias) load_tile<kBlockM, Threads>(sB, bias + t * kBlockN * 2, p.Sk, p.Sq - m0);
    cp_async_commit();
  }
  // Key tile t of K or V alone (src: k or v, ld its row stride), not committed: for a kernel that
  // loads K and V of different tiles.
  template <int Panels = 1>
  __device__ void load_rows(const FlashParams& p, int t, std::uint16_t* tile, const char* src,
                            std::int64_t ld) const {
    const int rows = Keys == kBlockN ? kBlockN : p.Sk - t * Keys;  // Sk: a multiple of 64
#pragma unroll
    for (int c = 0; c < Panels; ++c)
      load_tile<Keys, Threads, true>(tile + c * Keys * kHD,
                                     src + (std::int64_t(t) * Keys * ld + c * kHD) * 2, ld, rows);
  }
};

// The backward's inputs and outputs (flash_attention_bwd_sm90.cu).
struct FlashBwdParams {
  FlashParams f;       // Q, K, V, O and dropout as in the forward; lse as it wrote them
  const char* dout;    // dO, with O's strides
  char *dq, *dk, *dv;  // with Q's, K's and V's strides; dK, dV summed over each K/V head's group
  float* delta;        // [B, NH, Sq] scratch: D_i = Σ_d dO_id·O_id
  // With a bias and its gradient (else null): [NH, Sq + Sk - 1] sums of dS along each diagonal
  // j - i (over the batch), and per-block partial sums (bias_partial_elements).
  float *dbias, *dbias_partial;
  bool fp16;  // else bf16
};

// The backward's partial diagonal sums: per (b, h, key tile), Sq / 64 + 1 rows of kDiagRow
// (64 diagonals and 4 second parts: flash_attention_bwd_sm90.cu's DiagonalSums).
constexpr int kDiagRow = kBlockN + 4;
inline std::size_t bias_partial_elements(int B, int NH, int Sq, int Sk) {
  return std::size_t(B) * NH * (Sk / kBlockN) * (Sq / kBlockN + 1) * kDiagRow;
}

// 8 fp16 or bf16 values at p (16-byte aligned) as floats.
__device__ __forceinline__ void unpack8(float (&x)[8], const char* p, bool fp16) {
  const int4 raw = *reinterpret_cast<const int4*>(p);
  fp16 ? unpack8<__half>(x, raw) : unpack8<__nv_bfloat16>(x, raw);
}

template <class T>
struct TypeTag {
  using type = T;
};
// Calls f(TypeTag<T>{}, Masked, Bias) (std::bool_constant) with the forward kernel variant p needs.
template <class F>
void forward_variant(const FlashParams& p, bool fp16, F&& f) {
  const bool masked = p.causal || p.kv_lens, bias = p.bias;
  auto with_type = [&](auto t) {
    auto with_mask = [&](auto m) { bias ? f(t, m, std::true_type{}) : f(t, m, std::false_type{}); };
    masked ? with_mask(std::true_type{}) : with_mask(std::false_type{});
  };
  fp16 ? with_type(TypeTag<__half>{}) : with_type(TypeTag<__nv_bfloat16>{});
}

// Launchers, one per kernel file; B: batch.
BlockOrder forward_order(const FlashParams& p, int B, int blocks_per_sm);  // both forwards'
void launch_flash_mma(const FlashParams& p, bool fp16, int B, cudaStream_t stream);
// overlap: the head-dim-128 kernel that overlaps softmax and products, its warpgroups in
// ping-pong (else the lockstep one).
void launch_flash_wgmma(const FlashParams& p, bool fp16, int B, bool overlap, cudaStream_t stream);
void launch_flash_backward(const FlashBwdParams& p, int B, cudaStream_t stream);

}  // namespace xfbench::kernels::detail
