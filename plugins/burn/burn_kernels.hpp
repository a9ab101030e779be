// The two kernels a burn adds to its products: a bitwise comparison of a result with the first
// one, and (for the fault-injection tests) a bit flip.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace xfbench::burn {

// Adds to device `*mismatches` the number of elements (of `elem_bytes` = 1, 2, 4 or 8 bytes)
// whose bits differ between `a` and `b`, `count` elements each, 16-byte aligned.
void count_mismatches(cudaStream_t stream, const void* a, const void* b, std::size_t count,
                      std::size_t elem_bytes, unsigned long long* mismatches);

// Flips bit `bit` of element `index` of `data` (test hook: a GPU that computed it wrong).
void flip_bit(cudaStream_t stream, void* data, std::size_t index, std::size_t elem_bytes,
              unsigned bit);

}  // namespace xfbench::burn
