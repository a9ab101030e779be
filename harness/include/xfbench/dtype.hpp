// The one precision vocabulary of every floor: the dtypes the benchmarks speak of, with their names
// as they appear in case names, and the element types that store them (kernels/precision.hpp adds
// how a product computes).
#pragma once

#include <cstddef>
#include <string>

namespace xfbench {

// tf32 is fp32 storage with tensor-core arithmetic; fp8 is e4m3.
enum class Dtype { fp64, fp32, tf32, fp16, bf16, fp8 };

const char* to_string(Dtype t);
Dtype parse_dtype(const std::string& name);  // throws InvalidArgument
std::size_t size_of(Dtype t);                // bytes per stored element

// Storage of one element: what a kernel reads and writes, what NCCL reduces.
enum class ElemType { f32, f16, bf16, e4m3, e5m2, f64 };
std::size_t elem_size(ElemType t);
const char* to_string(ElemType t);
// The element a dtype's input is stored as: fp32 and tf32 f32, fp8 e4m3 (size_of's bytes).
ElemType element_of(Dtype t);

}  // namespace xfbench
