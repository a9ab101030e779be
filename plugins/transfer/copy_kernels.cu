
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "copy_kernels.hpp"
#include "xfbench/convert.hpp"
#include "xfbench/error.hpp"
#include "xfbench/memory.hpp"

namespace xfbench::transfer {
namespace {

// Default SM copy: one 16-byte access per thread in blocks of 1024, one tile per block (the Vector
// plugin's H100 tuning: beats persistent grids on HBM). With a block cap: a persistent grid of 512
// threads keeping four accesses in flight each (for tuning NVLink copies).
constexpr int kTileThreads = 1024;
constexpr int kCopyThreads = 512;
constexpr int kCopyUnroll = 4;
constexpr int kCheckThreads = 256;

int sm_count_of_current_device() {
  int dev = 0, sms = 0;
  XF_CUDA_CHECK(cudaGetDevice(&dev));
  XF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// Grid for `work` items of `per_block` each, capped at a few blocks per SM (grid-stride beyond).
unsigned grid_for(std::size_t work, std::size_t per_block, int blocks_per_sm) {
  std::size_t need = (work + per_block - 1) / per_block;
  std::size_t cap = std::size_t(sm_count_of_current_device()) * std::size_t(blocks_per_sm);
  return unsigned(std::max<std::size_t>(1, std::min(need, cap)));
}

// Bytes beyond the last whole vector (everything when a pointer is not 16-byte aligned), bytewise.
__device__ __forceinline__ void copy_tail(unsigned char* __restrict__ dst,
                                          const unsigned char* __restrict__ src, std::size_t begin,
                                          std::size_t bytes) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t t = begin + std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; t < bytes;
       t += stride)
    dst[t] = src[t];
}

__global__ void __launch_bounds__(kTileThreads)
    copy_tile_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t nvec,
                     std::size_t bytes) {
  std::size_t i = std::size_t(blockIdx.x) * kTileThreads + threadIdx.x;
  if (i < nvec) __stcs(dst + i, __ldcs(src + i));
  copy_tail(reinterpret_cast<unsigned char*>(dst), reinterpret_cast<const unsigned char*>(src),
            nvec * 16, bytes);
}

__global__ void __launch_bounds__(kCopyThreads)
    copy_persistent_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t nvec,
                           std::size_t bytes) {
  const std::size_t stride = std::size_t(gridDim.x) * kCopyThreads;
  std::size_t i = std::size_t(blockIdx.x) * kCopyThreads + threadIdx.x;
  for (; i + (kCopyUnroll - 1) * stride < nvec; i += kCopyUnroll * stride) {
    uint4 r[kCopyUnroll];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) r[u] = __ldcs(src + i + u * stride);
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) __stcs(dst + i + u * stride, r[u]);
  }
  for (; i < nvec; i += stride) __stcs(dst + i, __ldcs(src + i));
  copy_tail(reinterpret_cast<unsigned char*>(dst), reinterpret_cast<const unsigned char*>(src),
            nvec * 16, bytes);
}

__global__ void fill_pattern_kernel(std::uint32_t* dst, std::size_t words, std::uint32_t seed) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride)
    dst[i] = pattern_word(i, seed);
}

__device__ void add_count(unsigned long long* total, unsigned long long mine) {
  for (int o = 16; o > 0; o /= 2) mine += __shfl_down_sync(0xffffffffu, mine, o);
  if ((threadIdx.x & 31) == 0 && mine) atomicAdd(total, mine);
}

__global__ void check_pattern_kernel(const std::uint32_t* p, std::size_t words, std::uint32_t seed,
                                     unsigned long long* wrong) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride)
    bad += p[i] != pattern_word(i, seed);
  add_count(wrong, bad);
}

template <class T>
__global__ void fill_inputs_kernel(T* buf, std::size_t count, int rank) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t j = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < count; j += stride)
    buf[j] = from_float<T>(float(input_value(rank, j)));
}

template <class T>
__global__ void check_kernel(CheckOp op, const T* recv, std::size_t count, int rank, int nranks,
                             std::size_t chunk, unsigned long long* wrong) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  for (std::size_t k = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; k < count; k += stride) {
    double want = expected_value(op, rank, nranks, chunk, k);
    if (want < 0) continue;
    float got = float(recv[k]);
    bad += !(double(got) == want);  // NaN (poison) compares unequal
  }
  add_count(wrong, bad);
}

// Runs a counting kernel into a device counter and reads it back.
template <class Launch>
std::size_t count_on_device(cudaStream_t stream, Launch launch) {
  DeviceBuffer<unsigned long long> total(1);
  XF_CUDA_CHECK(cudaMemsetAsync(total.data(), 0, sizeof(unsigned long long), stream));
  launch(total.data());
  XF_CUDA_CHECK_LAUNCH();
  unsigned long long host = 0;
  XF_CUDA_CHECK(cudaMemcpyAsync(&host, total.data(), sizeof host, cudaMemcpyDeviceToHost, stream));
  XF_CUDA_CHECK(cudaStreamSynchronize(stream));
  return std::size_t(host);
}

