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

}  // namespace xfbench
