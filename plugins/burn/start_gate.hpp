// Workers of a burn (a GPU's host thread, a pinned core's thread) start together: each arrives
// once set up, or leaves when it cannot burn; the burn's clock starts when the last one is ready.
#pragma once

#include <condition_variable>
#include <mutex>

#include "xfbench/telemetry.hpp"  // host_seconds(), the time base of the burns

namespace xfbench::burn {

class StartGate {
 public:
  explicit StartGate(int workers) : waiting_(workers) {}
  double arrive() {  // waits for the others; the burn's start
    std::unique_lock<std::mutex> lock(mu_);
    count_down();
    cv_.wait(lock, [this] { return waiting_ == 0; });
    return start_;
  }
  void leave() {
    std::lock_guard<std::mutex> lock(mu_);
    count_down();
  }
  double start() {  // 0 until every worker arrived or left
    std::lock_guard<std::mutex> lock(mu_);
    return start_;
  }

 private:
  void count_down() {
    if (--waiting_ == 0) {
      start_ = host_seconds();
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_;
  double start_ = 0;
};

}  // namespace xfbench::burn
