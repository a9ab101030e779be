// RAII owners for device resources (copy deleted, move allowed). Allocations through DeviceBuffer
// are counted so each case can report its peak device memory (`mem_GB`).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "xfbench/dtype.hpp"
#include "xfbench/error.hpp"

namespace xfbench {

namespace detail {
void* device_alloc(std::size_t bytes);  // throws CudaError naming the size and the free memory
void device_free(void* p, std::size_t bytes) noexcept;
void* pinned_alloc(std::size_t bytes);
void pinned_free(void* p) noexcept;
}  // namespace detail

// Peak bytes held in DeviceBuffers since the last reset (the case wrapper resets it per case).
std::size_t device_memory_peak();
void reset_device_memory_peak();

// Untyped device allocation; typed access through DeviceBuffer<T>.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(std::size_t bytes) : bytes_(bytes), ptr_(detail::device_alloc(bytes)) {}
  ~DeviceMemory() { detail::device_free(ptr_, bytes_); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  DeviceMemory(DeviceMemory&& o) noexcept { swap(o); }
  DeviceMemory& operator=(DeviceMemory&& o) noexcept {
    DeviceMemory(std::move(o)).swap(*this);
    return *this;
  }
  void swap(DeviceMemory& o) noexcept {
    std::swap(bytes_, o.bytes_);
    std::swap(ptr_, o.ptr_);
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count), mem_(count * sizeof(T)) {}
  T* data() const { return static_cast<T*>(mem_.get()); }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return mem_.bytes(); }

 private:
  std::size_t count_ = 0;
  DeviceMemory mem_;
};

// Page-locked host memory (for transfers and reading results back).
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count)
      : count_(count), ptr_(static_cast<T*>(detail::pinned_alloc(count * sizeof(T)))) {}
  ~PinnedBuffer() { detail::pinned_free(ptr_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : count_(std::exchange(o.count_, 0)), ptr_(std::exchange(o.ptr_, nullptr)) {}
  T* data() const { return ptr_; }
  std::size_t size() const { return count_; }
  T& operator[](std::size_t i) const { return ptr_[i]; }

 private:
  std::size_t count_ = 0;
  T* ptr_ = nullptr;
};

class Stream {
 public:
  Stream() { XF_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  cudaStream_t get() const { return s_; }
  operator cudaStream_t() const { return s_; }
  void sync() const { XF_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { XF_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { XF_CUDA_CHECK(cudaEventRecord(e_, s)); }
  // Milliseconds from `start` to this event (waits for this event).
  float elapsed_ms_since(const Event& start) const;

 private:
  cudaEvent_t e_ = nullptr;
};

// Fills with uniform random values in [lo, hi) from a counter-based hash of (seed, index):
// reproducible, never zeros by accident. Supports float, double, __half, __nv_bfloat16,
// __nv_fp8_e4m3 and the integer types via the Dtype-tagged overload.
void fill_uniform(void* data, std::size_t count, Dtype type, std::uint64_t seed, double lo,
                  double hi, cudaStream_t stream);

// `count` elements stored as `type` at device address `data`, read back as doubles (exactly:
// every storage type widens without rounding); waits for `stream` first.
std::vector<double> download_as_double(const void* data, std::size_t count, ElemType type,
                                       cudaStream_t stream);
template <class T>
void fill_uniform(const DeviceBuffer<T>& buf, Dtype type, std::uint64_t seed, double lo, double hi,
                  cudaStream_t stream) {
  fill_uniform(buf.data(), buf.size(), type, seed, lo, hi, stream);
}

// Writes NaN bit patterns (all bytes 0xFF) so unwritten outputs are caught by validation.
void poison(void* data, std::size_t bytes, cudaStream_t stream);

}  // namespace xfbench
