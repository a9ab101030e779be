// Helpers of the FP8 tests (test_fp8.cu, test_fp8_cast.cu, test_fp8_dequantize.cu): the reference's
// bits and values, and for the GPU a fixture that wants compute capability 8.9 and device bytes.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/fp8.hpp"
#include "kernels/reference/fp8_ref.hpp"
#include "test_util.hpp"
#include "xfbench/device.hpp"
#include "xfbench/error.hpp"
#include "xfbench/memory.hpp"

namespace xk = xfbench::kernels;

namespace xftest {

inline constexpr xk::Fp8Format kFormats[] = {xk::Fp8Format::e4m3, xk::Fp8Format::e5m2};

inline std::uint8_t bits(float v, xk::Fp8Format f) { return xk::ref::fp8_bits(v, f); }
inline float value(std::uint8_t b, xk::Fp8Format f) { return xk::ref::fp8_value(b, f); }

inline std::string hex(unsigned b) {
  std::ostringstream s;
  s << "0x" << std::hex << std::setw(2) << std::setfill('0') << b;
  return s.str();
}

// One fixture class for every GPU test of the suite Fp8Gpu (gtest requires it across files).
class Fp8Gpu : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    const xfbench::DeviceInfo& d = xfbench::device_info();
    if (d.cc() < 89)
      GTEST_SKIP() << "FP8 needs compute capability 8.9; " << d.name << " has " << d.cc_major << "."
                   << d.cc_minor;
  }
};

// A poisoned device byte buffer (0xFF: NaN in both formats, which no finite input gives).
struct Bytes {
  xfbench::DeviceBuffer<std::uint8_t> buf;
  explicit Bytes(std::size_t n) : buf(n) { xfbench::poison(buf.data(), buf.bytes(), nullptr); }
  std::uint8_t* get() const { return buf.data(); }
  std::vector<std::uint8_t> host() const {
    std::vector<std::uint8_t> h(buf.size());
    XF_CUDA_CHECK(cudaDeviceSynchronize());
    XF_CUDA_CHECK(cudaMemcpy(h.data(), buf.data(), h.size(), cudaMemcpyDeviceToHost));
    return h;
  }
};

inline float device_float(const float* p) {
  float v = 0;
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  XF_CUDA_CHECK(cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

}  // namespace xftest
