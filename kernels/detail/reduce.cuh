// Deterministic column sums: a row kernel leaves per-block partials [arrays][G][C] in fp32 scratch,
// then sum_partials adds them in a fixed order. No atomics, so gradients are bitwise reproducible.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace xfbench::kernels::detail {

constexpr int kMaxPartialArrays = 3;

// Number of blocks (G) of the first pass: about two per SM of the current device.
int partial_blocks();

inline std::size_t partial_scratch_bytes(int C) {
  return sizeof(float) * static_cast<std::size_t>(kMaxPartialArrays) * partial_blocks() * C;
}

// Outputs of the second pass; a null entry skips that array.
template <class T>
struct PartialOutputs {
  T* out[kMaxPartialArrays] = {nullptr, nullptr, nullptr};
};

// outs.out[a][c] = sum over g < G of partials[(a * G + g) * C + c].
template <class T>
void sum_partials(PartialOutputs<T> outs, const float* partials, int G, int C, cudaStream_t stream);

}  // namespace xfbench::kernels::detail
