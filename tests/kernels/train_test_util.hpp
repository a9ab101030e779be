// Helpers of the training-step kernel tests: integer device arrays, the unit roundoff of each
// storage type (fp32 included), and tolerances in those units.
#pragma once

#include <cuda_runtime_api.h>

#include <type_traits>
#include <vector>

#include "test_util.hpp"

namespace xftest {

struct DevInts {
  xfbench::DeviceBuffer<int> buf;
  explicit DevInts(const std::vector<int>& host) : buf(host.size()) {
    XF_CUDA_CHECK(cudaMemcpy(buf.data(), host.data(), buf.bytes(), cudaMemcpyHostToDevice));
  }
  int* get() const { return buf.data(); }
};

// Unit roundoff of T: fp16 2^-11, bf16 2^-8, fp32 2^-24.
template <class T>
constexpr double unit_roundoff() {
  if constexpr (std::is_same<T, __half>::value) return 1.0 / 2048;
  if constexpr (std::is_same<T, float>::value) return 1.0 / 16777216;
  return 1.0 / 256;
}

// `ulps` units of T relative to each element plus `ulps` units of the largest |ref| absolute.
template <class T>
::testing::AssertionResult close_ulps(const std::string& name, const std::vector<double>& got,
                                      const std::vector<double>& ref, double ulps) {
  double scale = 0;
  for (double r : ref) scale = std::max(scale, std::abs(r));
  const double u = ulps * unit_roundoff<T>();
  return close(name, got, ref, {u * std::max(scale, 1e-30), u});
}

}  // namespace xftest
