// xfbench's flash attention forward (attention.hpp): FlashAttention-2's schedule on mma.sync.
//
// A block of 4 warps owns 128 query rows of one (b, h), 32 per warp, so every K/V fragment read
// from shared memory feeds two MMAs (with 16 rows per warp the loop is shared-memory bound). It
// walks the keys in tiles of 64, double-buffered with cp.async: S = Q·Kᵀ in fp32 registers, the
// online softmax (running max and sum per row, base-2 exponent), the dropout mask, then O += P·V
// with P rounded to storage precision as the A operand straight from S's registers.
//
// The dropout mask is philox.hpp's over [B, NH, Sq, Sk]: one Philox call covers 8 consecutive
// keys of a row. In an mma tile a thread holds columns 2·q, 2·q + 1 (q = lane % 4) of each n8
// tile, so K and V rows are stored in shared memory permuted (key_order): the thread's 16 columns
// of a row are then 16 consecutive keys, two whole Philox calls with nothing to exchange, and the
// words of a call map to its columns in order. P·V sums over keys in any order as long as P's
// columns and V's rows agree. The row sum uses the kept and dropped probabilities alike (softmax
// first, dropout after, as in PyTorch); the 1/(1-p) scale is folded into the final 1/sum.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/attention.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {
namespace {

constexpr int kHD = 64;       // head dimension the kernel takes
constexpr int kBlockM = 128;  // query rows per block
constexpr int kBlockN = 64;   // keys per tile
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kChunks = kHD / 8;  // 16-byte chunks per row

struct FlashParams {
  const char *q, *k, *v;  // element 0 of (b=0, h=0)
  char* o;
  HeadStrides sq, sk, sv, so;  // in elements
  int NH, Sq, Sk;
  float scale_log2;  // softmax scale · log2(e)
  DropoutMask drop;
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
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n"); }

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
__device__ __forceinline__ int key_order(int key) {
  return ((key % 16) / 2) * 8 + (key / 16) * 2 + key % 2;
}

// Copies `Rows` rows of 64 elements (row stride `ld` elements) into a swizzled shared tile, rows
// at or past `valid_rows` zero-filled; KeyOrder stores source row r at row key_order(r).
template <int Rows, int Threads, bool KeyOrder = false>
__device__ __forceinline__ void load_tile(std::uint16_t* tile, const char* src, std::int64_t ld,
                                          int valid_rows) {
  constexpr int kPerThread = Rows * kChunks / Threads;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int idx = threadIdx.x + i * Threads, row = idx / kChunks, chunk = idx % kChunks;
    const bool valid = row < valid_rows;
    cp_async16(tile + swizzled(KeyOrder ? key_order(row) : row, chunk),
               src + (valid ? row * ld * 2 + chunk * 16 : 0), valid);
  }
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

  // s <- exp2(s·scale_log2 - new row max); O and the running sums are rescaled to the new max.
  __device__ __forceinline__ void softmax(float (&s)[MT][8][4], float (&o)[MT][8][4],
                                          float scale_log2) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
          mx = fmaxf(mx, fmaxf(s[mt][nt][2 * hf], s[mt][nt][2 * hf + 1]));
        const float m_new = fmaxf(max[mt][hf], quad_max(mx) * scale_log2);
        const float corr = exp2_approx(max[mt][hf] - m_new);
        max[mt][hf] = m_new;
        float rs = 0.f;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& x = s[mt][nt][2 * hf + e];
            x = exp2_approx(fmaf(x, scale_log2, -m_new));
            rs += x;
          }
        sum[mt][hf] = sum[mt][hf] * corr + rs;
#pragma unroll
        for (int dt = 0; dt < 8; ++dt) o[mt][dt][2 * hf] *= corr, o[mt][dt][2 * hf + 1] *= corr;
      }
  }
};

