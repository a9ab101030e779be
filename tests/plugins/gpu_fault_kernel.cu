// A kernel that writes through a bad pointer: the CUDA context is unusable afterwards.
#include <cuda_runtime_api.h>

#include "xfbench/error.hpp"

namespace {
__global__ void write_to(int* p) { *p = 1; }
}  // namespace

void launch_illegal_write(cudaStream_t stream) {
  write_to<<<1, 1, 0, stream>>>(reinterpret_cast<int*>(0x10));
  XF_CUDA_CHECK_LAUNCH();
  XF_CUDA_CHECK(cudaStreamSynchronize(stream));
}
