#include "rank_threads.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>

#include "xfbench/error.hpp"

namespace xfbench::kernels {

struct RankThreads::Impl {
  std::vector<int> devices;  // -1: the job makes its own current
  std::mutex mutex;
  std::condition_variable wake, finished;
  std::function<void(int)> job;
  std::uint64_t generation = 0;  // of the job started last
  int pending = 0;               // threads still running it
  bool started = false;          // a job not yet waited for
  bool stop = false;
  std::vector<std::exception_ptr> errors;
  std::vector<std::thread> threads;

  void loop(int i) {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
      }
      try {  // `job` stays as it is until every thread is done with it
        if (devices[i] >= 0) XF_CUDA_CHECK(cudaSetDevice(devices[i]));
        job(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex);
      if (--pending == 0) finished.notify_all();
    }
  }
  void join_job() {
    std::unique_lock<std::mutex> lock(mutex);
    finished.wait(lock, [&] { return pending == 0; });
    started = false;
  }
};

RankThreads::RankThreads(const std::vector<int>& devices) : impl_(std::make_unique<Impl>()) {
  impl_->devices = devices;
  impl_->errors.resize(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i)
    impl_->threads.emplace_back([this, i] { impl_->loop(int(i)); });
}

RankThreads::~RankThreads() {
  impl_->join_job();
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  for (std::thread& t : impl_->threads) t.join();
}

RankThreads::RankThreads(int count) : RankThreads(std::vector<int>(std::max(count, 0), -1)) {}

int RankThreads::size() const { return int(impl_->threads.size()); }

void RankThreads::start(std::function<void(int)> f) {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    if (m.started)
      XF_THROW(InvalidArgument,
               "rank threads: a job was started before the last one was waited for");
    m.job = std::move(f);
    m.pending = int(m.threads.size());
    m.started = true;
    ++m.generation;
  }
  m.wake.notify_all();
}

void RankThreads::wait() {
  impl_->join_job();
  std::exception_ptr first;
  for (std::exception_ptr& e : impl_->errors) {
    if (e && !first) first = e;
    e = nullptr;  // said once
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace xfbench::kernels
