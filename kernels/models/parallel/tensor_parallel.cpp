#include "tensor_parallel.hpp"

#include "kernels/comm/nccl_comm.hpp"

#include "xfbench/error.hpp"
#define XFBENCH_USE_NCCL
#include "xfbench/check_libs.hpp"

namespace xfbench::train {

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

kernels::TpReduce nccl_tp_reduce(ncclComm_t comm, ReduceTimes* times) {
  return [comm, times](void* data, std::size_t n, kernels::ElemType t, cudaStream_t s) {
    const bool timed = times && times->on();
    if (timed) XF_CUDA_CHECK(cudaEventRecord(times->next(), s));
    XF_NCCL_CHECK(ncclAllReduce(data, data, n, kernels::nccl_type(t), ncclSum, comm, s));
    if (timed) XF_CUDA_CHECK(cudaEventRecord(times->next(), s));
  };
}

}  // namespace xfbench::train
