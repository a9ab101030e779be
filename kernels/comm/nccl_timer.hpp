// How the SDK's timer times launches that hold NCCL collectives (the NCCL family, multi-GPU
// TrainStep): no CUDA graph (one group call per launch, as nccl-tests without graphs), every wait
// polled with NCCL's time-out and asynchronous errors (nccl_comm.hpp), and under MPI every rank's
// decisions (batch, another window, stop) taken on the slowest rank's numbers, so all ranks run
// the same collectives. Header only: libxfbench_nccl does not link the SDK, the plugins do.
#pragma once

#include <cstddef>

#include "kernels/comm/nccl_comm.hpp"
#include "xfbench/timer.hpp"

namespace xfbench::kernels {

inline TimerOptions collective_timer_options() {
  TimerOptions o;
  o.use_graph = false;
  o.wait = wait_for_event;
  if (mpi_enabled()) o.agree = [](double* values, std::size_t n) { max_over_ranks(values, n); };
  return o;
}

}  // namespace xfbench::kernels
