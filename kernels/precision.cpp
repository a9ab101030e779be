// The precision vocabulary of the kernels (precision.hpp).
#include "kernels/precision.hpp"

namespace xfbench::kernels {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::tf32:
      return "tf32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
    case Precision::fp8:
      return "fp8";
    case Precision::fp64:
      return "fp64";
  }
  return "?";
}

ElemType input_type(Precision p) {
  switch (p) {
    case Precision::fp32:
    case Precision::tf32:
      return ElemType::f32;
    case Precision::fp16:
      return ElemType::f16;
    case Precision::bf16:
      return ElemType::bf16;
    case Precision::fp8:
      return ElemType::e4m3;
    case Precision::fp64:
      return ElemType::f64;
  }
  return ElemType::f32;
}

Precision precision_of(Dtype t) {
  switch (t) {
    case Dtype::fp64:
      return Precision::fp64;
    case Dtype::fp32:
      return Precision::fp32;
    case Dtype::tf32:
      return Precision::tf32;
    case Dtype::fp16:
      return Precision::fp16;
    case Dtype::bf16:
      return Precision::bf16;
    case Dtype::fp8:
      return Precision::fp8;
  }
  return Precision::fp32;
}

Precision storage_precision(Precision p) { return p == Precision::fp8 ? Precision::bf16 : p; }

ElemType default_output_type(Precision p) {
  return p == Precision::fp8 ? ElemType::bf16 : input_type(p);
}

Dtype dtype_of(Precision p) {
  switch (p) {
    case Precision::fp64:
      return Dtype::fp64;
    case Precision::fp32:
      return Dtype::fp32;
    case Precision::tf32:
      return Dtype::tf32;
    case Precision::fp16:
      return Dtype::fp16;
    case Precision::bf16:
      return Dtype::bf16;
    case Precision::fp8:
      return Dtype::fp8;
  }
  return Dtype::fp32;
}

ElemType storage_type(Precision p) { return input_type(storage_precision(p)); }
Dtype storage_dtype(Precision p) { return dtype_of(storage_precision(p)); }

}  // namespace xfbench::kernels
