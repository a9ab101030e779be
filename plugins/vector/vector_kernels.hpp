// Streaming kernels of the Vector family and their GPU-side checkers. Each launcher takes element
// counts and a stream; the kernels use 16-byte accesses with several loads in flight per thread.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "xfbench/dtype.hpp"

namespace xfbench::vector {

enum class Op { scale, copy, triad, read, write };

constexpr float kScale = 1.2f;  // y = a * 1.2, the seeds' operation; also triad's scalar
constexpr float kFill = 1.5f;   // the write-only case's value

const char* to_string(Op op);
Op parse_op(const char* name);  // throws InvalidArgument

// Bytes a launch must move through device memory (read + written), for GB/s.
double bytes_moved(Op op, std::size_t n, Dtype t);

// Buffers for one op: `a` input, `b`/`c` triad inputs, `y` output; `partials` for read (sum).
struct Operands {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* y = nullptr;
  float* partials = nullptr;  // read: reduction_partials() floats, the sum lands in partials[0]
};
std::size_t reduction_partials();

// y = a*1.2 | y = a | y = b + 1.2*c | partials[0] = sum(a) | y = 1.5, in `t` (fp32, fp16, bf16).
void launch(Op op, Dtype t, const Operands& x, std::size_t n, cudaStream_t stream);

// Counts elements of y (or the sum) that disagree with a float64 recomputation from the inputs,
// allowing half an ulp of the dtype plus float rounding. Synchronises the stream.
std::size_t count_mismatches(Op op, Dtype t, const Operands& x, std::size_t n, cudaStream_t stream);

// Kernel variants of fp32 scale, for tuning on a GPU; returns the variant's description.
int tuning_variants();
const char* launch_tuning_variant(int variant, const float* a, float* y, std::size_t n,
                                  cudaStream_t stream);

}  // namespace xfbench::vector
