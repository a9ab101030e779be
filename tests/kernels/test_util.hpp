// Helpers of the kernel tests: device round trips through float64, random inputs, and a
// per-element closeness check |got - ref| <= atol + rtol·|ref| that names the worst element.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "xfbench/device.hpp"
#include "xfbench/memory.hpp"

namespace xftest {

inline double to_double(__half x) { return static_cast<double>(__half2float(x)); }
inline double to_double(__nv_bfloat16 x) { return static_cast<double>(__bfloat162float(x)); }
inline double to_double(float x) { return x; }
template <class T>
T from_double(double x);
template <>
inline __half from_double<__half>(double x) {
  return __float2half_rn(static_cast<float>(x));
}
template <>
inline __nv_bfloat16 from_double<__nv_bfloat16>(double x) {
  return __float2bfloat16_rn(static_cast<float>(x));
}
template <>
inline float from_double<float>(double x) {
  return static_cast<float>(x);
}

// Uniform values in [lo, hi) rounded to T, so the reference sees exactly what the GPU sees.
template <class T>
std::vector<double> random_values(std::size_t n, double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = to_double(from_double<T>(dist(gen)));
  return v;
}

// A device copy of host values stored as T.
template <class T>
struct Dev {
  xfbench::DeviceBuffer<T> buf;
  explicit Dev(std::size_t n) : buf(n) { xfbench::poison(buf.data(), buf.bytes(), nullptr); }
  explicit Dev(const std::vector<double>& host) : buf(host.size()) {
    std::vector<T> tmp(host.size());
    for (std::size_t i = 0; i < host.size(); ++i) tmp[i] = from_double<T>(host[i]);
    XF_CUDA_CHECK(cudaMemcpy(buf.data(), tmp.data(), buf.bytes(), cudaMemcpyHostToDevice));
  }
  T* get() const { return buf.data(); }
  std::vector<double> host() const {
    XF_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> tmp(buf.size());
    XF_CUDA_CHECK(cudaMemcpy(tmp.data(), buf.data(), buf.bytes(), cudaMemcpyDeviceToHost));
    std::vector<double> out(tmp.size());
    for (std::size_t i = 0; i < tmp.size(); ++i) out[i] = to_double(tmp[i]);
    return out;
  }
};

struct Tol {
  double atol, rtol;
};

inline ::testing::AssertionResult close(const std::string& name, const std::vector<double>& got,
                                        const std::vector<double>& ref, Tol tol) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure() << name << ": size " << got.size() << " vs " << ref.size();
  std::size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - ref[i]);
    const double allowed = tol.atol + tol.rtol * std::abs(ref[i]);
    const double excess = std::isfinite(got[i]) ? err - allowed : INFINITY;
    if (excess > 0) ++bad;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << name << ": " << bad << " of " << got.size() << " elements outside atol=" << tol.atol
         << " rtol=" << tol.rtol << "; worst at " << worst << ": got " << got[worst] << " ref "
         << ref[worst];
}

// Tolerances for one stored fp16/bf16 result of O(1) values computed in fp32: a few units of the
// storage format's last place (fp16: 2^-11 relative, bf16: 2^-8). fp32 storage keeps the fp32
// result, so its unit is that of the kernels' fp32 arithmetic (a few roundings, erff, tanhf and
// __expf within 2 ulps, sums over rows): 2^-18, still 2^7 below fp16's.
template <class T>
Tol storage_tol(double ulps = 2) {
  const double eps = std::is_same<T, __half>::value  ? 1.0 / 2048
                     : std::is_same<T, float>::value ? 1.0 / (1 << 18)
                                                     : 1.0 / 256;
  return {ulps * eps, ulps * eps};
}

// `ulps` units of T's last place relative to each element, and absolute relative to the largest
// reference magnitude (for results that cancel, e.g. gradients, where small elements carry the
// absolute error of the big terms they were summed from).
template <class T>
::testing::AssertionResult close_scaled(const std::string& name, const std::vector<double>& got,
                                        const std::vector<double>& ref, double ulps) {
  double scale = 0;
  for (double r : ref) scale = std::max(scale, std::abs(r));
  const Tol t = storage_tol<T>(ulps);
  return close(name, got, ref, {t.atol * std::max(scale, 1e-30), t.rtol});
}

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!xfbench::gpu_unavailable_reason().empty())
      GTEST_SKIP() << xfbench::gpu_unavailable_reason();
    xfbench::select_device(0);
  }
};

}  // namespace xftest
