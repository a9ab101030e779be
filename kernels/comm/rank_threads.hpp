// Driving several GPUs from one process: a guard for the current device, and one host thread per
// local GPU. A multi-GPU step enqueues thousands of launches per rank; one thread enqueueing the
// ranks one after another starts the later ranks late, and every collective waits for the last
// rank. Each rank's thread drives its own NCCL communicator: all ranks make the same NCCL calls in
// the same order, without group calls across ranks. The burn runs its GPUs' workers on the same
// threads while its monitor loop watches them (start, then wait).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <vector>

#include "xfbench/error.hpp"

namespace xfbench::kernels {

// Restores the device current at construction when it goes out of scope; the second form makes
// `device` current meanwhile. Inline: libxfbench_nccl uses it without this library.
class OnDevice {
 public:
  OnDevice() { XF_CUDA_CHECK(cudaGetDevice(&previous_)); }
  explicit OnDevice(int device) : OnDevice() { XF_CUDA_CHECK(cudaSetDevice(device)); }
  ~OnDevice() { cudaSetDevice(previous_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int previous_ = 0;
};

// One host thread per local rank, kept for the owner's life.
class RankThreads {
 public:
  explicit RankThreads(const std::vector<int>& devices);
  // `count` threads that make no device current: each job does, and says itself when it cannot
  // (the burn reports a GPU that fails to start as not run, while the others burn on).
  explicit RankThreads(int count);
  ~RankThreads();  // waits for a started job, then ends the threads
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  // Starts f(i) on thread i with devices[i] current (when given), for every i, and returns at once
  // (f is kept until wait()). InvalidArgument while a job started earlier has not been waited for.
  void start(std::function<void(int local)> f);
  // Returns once every thread has returned from the started job (a host join: what they enqueued
  // may still run) and rethrows the first exception; at once when no job was started.
  void wait();
  void run(std::function<void(int local)> f) {  // start, then wait
    start(std::move(f));
    wait();
  }
  int size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xfbench::kernels
