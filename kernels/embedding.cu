// Embedding forward/backward (see embedding.hpp). Not implemented yet.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/embedding.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

template <class T>
void embedding_forward(T*, const int*, const int*, const T*, const T*, const T*, int, int, int, int,
                       cudaStream_t) {
  XF_THROW(Unsupported, "embedding_forward: not implemented yet");
}

std::size_t embedding_backward_scratch_bytes(int, int, int, int, int) { return 0; }

template <class T>
void embedding_backward(T*, T*, T*, void*, const T*, const int*, const int*, int, int, int, int,
                        int, cudaStream_t) {
  XF_THROW(Unsupported, "embedding_backward: not implemented yet");
}

#define XF_INSTANTIATE(T)                                                                       \
  template void embedding_forward<T>(T*, const int*, const int*, const T*, const T*, const T*,  \
                                     int, int, int, int, cudaStream_t);                         \
  template void embedding_backward<T>(T*, T*, T*, void*, const T*, const int*, const int*, int, \
                                      int, int, int, int, cudaStream_t);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
