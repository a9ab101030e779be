#include "xfbench/dtype.hpp"

#include "xfbench/error.hpp"

namespace xfbench {

const char* to_string(Dtype t) {
  switch (t) {
    case Dtype::fp64:
      return "fp64";
    case Dtype::fp32:
      return "fp32";
    case Dtype::tf32:
      return "tf32";
    case Dtype::fp16:
      return "fp16";
    case Dtype::bf16:
      return "bf16";
    case Dtype::fp8:
      return "fp8";
  }
  return "?";
}

Dtype parse_dtype(const std::string& name) {
  for (Dtype t : {Dtype::fp64, Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8}) {
    if (name == to_string(t)) return t;
  }
  XF_THROW(InvalidArgument,
           "unknown dtype '" + name + "' (expected fp64, fp32, tf32, fp16, bf16 or fp8)");
}

std::size_t size_of(Dtype t) {
  switch (t) {
    case Dtype::fp64:
      return 8;
    case Dtype::fp32:
    case Dtype::tf32:
      return 4;
    case Dtype::fp16:
    case Dtype::bf16:
      return 2;
    case Dtype::fp8:
      return 1;
  }
  return 0;
}

std::size_t elem_size(ElemType t) {
  switch (t) {
    case ElemType::f32:
      return 4;
    case ElemType::f16:
    case ElemType::bf16:
      return 2;
    case ElemType::e4m3:
    case ElemType::e5m2:
      return 1;
    case ElemType::f64:
      return 8;
  }
  return 0;
}

const char* to_string(ElemType t) {
  switch (t) {
    case ElemType::f32:
      return "f32";
    case ElemType::f16:
      return "f16";
    case ElemType::bf16:
      return "bf16";
    case ElemType::e4m3:
      return "e4m3";
    case ElemType::e5m2:
      return "e5m2";
    case ElemType::f64:
      return "f64";
  }
  return "?";
}

ElemType element_of(Dtype t) {
  switch (t) {
    case Dtype::fp64:
      return ElemType::f64;
    case Dtype::fp32:
    case Dtype::tf32:
      return ElemType::f32;
    case Dtype::fp16:
      return ElemType::f16;
    case Dtype::bf16:
      return ElemType::bf16;
    case Dtype::fp8:
      return ElemType::e4m3;
  }
  return ElemType::f32;
}

}  // namespace xfbench
