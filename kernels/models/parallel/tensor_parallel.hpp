// Tensor parallelism's host side (parallel_trainer.hpp's tp): a tensor-parallel block calls its
// all-reduce between its own kernels (kernels/models/transformer_block.hpp, TpReduce), on the
// rank's own thread (kernels/comm/rank_threads.hpp), all ranks making the same NCCL calls in the
// same order.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <memory>
#include <vector>

#include "kernels/models/transformer_block.hpp"

namespace xfbench::train {

// The GPU time of one rank's reductions: while `on`, each is enqueued between two events.
class ReduceTimes {
 public:
  ReduceTimes() = default;
  ~ReduceTimes();
  ReduceTimes(const ReduceTimes&) = delete;
  ReduceTimes& operator=(const ReduceTimes&) = delete;

  void start();  // forget earlier calls and time the next ones
  void stop();
  bool on() const { return on_; }
  double total_ms() const;  // of the calls between start and stop, once their work is done
  cudaEvent_t next();       // the next event of a pair (made on first use, on the current device)

 private:
  bool on_ = false;
  std::vector<cudaEvent_t> events_;  // begin, end, begin, end, ...
  std::size_t used_ = 0;
};

// The all-reduce (sum) of a tensor-parallel rank over `comm`, timed into `times` when given.
kernels::TpReduce nccl_tp_reduce(ncclComm_t comm, ReduceTimes* times);

}  // namespace xfbench::train
