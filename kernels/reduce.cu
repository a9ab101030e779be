// Second pass of the deterministic column reductions: partial sums per block -> final sums.
#include "kernels/detail/pack.cuh"  // vec.cuh, and from_float<float>
#include "kernels/detail/reduce.cuh"

namespace xfbench::kernels::detail {

int partial_blocks() {
  int dev = 0, sms = 0;
  XF_CUDA_CHECK(cudaGetDevice(&dev));
  XF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return 2 * sms;
}

namespace {

// Block (32, 8): 32 columns; the 8 rows of threads stride over the G partials, then sum in order.
template <class T>
__global__ void sum_partials_kernel(PartialOutputs<T> outs, const float* partials, int G, int C) {
  __shared__ float acc[8][33];
  const int a = blockIdx.y;
  if (outs.out[a] == nullptr) return;  // uniform over the block
  const int c = blockIdx.x * 32 + threadIdx.x;
  float s = 0.f;
  if (c < C)
    for (int g = threadIdx.y; g < G; g += 8)
      s += partials[(static_cast<size_t>(a) * G + g) * C + c];
  acc[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float total = 0.f;
#pragma unroll
    for (int r = 0; r < 8; ++r) total += acc[r][threadIdx.x];
    outs.out[a][c] = from_float<T>(total);
  }
}

}  // namespace

template <class T>
void sum_partials(PartialOutputs<T> outs, const float* partials, int G, int C,
                  cudaStream_t stream) {
  dim3 grid((C + 31) / 32, kMaxPartialArrays);
  sum_partials_kernel<T><<<grid, dim3(32, 8), 0, stream>>>(outs, partials, G, C);
  XF_CUDA_CHECK_LAUNCH();
}

template void sum_partials<__half>(PartialOutputs<__half>, const float*, int, int, cudaStream_t);
template void sum_partials<__nv_bfloat16>(PartialOutputs<__nv_bfloat16>, const float*, int, int,
                                          cudaStream_t);
template void sum_partials<float>(PartialOutputs<float>, const float*, int, int, cudaStream_t);

}  // namespace xfbench::kernels::detail
