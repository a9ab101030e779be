#include "rank_threads.hpp"

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>

#include "xfbench/error.hpp"

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

}  // namespace xfbench::train
