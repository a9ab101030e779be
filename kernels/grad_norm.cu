// Global gradient norm, clipping and loss scaling (see grad_norm.hpp). Not implemented yet.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/grad_norm.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

void train_scalars_init(TrainScalars*, const LossScaling&, cudaStream_t) {
  XF_THROW(Unsupported, "train_scalars_init: not implemented yet");
}

std::size_t grad_norm_scratch_bytes() { return 0; }

template <class T>
void grad_norm_clip(TrainScalars*, float*, const T*, std::size_t, float, const LossScaling&,
                    cudaStream_t) {
  XF_THROW(Unsupported, "grad_norm_clip: not implemented yet");
}

template <class T>
void grad_accumulate(T*, const T*, std::size_t, cudaStream_t) {
  XF_THROW(Unsupported, "grad_accumulate: not implemented yet");
}

#define XF_INSTANTIATE(T)                                                              \
  template void grad_norm_clip<T>(TrainScalars*, float*, const T*, std::size_t, float, \
                                  const LossScaling&, cudaStream_t);                   \
  template void grad_accumulate<T>(T*, const T*, std::size_t, cudaStream_t);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