// Splits [0, n) over a few CPU threads.
template <class F>
void parallel_ranges(std::size_t n, F f) {
  unsigned threads =
      n < (std::size_t(1) << 22) ? 1u : std::min(8u, std::thread::hardware_concurrency());
  threads = std::max(threads, 1u);
  std::vector<std::thread> pool;
  std::size_t per = (n + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t) {
    std::size_t b = std::min(n, t * per), e = std::min(n, b + per);
    pool.emplace_back([=] { f(t, b, e); });
  }
  for (std::thread& th : pool) th.join();
}

}  // namespace

void sm_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream,
             int blocks_per_sm) {
  if (bytes == 0) return;
  const bool aligned =
      (reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) % 16 == 0;
  const std::size_t nvec = aligned ? bytes / 16 : 0;
  auto* d = static_cast<uint4*>(dst);
  const auto* s = static_cast<const uint4*>(src);
  if (blocks_per_sm <= 0) {
    unsigned grid = unsigned(std::max<std::size_t>(1, (nvec + kTileThreads - 1) / kTileThreads));
    copy_tile_kernel<<<grid, kTileThreads, 0, stream>>>(d, s, nvec, bytes);
  } else {
    unsigned grid = grid_for(std::max<std::size_t>(nvec, 1),
                             std::size_t(kCopyThreads) * kCopyUnroll, blocks_per_sm);
    copy_persistent_kernel<<<grid, kCopyThreads, 0, stream>>>(d, s, nvec, bytes);
  }
  XF_CUDA_CHECK_LAUNCH();
}

void fill_pattern(void* dst, std::size_t words, std::uint32_t seed, cudaStream_t stream) {
  if (words == 0) return;
  fill_pattern_kernel<<<grid_for(words, kCheckThreads * 8, 8), kCheckThreads, 0, stream>>>(
      static_cast<std::uint32_t*>(dst), words, seed);
  XF_CUDA_CHECK_LAUNCH();
}

std::size_t count_pattern_mismatches(const void* p, std::size_t words, std::uint32_t seed,
                                     cudaStream_t stream) {
  if (words == 0) return 0;
  return count_on_device(stream, [&](unsigned long long* total) {
    check_pattern_kernel<<<grid_for(words, kCheckThreads * 8, 8), kCheckThreads, 0, stream>>>(
        static_cast<const std::uint32_t*>(p), words, seed, total);
  });
}

void fill_pattern_host(void* dst, std::size_t words, std::uint32_t seed) {
  auto* w = static_cast<std::uint32_t*>(dst);
  parallel_ranges(words, [&](unsigned, std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) w[i] = pattern_word(i, seed);
  });
}

std::size_t count_pattern_mismatches_host(const void* p, std::size_t words, std::uint32_t seed) {
  const auto* w = static_cast<const std::uint32_t*>(p);
  std::vector<std::size_t> bad(64, 0);
  parallel_ranges(words, [&](unsigned t, std::size_t b, std::size_t e) {
    std::size_t n = 0;
    for (std::size_t i = b; i < e; ++i) n += w[i] != pattern_word(i, seed);
    bad[t] = n;
  });
  std::size_t total = 0;
  for (std::size_t n : bad) total += n;
  return total;
}

void fill_inputs(void* buf, std::size_t count, Dtype t, int rank, cudaStream_t stream) {
  if (count == 0) return;
  unsigned grid = grid_for(count, kCheckThreads * 8, 8);
  switch (t) {
    case Dtype::fp32:
      fill_inputs_kernel<<<grid, kCheckThreads, 0, stream>>>(static_cast<float*>(buf), count, rank);
      break;
    case Dtype::fp16:
      fill_inputs_kernel<<<grid, kCheckThreads, 0, stream>>>(static_cast<__half*>(buf), count,
                                                             rank);
      break;
    case Dtype::bf16:
      fill_inputs_kernel<<<grid, kCheckThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(buf),
                                                             count, rank);
      break;
    default:
      XF_THROW(InvalidArgument, std::string("collective inputs in ") + to_string(t) +
                                    " are not supported (fp32, fp16, bf16)");
  }
  XF_CUDA_CHECK_LAUNCH();
}

std::size_t count_wrong(CheckOp op, Dtype t, const void* recv, std::size_t recv_count, int rank,
                        int nranks, std::size_t chunk, cudaStream_t stream) {
  if (recv_count == 0) return 0;
  unsigned grid = grid_for(recv_count, kCheckThreads * 8, 8);
  return count_on_device(stream, [&](unsigned long long* total) {
    switch (t) {
      case Dtype::fp32:
        check_kernel<<<grid, kCheckThreads, 0, stream>>>(op, static_cast<const float*>(recv),
                                                         recv_count, rank, nranks, chunk, total);
        break;
      case Dtype::fp16:
        check_kernel<<<grid, kCheckThreads, 0, stream>>>(op, static_cast<const __half*>(recv),
                                                         recv_count, rank, nranks, chunk, total);
        break;
      case Dtype::bf16:
        check_kernel<<<grid, kCheckThreads, 0, stream>>>(
            op, static_cast<const __nv_bfloat16*>(recv), recv_count, rank, nranks, chunk, total);
        break;
      default:
        XF_THROW(InvalidArgument, std::string("collective results in ") + to_string(t) +
                                      " are not supported (fp32, fp16, bf16)");
    }
  });
}

}  // namespace xfbench::transfer
