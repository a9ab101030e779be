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
template <int Rows, bool KeyOrder = false>
__device__ __forceinline__ void load_tile(std::uint16_t* tile, const char* src, std::int64_t ld,
                                          int valid_rows) {
  constexpr int kPerThread = Rows * kChunks / kThreads;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int idx = threadIdx.x + i * kThreads, row = idx / kChunks, chunk = idx % kChunks;
    const bool valid = row < valid_rows;
    cp_async16(tile + swizzled(KeyOrder ? key_order(row) : row, chunk),
               src + (valid ? row * ld * 2 + chunk * 16 : 0), valid);
  }
}

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

  load_tile<kBlockM>(sQ, q, p.sq.s, p.Sq - m0);
  load_tile<kBlockN, true>(sK[0], k, p.sk.s, kBlockN);
  load_tile<kBlockN, true>(sV[0], v, p.sv.s, kBlockN);
  cp_async_commit();

  // Per thread: rows (mt, half) = warp·32 + mt·16 + half·8 + lane/4 of the block.
  std::uint32_t qf[2][4][4];  // Q as A fragments [m tile][k step]
  float o[2][8][4] = {};      // O accumulators [m tile][d tile]
  float row_max[2][2], row_sum[2][2] = {};
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) row_max[mt][0] = row_max[mt][1] = -INFINITY;

  // Dropout: Philox group of (row (mt, half), keys 16·q .. 16·q + 7 of tile 0); q = lane % 4.
  const int ql = lane & 3;
  const std::uint64_t groups_per_row = p.Sk / 8;
  const std::uint64_t my_groups =
      ((std::uint64_t(b) * p.NH + h) * p.Sq + m0 + warp * 32 + lane / 4) * groups_per_row + 2 * ql;
  const std::uint32_t keep_lo = p.drop.threshold, keep_hi = p.drop.threshold << 16;

  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1;
    cp_async_wait_all();
    __syncthreads();  // tile t visible; every warp is done with tile t - 1's buffers
    if (t + 1 < tiles) {
      load_tile<kBlockN, true>(sK[buf ^ 1], k + std::int64_t(t + 1) * kBlockN * p.sk.s * 2, p.sk.s,
                               kBlockN);
      load_tile<kBlockN, true>(sV[buf ^ 1], v + std::int64_t(t + 1) * kBlockN * p.sv.s * 2, p.sv.s,
                               kBlockN);
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

      // Online softmax.
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
          mx = fmaxf(mx, fmaxf(s[mt][nt][2 * hf], s[mt][nt][2 * hf + 1]));
        const float m_new = fmaxf(row_max[mt][hf], quad_max(mx) * p.scale_log2);
        const float corr = exp2_approx(row_max[mt][hf] - m_new);
        row_max[mt][hf] = m_new;
        float sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& x = s[mt][nt][2 * hf + e];
            x = exp2_approx(fmaf(x, p.scale_log2, -m_new));
            sum += x;
          }
        row_sum[mt][hf] = row_sum[mt][hf] * corr + sum;
#pragma unroll
        for (int dt = 0; dt < 8; ++dt) o[mt][dt][2 * hf] *= corr, o[mt][dt][2 * hf + 1] *= corr;
      }

    if (p.drop.active()) {
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf)
#pragma unroll
          for (int g = 0; g < 2; ++g) {
            const detail::Philox4 r = p.drop.random(
                my_groups + (mt * 16 + hf * 8) * groups_per_row + t * (kBlockN / 8) + g);
            const std::uint32_t words[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              float* x = s[mt][4 * g + j] + 2 * hf;
              if ((words[j] & 0xFFFFu) >= keep_lo) x[0] = 0.f;
              if (words[j] >= keep_hi) x[1] = 0.f;
            }
          }
    }

    // O += P·V: S's accumulators of n tiles 2j, 2j+1 are the A fragment of key step j; V rows
    // are keys (k) with d (n) contiguous, so its B fragments come transposed.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      std::uint32_t pa[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        pa[mt][0] = pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][1] = pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][3] = pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < 4; ++dp) {
        std::uint32_t vb[4];
        ldmatrix_x4_trans(
            vb, sV[buf] + swizzled(kk * 16 + ((lane / 8) % 2) * 8 + lane % 8, dp * 2 + lane / 16));
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          mma<T>(o[mt][2 * dp], pa[mt], vb[0], vb[1]);
          mma<T>(o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
        }
      }
    }
  }

  // O / rowsum · 1/(1-p), staged through this warp's own rows of sQ for 16-byte stores.
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const float inv = p.drop.scale / quad_sum(row_sum[mt][hf]);
      const int row = warp * 32 + mt * 16 + hf * 8 + lane / 4;
#pragma unroll
      for (int dt = 0; dt < 8; ++dt)
        *reinterpret_cast<std::uint32_t*>(sQ + swizzled(row, dt) + 2 * ql) =
            pack2<T>(o[mt][dt][2 * hf] * inv, o[mt][dt][2 * hf + 1] * inv);
    }
  __syncwarp();
  char* out = p.o + 2 * (b * p.so.b + h * p.so.h);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = warp * 32 + i * 4 + lane / 8, chunk = lane % 8;
    if (m0 + row < p.Sq)
      *reinterpret_cast<int4*>(out + ((m0 + row) * p.so.s + chunk * 8) * 2) =
          *reinterpret_cast<const int4*>(sQ + swizzled(row, chunk));
  }
}

bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

}  // namespace

FlashAttention::FlashAttention(const AttentionDesc& desc) : desc_(desc) {
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
  if (d.precision == Precision::fp16)
    flash_forward_kernel<__half><<<grid, kThreads, 0, stream>>>(p);
  else
    flash_forward_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(p);
  XF_CUDA_CHECK_LAUNCH();
}

}  // namespace xfbench::kernels
