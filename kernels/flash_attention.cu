// xfbench's flash attention forward (attention.hpp): the FlashAttention class and its mma.sync
// kernel, FlashAttention-2's schedule for any sm_80+ GPU (detail/flash.cuh has what both kernels
// share; flash_attention_sm90.cu the Hopper one).
//
// A block of 4 warps owns 128 query rows of one (b, h), 32 per warp, so every K/V fragment read
// from shared memory feeds two MMAs (with 16 rows per warp the loop is shared-memory bound); K/V
// tiles are double-buffered with cp.async, and P is the A operand straight from S's registers.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/detail/flash.cuh"
#include "xfbench/error.hpp"

namespace xfbench::kernels {
namespace detail {
namespace {

constexpr int kThreads = 128, kBlocksPerSm = 2;

// Bias: the score bias is read from global memory (L2: the batch shares it), not staged.
template <class T, bool Masked, bool Bias>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    flash_forward_kernel(FlashParams p, BlockOrder order) {
  __shared__ __align__(128) std::uint16_t sQ[kBlockM * kHD];
  __shared__ __align__(128) std::uint16_t sK[2][kBlockN * kHD];
  __shared__ __align__(128) std::uint16_t sV[2][kBlockN * kHD];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const BlockTiles<kThreads> blk(p, order);
  blk.load_q_and_keys(p, sQ, sK[0], sV[0]);

  std::uint32_t qf[2][4][4];  // Q as A fragments [m tile][k step]
  float o[2][8][4] = {};      // O accumulators [m tile][d tile]
  RowState<2> rows;

  for (int t = 0; t < blk.tiles; ++t) {
    const int buf = t & 1;
    cp_async_wait_all();
    __syncthreads();  // tile t visible; every warp is done with tile t - 1's buffers
    if (t + 1 < blk.tiles) blk.load_keys(p, t + 1, sK[buf ^ 1], sV[buf ^ 1]);
    if (t == 0) {
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
          ldmatrix_x4(qf[mt][ks],
                      sQ + swizzled(warp * 32 + mt * 16 + lane % 16, ks * 2 + lane / 16));
    }

    if constexpr (Masked)
      if (blk.above_diagonal(p, t, warp * 32 + 31)) continue;  // only other warps' rows see it

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

    if constexpr (Bias)
      add_bias<T>(s, p.scale, [&](int mt, int hf, int c) {
        const int row = warp * 32 + mt * 16 + hf * 8 + lane / 4;
        return blk.m0 + row < p.Sq
                   ? *reinterpret_cast<const int4*>(
                         blk.bias +
                         (std::int64_t(row) * p.Sk + t * kBlockN + 16 * (lane % 4) + 8 * c) * 2)
                   : int4{};
      });
    if constexpr (Masked) mask_tile(s, p, blk.b, blk.m0 + warp * 32 + lane / 4, t);
    rows.softmax(s, o, Bias ? kLog2e : p.scale_log2);
    if (p.drop.active()) drop_tile(s, p, blk.b, blk.h, blk.m0 + warp * 32 + lane / 4, t);

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
  store_o<T>(p, rows, o, sQ, warp * 32, blk.m0, blk.b, blk.h);
}

}  // namespace

BlockOrder block_order(int items, int heads, double heaviest_share, int slots) {
  if (heaviest_share <= 0 || slots <= 0) return {items, heads, 0};
  const double tail = std::ceil(1.5 * slots * heaviest_share - 1e-9);  // not one more for rounding
  return {items, heads, int(std::min<double>(heads, tail))};
}

int resident_blocks(int blocks_per_sm) {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return 0;  // no tail
  return sms * blocks_per_sm;
}

// Causal, block r of a head's T items does r + 1 key tiles (of kBlockN per kBlockM rows, the
// same ratio for all): the heaviest T of T·(T + 1) / 2.
BlockOrder forward_order(const FlashParams& p, int B, int blocks_per_sm) {
  const int items = (p.Sq + kBlockM - 1) / kBlockM;
  return block_order(items, B * p.NH, p.causal ? 2.0 / (items + 1) : 0.0,
                     resident_blocks(blocks_per_sm));
}

void launch_flash_mma(const FlashParams& p, bool fp16, int B, cudaStream_t stream) {
  const BlockOrder order = forward_order(p, B, kBlocksPerSm);
  auto run = [&](auto kernel) { kernel<<<order.blocks(), kThreads, 0, stream>>>(p, order); };
  forward_variant(p, fp16, [&](auto t, auto masked, auto bias) {
    run(flash_forward_kernel<typename decltype(t)::type, decltype(masked)::value,
                             decltype(bias)::value>);
  });
}

}  // namespace detail

namespace {
bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }
}  // namespace

FlashAttention::FlashAttention(const AttentionDesc& desc, FlashKernel kernel) : desc_(desc) {
  check_attention_desc(desc);
  const auto& d = desc;
  if (d.HD != detail::kHD && d.HD != detail::kMaxHD)
    XF_THROW(Unsupported, "flash attention takes head dim 64 or 128, not " + std::to_string(d.HD));
  if (d.Sq % 64 != 0 || d.Sk % detail::kBlockN != 0)
    XF_THROW(Unsupported, "flash attention needs sequence lengths divisible by 64, not " +
                              std::to_string(d.Sq) + " x " + std::to_string(d.Sk));
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
  wgmma_ = kernel != FlashKernel::mma && major == 9 && minor == 0;
  overlap_ = kernel != FlashKernel::lockstep;
#else
  (void)kernel;
#endif
  if (d.HD == detail::kMaxHD && (!wgmma_ || d.bias))
    XF_THROW(Unsupported,
             "flash attention at head dim 128 takes the Hopper kernel (an sm_90a build on an "
             "sm_90 GPU) and no score bias");
}

bool FlashAttention::has_backward() const { return wgmma_ && !desc_.padding_mask; }

std::size_t FlashAttention::stats_elements() const {
  return std::size_t(desc_.B) * desc_.NH * desc_.Sq;
}

std::size_t FlashAttention::keep_bytes() const {
  return desc_.dropout > 0.f ? stats_elements() * std::size_t(desc_.Sk / 8) : 0;
}

std::size_t FlashAttention::scratch_elements() const {
  const auto& d = desc_;
  return stats_elements() + (d.bias ? detail::bias_partial_elements(d.B, d.NH, d.Sq, d.Sk) : 0);
}

std::size_t FlashAttention::bias_grad_elements() const {
  return desc_.bias ? std::size_t(desc_.NH) * (desc_.Sq + desc_.Sk - 1) : 0;
}

namespace {
detail::FlashParams params(const AttentionDesc& d, void* o, const FlashSaved& saved, const void* q,
                           const void* k, const void* v, const int* kv_lens, const void* bias,
                           Dropout dropout) {
  if (dropout.p != d.dropout) XF_THROW(InvalidArgument, "flash attention: dropout.p differs");
  if (!aligned16(o) || !aligned16(q) || !aligned16(k) || !aligned16(v))
    XF_THROW(InvalidArgument, "flash attention: Q, K, V, O must be 16-byte aligned");
  if (d.bias != (bias != nullptr) || !aligned16(bias))
    XF_THROW(InvalidArgument, d.bias ? "flash attention: the score bias is missing or misaligned"
                                     : "flash attention: a score bias needs desc.bias");
  return {static_cast<const char*>(q),
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
          d.group(),
          d.softmax_scale() * detail::kLog2e,
          DropoutMask(dropout),
          d.padding_mask ? kv_lens : nullptr,
          d.causal,
          saved.lse,
          d.dropout > 0.f ? static_cast<std::uint16_t*>(saved.keep) : nullptr,
          static_cast<const char*>(bias),
          d.softmax_scale(),
          d.HD};
}
}  // namespace

void FlashAttention::forward(void* o, const FlashSaved& saved, const void* q, const void* k,
                             const void* v, const int* kv_lens, Dropout dropout,
                             cudaStream_t stream) const {
  forward(o, saved, q, k, v, kv_lens, nullptr, dropout, stream);
}

void FlashAttention::forward(void* o, const FlashSaved& saved, const void* q, const void* k,
                             const void* v, const int* kv_lens, const void* bias, Dropout dropout,
                             cudaStream_t stream) const {
  const auto& d = desc_;
  if (d.padding_mask && !kv_lens) XF_THROW(InvalidArgument, "flash attention: kv_lens needed");
  const detail::FlashParams p = params(d, o, saved, q, k, v, kv_lens, bias, dropout);
  const bool fp16 = d.precision == Precision::fp16;
  if (wgmma_)
    detail::launch_flash_wgmma(p, fp16, d.B, overlap_, stream);
  else
    detail::launch_flash_mma(p, fp16, d.B, stream);
  XF_CUDA_CHECK_LAUNCH();
}

void FlashAttention::backward(void* dq, void* dk, void* dv, float* delta, const void* dout,
                              const void* o, const FlashSaved& saved, const void* q, const void* k,
                              const void* v, Dropout dropout, cudaStream_t stream) const {
  backward(dq, dk, dv, nullptr, delta, dout, o, saved, q, k, v, nullptr, dropout, stream);
}

void FlashAttention::backward(void* dq, void* dk, void* dv, float* dbias, float* delta,
                              const void* dout, const void* o, const FlashSaved& saved,
                              const void* q, const void* k, const void* v, const void* bias,
                              Dropout dropout, cudaStream_t stream) const {
  if (!has_backward())
    XF_THROW(Unsupported,
             "xfbench's flash attention backward needs a Hopper GPU (an sm_90a "
             "build) and no padding mask");
  if (!saved.lse || !delta || !aligned16(dout) || !aligned16(dq) || !aligned16(dk) ||
      !aligned16(dv))
    XF_THROW(InvalidArgument, "flash attention backward: missing or misaligned tensor");
  const auto& d = desc_;
  if (dbias && !d.bias)
    XF_THROW(InvalidArgument, "flash attention backward: a bias gradient needs desc.bias");
  detail::FlashBwdParams p{params(d, const_cast<void*>(o), saved, q, k, v, nullptr, bias, dropout),
                           static_cast<const char*>(dout),
                           static_cast<char*>(dq),
                           static_cast<char*>(dk),
                           static_cast<char*>(dv),
                           delta,
                           dbias,
                           dbias ? delta + stats_elements() : nullptr,
                           d.precision == Precision::fp16};
  detail::launch_flash_backward(p, d.B, stream);
  XF_CUDA_CHECK_LAUNCH();
}

}  // namespace xfbench::kernels