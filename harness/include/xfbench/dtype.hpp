// Element types the benchmarks speak of, with their names as they appear in case names.
#pragma once

#include <cstddef>
#include <string>

namespace xfbench {

// tf32 is fp32 storage with tensor-core arithmetic; fp8 is e4m3.
enum class Dtype { fp64, fp32, tf32, fp16, bf16, fp8 };

const char* to_string(Dtype t);
Dtype parse_dtype(const std::string& name);  // throws InvalidArgument
std::size_t size_of(Dtype t);                // bytes per stored element

}  // namespace xfbench