// Zeroes the dropped probabilities of key tile `t`. row_groups: Philox group of this thread's
// first row and first key (16·(lane%4)) of tile 0; rows mt·16 + hf·8 further down follow.
template <int MT>
__device__ __forceinline__ void drop_tile(float (&s)[MT][8][4], const DropoutMask& drop,
                                          std::uint64_t row_groups, std::uint64_t groups_per_row,
                                          int t) {
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
          float* x = s[mt][4 * g + j] + 2 * hf;
          if ((words[j] & 0xFFFFu) >= keep_lo) x[0] = 0.f;
          if (words[j] >= keep_hi) x[1] = 0.f;
        }
      }
}

// P (S's probabilities in storage precision) as the A fragments of the four 16-key steps: n
// tiles 2j and 2j + 1 of S are key step j.
template <class T, int MT>
__device__ __forceinline__ void pack_p(std::uint32_t (&pa)[4][MT][4], const float (&s)[MT][8][4]) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      pa[kk][mt][0] = pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      pa[kk][mt][1] = pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      pa[kk][mt][2] = pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      pa[kk][mt][3] = pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
}

// O / row sum · 1/(1-p), staged through the warp's own rows of `stage` (rows warp_row0 ...
// + 16·MT of the block) for 16-byte stores.
template <class T, int MT>
__device__ __forceinline__ void store_o(const FlashParams& p, const RowState<MT>& rows,
                                        const float (&o)[MT][8][4], std::uint16_t* stage,
                                        int warp_row0, int m0, int b, int h) {
  const int lane = threadIdx.x % 32;
  __syncwarp();  // the warp's earlier reads of these rows (Q fragments) come first
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const float inv = p.drop.scale / quad_sum(rows.sum[mt][hf]);
      const int row = warp_row0 + mt * 16 + hf * 8 + lane / 4;
#pragma unroll
      for (int dt = 0; dt < 8; ++dt)
        *reinterpret_cast<std::uint32_t*>(stage + swizzled(row, dt) + 2 * (lane % 4)) =
            pack2<T>(o[mt][dt][2 * hf] * inv, o[mt][dt][2 * hf + 1] * inv);
    }
  __syncwarp();
  char* out = p.o + 2 * (b * p.so.b + h * p.so.h);
#pragma unroll
  for (int i = 0; i < 4 * MT; ++i) {
    const int row = warp_row0 + i * 4 + lane / 8, chunk = lane % 8;
    if (m0 + row < p.Sq)
      *reinterpret_cast<int4*>(out + ((m0 + row) * p.so.s + chunk * 8) * 2) =
          *reinterpret_cast<const int4*>(stage + swizzled(row, chunk));
  }
}

// Philox group of element (row, 16·(lane%4)) of [B, NH, Sq, Sk] (the first key a thread holds).
__device__ __forceinline__ std::uint64_t first_group(const FlashParams& p, int b, int h, int row) {
  return ((std::uint64_t(b) * p.NH + h) * p.Sq + row) * std::uint64_t(p.Sk / 8) +
         2 * (threadIdx.x % 4);
}

