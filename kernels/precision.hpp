// How a product computes (Precision), beside the SDK's dtypes and element types
// (xfbench/dtype.hpp): the one precision vocabulary of every floor. A layer or step of precision p
// stores storage_type(p) and multiplies in p (fp8: E4M3/E5M2 operands of bf16 tensors, fp8.hpp).
#pragma once

#include <cstddef>

#include "xfbench/dtype.hpp"

namespace xfbench::kernels {

// Storage of one element: the SDK's (xfbench/dtype.hpp).
using xfbench::elem_size;
using xfbench::ElemType;
using xfbench::to_string;

// Input storage and arithmetic of a product. fp32 uses no tensor cores (pedantic fp32); tf32 is
// fp32 storage with TF32 tensor-core arithmetic; fp16, bf16 and fp8 (e4m3) accumulate in fp32;
// fp64 is float64 throughout (alpha and beta are widened to double for it).
enum class Precision { fp32, tf32, fp16, bf16, fp8, fp64 };
const char* to_string(Precision p);
ElemType input_type(Precision p);
// What PyTorch gives: fp32/tf32 -> f32, fp16 -> f16, bf16 -> bf16, fp8 -> bf16 (torch._scaled_mm),
// fp64 -> f64.
ElemType default_output_type(Precision p);
Precision precision_of(Dtype t);  // the precision of the same name
Dtype dtype_of(Precision p);      // the dtype of the same name
// What surrounds a precision's products (storage, norms, attention, the optimizer's inputs):
// bf16 for fp8 (FP8 is a product's operand format only: fp8_linear.hpp), else p itself.
Precision storage_precision(Precision p);
// The element type of that storage: f32 (fp32, tf32), f16, bf16 (bf16, fp8), f64; and its dtype
// (tf32 storage is tf32: fp32 values a product reads as TF32).
ElemType storage_type(Precision p);
Dtype storage_dtype(Precision p);

}  // namespace xfbench::kernels
