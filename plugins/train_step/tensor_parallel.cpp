#include "tensor_parallel.hpp"

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>

#include "xfbench/error.hpp"
#define XFBENCH_USE_NCCL
#include "xfbench/check_libs.hpp"

namespace xfbench::train {

struct RankThreads::Impl {
  std::vector<int> devices;
  std::mutex mutex;
  std::condition_variable wake, finished;
  const std::function<void(int)>* job = nullptr;
  std::uint64_t generation = 0;  // of the job posted last
  int pending = 0;               // threads still running it
  bool stop = false;
  std::vector<std::exception_ptr> errors;
  std::vector<std::thread> threads;

  void loop(int i) {
    std::uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)>* f = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
        f = job;
      }
      try {
        XF_CUDA_CHECK(cudaSetDevice(devices[i]));
        (*f)(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex);
      if (--pending == 0) finished.notify_all();
    }
  }
};

RankThreads::RankThreads(const std::vector<int>& devices) : impl_(std::make_unique<Impl>()) {
  impl_->devices = devices;
  impl_->errors.resize(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i)
    impl_->threads.emplace_back([this, i] { impl_->loop(int(i)); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  for (std::thread& t : impl_->threads) t.join();
}

void RankThreads::run(const std::function<void(int)>& f) {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.job = &f;
    m.pending = int(m.threads.size());
    for (std::exception_ptr& e : m.errors) e = nullptr;
    ++m.generation;
  }
  m.wake.notify_all();
  std::unique_lock<std::mutex> lock(m.mutex);
  m.finished.wait(lock, [&] { return m.pending == 0; });
  for (const std::exception_ptr& e : m.errors)
    if (e) std::rethrow_exception(e);
}

ReduceTimes::~ReduceTimes() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

void ReduceTimes::start() { on_ = true, used_ = 0; }

cudaEvent_t ReduceTimes::next() {
  if (used_ == events_.size()) {
    cudaEvent_t e = nullptr;
    XF_CUDA_CHECK(cudaEventCreate(&e));
    events_.push_back(e);
  }
  return events_[used_++];
}

void ReduceTimes::stop() { on_ = false; }

double ReduceTimes::total_ms() const {
  double total = 0;
  for (std::size_t i = 0; i + 1 < used_; i += 2) {
    float ms = 0;
    XF_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]));
    total += ms;
  }
  return total;
}

namespace {

ncclDataType_t nccl_type(kernels::ElemType t) {
  switch (t) {
    case kernels::ElemType::f16:
      return ncclFloat16;
    case kernels::ElemType::bf16:
      return ncclBfloat16;
    case kernels::ElemType::f32:
      return ncclFloat32;
    default:
      XF_THROW(InvalidArgument,
               std::string("tensor-parallel reduction of ") + kernels::to_string(t) + " values");
  }
}

}  // namespace

kernels::TpReduce nccl_tp_reduce(ncclComm_t comm, ReduceTimes* times) {
  return [comm, times](void* data, std::size_t n, kernels::ElemType t, cudaStream_t s) {
    const bool timed = times && times->on();
    if (timed) XF_CUDA_CHECK(cudaEventRecord(times->next(), s));
    XF_NCCL_CHECK(ncclAllReduce(data, data, n, nccl_type(t), ncclSum, comm, s));
    if (timed) XF_CUDA_CHECK(cudaEventRecord(times->next(), s));
  };
}

}  // namespace xfbench::train