// ---- mma.sync kernel (any sm_80+ GPU) ------------------------------------------------------
// 4 warps, 32 query rows each, so every K/V fragment read from shared memory feeds two MMAs
// (with 16 rows per warp the loop is shared-memory bound).
template <class T>
__global__ void __launch_bounds__(kThreads, 2) flash_forward_kernel(FlashParams p) {
  __shared__ __align__(128) std::uint16_t sQ[kBlockM * kHD];
  __shared__ __align__(128) std::uint16_t sK[2][kBlockN * kHD];
  __shared__ __align__(128) std::uint16_t sV[2][kBlockN * kHD];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m0 = blockIdx.x * kBlockM, h = blockIdx.y, b = blockIdx.z;
  const char* q = p.q + 2 * (b * p.sq.b + h * p.sq.h + std::int64_t(m0) * p.sq.s);
  const char* k = p.k + 2 * (b * p.sk.b + h * p.sk.h);
  const char* v = p.v + 2 * (b * p.sv.b + h * p.sv.h);
  const int tiles = p.Sk / kBlockN;

  load_tile<kBlockM, kThreads>(sQ, q, p.sq.s, p.Sq - m0);
  load_tile<kBlockN, kThreads, true>(sK[0], k, p.sk.s, kBlockN);
  load_tile<kBlockN, kThreads, true>(sV[0], v, p.sv.s, kBlockN);
  cp_async_commit();

  std::uint32_t qf[2][4][4];  // Q as A fragments [m tile][k step]
  float o[2][8][4] = {};      // O accumulators [m tile][d tile]
  RowState<2> rows;
  const std::uint64_t groups = first_group(p, b, h, m0 + warp * 32 + lane / 4);

  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1;
    cp_async_wait_all();
    __syncthreads();  // tile t visible; every warp is done with tile t - 1's buffers
    if (t + 1 < tiles) {
      load_tile<kBlockN, kThreads, true>(
          sK[buf ^ 1], k + std::int64_t(t + 1) * kBlockN * p.sk.s * 2, p.sk.s, kBlockN);
      load_tile<kBlockN, kThreads, true>(
          sV[buf ^ 1], v + std::int64_t(t + 1) * kBlockN * p.sv.s * 2, p.sv.s, kBlockN);
      cp_async_commit();
    }
    if (t == 0) {
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
          ldmatrix_x4(qf[mt][ks],
                      sQ + swizzled(warp * 32 + mt * 16 + lane % 16, ks * 2 + lane / 16));
    }

    // S = Q·Kᵀ: K rows are keys (n) with d (k) contiguous, i.e. the B operand's column layout.
    float s[2][8][4] = {};
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        std::uint32_t kb[4];
        ldmatrix_x4(
            kb, sK[buf] + swizzled(np * 16 + (lane / 16) * 8 + lane % 8, ks * 2 + (lane / 8) % 2));
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          mma<T>(s[mt][2 * np], qf[mt][ks], kb[0], kb[1]);
          mma<T>(s[mt][2 * np + 1], qf[mt][ks], kb[2], kb[3]);
        }
      }

    rows.softmax(s, o, p.scale_log2);
    if (p.drop.active()) drop_tile(s, p.drop, groups, p.Sk / 8, t);

    // O += P·V: V rows are keys (k) with d (n) contiguous, so its B fragments come transposed.
    std::uint32_t pa[4][2][4];
    pack_p<T>(pa, s);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
#pragma unroll
      for (int dp = 0; dp < 4; ++dp) {
        std::uint32_t vb[4];
        ldmatrix_x4_trans(
            vb, sV[buf] + swizzled(kk * 16 + ((lane / 8) % 2) * 8 + lane % 8, dp * 2 + lane / 16));
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          mma<T>(o[mt][2 * dp], pa[kk][mt], vb[0], vb[1]);
          mma<T>(o[mt][2 * dp + 1], pa[kk][mt], vb[2], vb[3]);
        }
      }
  }
  store_o<T>(p, rows, o, sQ, warp * 32, m0, b, h);
}

// ---- wgmma kernel (Hopper, sm_90a) ---------------------------------------------------------
// Two warpgroups of 64 query rows. S = Q·Kᵀ reads Q and K straight from shared memory and P·V
// takes P from registers, both as asynchronous warpgroup MMAs, so the tensor cores of one
// warpgroup's products run while the other warpgroup does its softmax and dropout. The shared
// tiles above are exactly wgmma's 128-byte-swizzled layouts: K-major for Q and K, MN-major for V.
constexpr int kWgThreads = 256;

__device__ __forceinline__ std::uint64_t wgmma_desc(const void* tile, std::uint32_t lbo,
                                                    std::uint32_t sbo) {
  return std::uint64_t((smem_addr(tile) & 0x3FFFF) >> 4) | std::uint64_t(lbo >> 4) << 16 |
         std::uint64_t(sbo >> 4) << 32 | std::uint64_t(1) << 62;  // 1: 128-byte swizzle
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define XF_WGMMA_D                                                                              \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define XF_WGMMA_D_OPERANDS(d)                                                                  \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),     \
      "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
      "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), \
      "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
      "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), \
      "+f"(d[7][2]), "+f"(d[7][3])

