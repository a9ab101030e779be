// Fused softmax cross-entropy (see cross_entropy.hpp). Not implemented yet.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cross_entropy.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

template <class T>
void cross_entropy_forward_backward(float*, T*, const int*, int, int, int, float, int, const float*,
                                    cudaStream_t) {
  XF_THROW(Unsupported, "cross_entropy_forward_backward: not implemented yet");
}

void cross_entropy_mean(float*, const float*, const int*, int, float, bool, cudaStream_t) {
  XF_THROW(Unsupported, "cross_entropy_mean: not implemented yet");
}

#define XF_INSTANTIATE(T)                                                                       \
  template void cross_entropy_forward_backward<T>(float*, T*, const int*, int, int, int, float, \
                                                  int, const float*, cudaStream_t);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
