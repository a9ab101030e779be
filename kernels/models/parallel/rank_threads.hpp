// One host thread per local GPU rank. A multi-GPU step enqueues thousands of launches per rank;
// one thread enqueueing the ranks one after another starts the later ranks late, and every
// collective waits for the last rank. Each rank's thread drives its own NCCL communicator: all
// ranks make the same NCCL calls in the same order, without group calls across ranks.
#pragma once

#include <functional>
#include <memory>
#include <vector>

namespace xfbench::train {

// One host thread per local rank, kept for the owner's life.
class RankThreads {
 public:
  explicit RankThreads(const std::vector<int>& devices);
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  // Runs f(i) on thread i with devices[i] current, for every i; returns once all have returned
  // (a host join: what they enqueued may still run) and rethrows the first exception.
  void run(const std::function<void(int local)>& f);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xfbench::train