// d (+)= A·B, m64n64k16, A and B K-major in shared memory.
template <class T>
__device__ __forceinline__ void wgmma_ss(float (&d)[8][4], std::uint64_t a, std::uint64_t b,
                                         int accumulate) {
  if constexpr (std::is_same<T, __half>::value)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " XF_WGMMA_D
        ", %32, %33, p, 1, 1, 0, 0;\n}\n"
        : XF_WGMMA_D_OPERANDS(d)
        : "l"(a), "l"(b), "r"(accumulate));
  else
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " XF_WGMMA_D
        ", %32, %33, p, 1, 1, 0, 0;\n}\n"
        : XF_WGMMA_D_OPERANDS(d)
        : "l"(a), "l"(b), "r"(accumulate));
}

// d += A·B, m64n64k16, A from registers (mma A fragment layout per warp), B MN-major in shared.
template <class T>
__device__ __forceinline__ void wgmma_rs(float (&d)[8][4], const std::uint32_t (&a)[4],
                                         std::uint64_t b) {
  if constexpr (std::is_same<T, __half>::value)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " XF_WGMMA_D
        ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : XF_WGMMA_D_OPERANDS(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
  else
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " XF_WGMMA_D
        ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : XF_WGMMA_D_OPERANDS(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
#undef XF_WGMMA_D
#undef XF_WGMMA_D_OPERANDS

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit_and_wait() {
  asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
// Makes this thread's cp.async writes to shared memory visible to wgmma (the async proxy).
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
#endif

template <class T>
__global__ void __launch_bounds__(kWgThreads, 2) flash_forward_wgmma_kernel(FlashParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) std::uint16_t smem[];  // 128-byte swizzle: 1024-byte atoms
  std::uint16_t* sQ = smem;
  auto sK = [&](int buf) { return sQ + (kBlockM + buf * kBlockN) * kHD; };
  auto sV = [&](int buf) { return sQ + (kBlockM + (2 + buf) * kBlockN) * kHD; };

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wg = warp / 4;
  const int m0 = blockIdx.x * kBlockM, h = blockIdx.y, b = blockIdx.z;
  const char* q = p.q + 2 * (b * p.sq.b + h * p.sq.h + std::int64_t(m0) * p.sq.s);
  const char* k = p.k + 2 * (b * p.sk.b + h * p.sk.h);
  const char* v = p.v + 2 * (b * p.sv.b + h * p.sv.h);
  const int tiles = p.Sk / kBlockN;

  load_tile<kBlockM, kWgThreads>(sQ, q, p.sq.s, p.Sq - m0);
  load_tile<kBlockN, kWgThreads, true>(sK(0), k, p.sk.s, kBlockN);
  load_tile<kBlockN, kWgThreads, true>(sV(0), v, p.sv.s, kBlockN);
  cp_async_commit();

  float o[1][8][4] = {};
  RowState<1> rows;
  const std::uint64_t groups = first_group(p, b, h, m0 + warp * 16 + lane / 4);
  // K-major tiles: 8-row groups 1024 bytes apart, a 16-element k step is 32 bytes further in.
  // V (MN-major): 16-key steps are 2048 bytes apart.
  const std::uint64_t q_desc = wgmma_desc(sQ + wg * 64 * kHD, 16, 1024);

  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1;
    cp_async_wait_all();
    fence_proxy_async();
    __syncthreads();  // tile t visible to wgmma; everyone is done with tile t - 1's buffers
    if (t + 1 < tiles) {
      load_tile<kBlockN, kWgThreads, true>(
          sK(buf ^ 1), k + std::int64_t(t + 1) * kBlockN * p.sk.s * 2, p.sk.s, kBlockN);
      load_tile<kBlockN, kWgThreads, true>(
          sV(buf ^ 1), v + std::int64_t(t + 1) * kBlockN * p.sv.s * 2, p.sv.s, kBlockN);
      cp_async_commit();
    }
    const std::uint64_t k_desc = wgmma_desc(sK(buf), 16, 1024);
    const std::uint64_t v_desc = wgmma_desc(sV(buf), 8192, 1024);

    float s[1][8][4];
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) wgmma_ss<T>(s[0], q_desc + 2 * ks, k_desc + 2 * ks, ks);
    wgmma_commit_and_wait();

    rows.softmax(s, o, p.scale_log2);
    if (p.drop.active()) drop_tile(s, p.drop, groups, p.Sk / 8, t);
    std::uint32_t pa[4][1][4];
    pack_p<T>(pa, s);

    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) wgmma_rs<T>(o[0], pa[kk][0], v_desc + kk * (2048 >> 4));
    wgmma_commit_and_wait();
  }
  __syncthreads();  // every warpgroup's reads of sQ are done before it becomes the output stage
  store_o<T>(p, rows, o, sQ, warp * 16, m0, b, h);
#endif
}

bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

}  // namespace

FlashAttention::FlashAttention(const AttentionDesc& desc, FlashKernel kernel) : desc_(desc) {
  check_attention_desc(desc);
  const auto& d = desc;
  if (d.HD != kHD)
    XF_THROW(Unsupported, "flash attention takes head dim 64, not " + std::to_string(d.HD));
  if (d.Sq % 64 != 0 || d.Sk % kBlockN != 0)
    XF_THROW(Unsupported, "flash attention needs sequence lengths divisible by 64, not " +
                              std::to_string(d.Sq) + " x " + std::to_string(d.Sk));
  if (d.causal || d.padding_mask || d.bias)
    XF_THROW(Unsupported, "flash attention takes no causal/padding mask or score bias yet");
  for (const HeadStrides* s : {&d.q, &d.k, &d.v, &d.o})
    if (s->b % 8 || s->h % 8 || s->s % 8)
      XF_THROW(InvalidArgument, "flash attention: strides must be multiples of 8 elements");
#if defined(XF_FLASH_WGMMA)  // this build has the sm_90a kernel (kernels/CMakeLists.txt)
  // No usable GPU here: the description is still checked; forward() reports the CUDA error.
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
    cudaGetLastError();
  wgmma_ = kernel == FlashKernel::best && major == 9 && minor == 0;
#else
  (void)kernel;
#endif
}

void FlashAttention::forward(void* o, const void* q, const void* k, const void* v, Dropout dropout,
                             cudaStream_t stream) const {
  const auto& d = desc_;
  if (dropout.p != d.dropout) XF_THROW(InvalidArgument, "flash attention: dropout.p differs");
  if (!aligned16(o) || !aligned16(q) || !aligned16(k) || !aligned16(v))
    XF_THROW(InvalidArgument, "flash attention: Q, K, V, O must be 16-byte aligned");
  FlashParams p{static_cast<const char*>(q),
                static_cast<const char*>(k),
                static_cast<const char*>(v),
                static_cast<char*>(o),
                d.q,
                d.k,
                d.v,
                d.o,
                d.NH,
                d.Sq,
                d.Sk,
                d.softmax_scale() * 1.4426950408889634f,
                DropoutMask(dropout)};
  const dim3 grid((d.Sq + kBlockM - 1) / kBlockM, d.NH, d.B);
  const bool fp16 = d.precision == Precision::fp16;
  if (wgmma_) {
    constexpr std::size_t smem = (kBlockM + 4 * kBlockN) * kHD * 2;
    fp16 ? flash_forward_wgmma_kernel<__half><<<grid, kWgThreads, smem, stream>>>(p)
         : flash_forward_wgmma_kernel<__nv_bfloat16><<<grid, kWgThreads, smem, stream>>>(p);
  } else {
    fp16 ? flash_forward_kernel<__half><<<grid, kThreads, 0, stream>>>(p)
         : flash_forward_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(p);
  }
  XF_CUDA_CHECK_LAUNCH();
}

}  // namespace xfbench::kernels
