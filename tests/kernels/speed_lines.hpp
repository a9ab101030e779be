// What the by-hand speed tools (flash_speed, ffn_products_speed, fp8_linear_speed) share: their
// output, one JSON object per line on stdout and, with --out=FILE among the arguments, in FILE
// too; and how far apart two device arrays of results are.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "xfbench/error.hpp"

namespace xftest {

class JsonLines {
 public:
  JsonLines(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
      if (std::strncmp(argv[i], "--out=", 6) == 0) file_ = std::fopen(argv[i] + 6, "w");
  }
  ~JsonLines() {
    if (file_) std::fclose(file_);
  }
  JsonLines(const JsonLines&) = delete;
  JsonLines& operator=(const JsonLines&) = delete;
  void write(const char* line) const {
    std::puts(line);
    if (file_) std::fprintf(file_, "%s\n", line);
  }
  // A product's line: milliseconds, TFLOPS from `flop`, and its difference from another way of
  // computing it (max_rel_diff; 0: none taken).
  void product(const std::string& shape, const std::string& what, double ms, double flop,
               double diff) const {
    char line[400];
    std::snprintf(line, sizeof line,
                  "{\"shape\": \"%s\", \"what\": \"%s\", \"ms\": %.5f, \"TFLOPS\": %.1f, "
                  "\"max_rel_diff\": %.2e}",
                  shape.c_str(), what.c_str(), ms, flop / ms / 1e9, diff);
    write(line);
  }

 private:
  FILE* file_ = nullptr;
};

// Largest |a - b| over the largest |b|, for two device arrays of n T (fp16, bf16: float(T) reads
// them).
template <class T>
double max_rel_diff(const T* a, const T* b, std::size_t n) {
  std::vector<T> ha(n), hb(n);
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  XF_CUDA_CHECK(cudaMemcpy(ha.data(), a, n * sizeof(T), cudaMemcpyDeviceToHost));
  XF_CUDA_CHECK(cudaMemcpy(hb.data(), b, n * sizeof(T), cudaMemcpyDeviceToHost));
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = float(ha[i]), y = float(hb[i]);
    diff = std::max(diff, std::abs(x - y));
    scale = std::max(scale, std::abs(y));
  }
  return std::isfinite(diff) ? diff / std::max(scale, 1e-30) : INFINITY;
}

}  // namespace xftest
