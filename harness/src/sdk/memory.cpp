#include "xfbench/memory.hpp"

#include <cstring>

#include "xfbench/convert.hpp"

#include <atomic>
#include <cstdio>

namespace xfbench {
namespace {
std::atomic<std::size_t> g_current{0};
std::atomic<std::size_t> g_peak{0};

std::string gib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ull << 30));
  return buf;
}
}  // namespace

namespace detail {
void* device_alloc(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();  // an allocation failure is not sticky; clear it
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    std::string what =
        err == cudaErrorMemoryAllocation ? "out of device memory: " : "cudaMalloc failed: ";
    throw CudaError(
        err, what + "asked for " + gib(bytes) + ", " + gib(free_b) + " free of " + gib(total_b),
        __FILE__, __LINE__);
  }
  std::size_t now = g_current += bytes;
  std::size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void device_free(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  cudaFree(p);
  g_current -= bytes;
}

void* pinned_alloc(std::size_t bytes) {
  void* p = nullptr;
  if (bytes == 0) return nullptr;
  XF_CUDA_CHECK(cudaMallocHost(&p, bytes));
  return p;
}

void pinned_free(void* p) noexcept {
  if (p) cudaFreeHost(p);
}
}  // namespace detail

std::size_t device_memory_peak() { return g_peak.load(); }
void reset_device_memory_peak() { g_peak.store(g_current.load()); }

float Event::elapsed_ms_since(const Event& start) const {
  XF_CUDA_CHECK(cudaEventSynchronize(e_));
  float ms = 0;
  XF_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
  return ms;
}

namespace {
template <class T>
void widen_all(std::vector<double>& out, const std::vector<unsigned char>& raw) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, &raw[i * sizeof(T)], sizeof(T));
    out[i] = double(to_float(v));
  }
}
}  // namespace

std::vector<double> download_as_double(const void* data, std::size_t count, ElemType type,
                                       cudaStream_t stream) {
  std::vector<unsigned char> raw(count * elem_size(type));
  XF_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (count) XF_CUDA_CHECK(cudaMemcpy(raw.data(), data, raw.size(), cudaMemcpyDeviceToHost));
  std::vector<double> out(count);
  switch (type) {
    case ElemType::f64:
      std::memcpy(out.data(), raw.data(), raw.size());
      break;
    case ElemType::f32:
      widen_all<float>(out, raw);
      break;
    case ElemType::f16:
      widen_all<__half>(out, raw);
      break;
    case ElemType::bf16:
      widen_all<__nv_bfloat16>(out, raw);
      break;
    case ElemType::e4m3:
      widen_all<__nv_fp8_e4m3>(out, raw);
      break;
    case ElemType::e5m2:
      widen_all<__nv_fp8_e5m2>(out, raw);
      break;
  }
  return out;
}

}  // namespace xfbench
