// Peak rates for pct_peak: vendors' datasheet figures (dense, no sparsity) for known products, else
// the per-SM rate of the architecture times SMs times the maximum SM clock.
#include <string>

#include "xfbench/device.hpp"

namespace xfbench {
namespace {

struct Datasheet {
  const char* name_part;  // matched against the CUDA device name
  int cc;
  double fp64, fp32, tf32, fp16, bf16, fp8;
};

// TFLOP/s, dense. fp16/bf16 with fp32 accumulation; fp64 with tensor cores where present.
constexpr Datasheet kDatasheets[] = {
    {"H100 PCIe", 90, 51.2, 51.2, 378.0, 756.0, 756.0, 1513.0},
    {"H100 NVL", 90, 60.0, 60.0, 417.5, 835.5, 835.5, 1670.5},
    {"H100", 90, 66.9, 66.9, 494.7, 989.4, 989.4, 1978.9},  // SXM5 (H100 80GB HBM3)
    {"H200", 90, 66.9, 66.9, 494.7, 989.4, 989.4, 1978.9},
    {"GH200", 90, 66.9, 66.9, 494.7, 989.4, 989.4, 1978.9},
    {"H800", 90, 1.0, 66.9, 494.7, 989.4, 989.4, 1978.9},
    {"A100", 80, 19.5, 19.5, 156.0, 312.0, 312.0, 0},
    {"A800", 80, 19.5, 19.5, 156.0, 312.0, 312.0, 0},
    {"A30", 80, 10.3, 10.3, 82.0, 165.0, 165.0, 0},
    {"A10", 86, 0.98, 31.2, 62.5, 125.0, 125.0, 0},
    {"RTX A6000", 86, 1.2, 38.7, 77.4, 154.8, 154.8, 0},
    {"RTX 3090", 86, 0.56, 35.6, 35.6, 71.0, 71.0, 0},
    {"L40S", 89, 1.4, 91.6, 183.0, 362.1, 362.1, 733.0},
    {"L40", 89, 1.4, 90.5, 90.5, 181.0, 181.0, 362.0},
    {"L4", 89, 0.49, 30.3, 60.0, 121.0, 121.0, 242.5},
    {"RTX 4090", 89, 1.3, 82.6, 82.6, 165.2, 165.2, 330.3},
};

// Dense FLOP per clock per SM of the architecture (fp16 with fp32 accumulation on tensor cores).
struct PerSm {
  double fp32, tf32, fp16, fp8;
};
PerSm per_sm(int cc) {
  if (cc >= 90) return {256, 2048, 4096, 8192};
  if (cc >= 89) return {256, 512, 1024, 2048};
  if (cc >= 86) return {256, 512, 1024, 0};
  if (cc >= 80) return {128, 1024, 2048, 0};
  if (cc >= 70) return {128, 0, 1024, 0};
  return {128, 0, 0, 0};
}

}  // namespace

double PeakTable::tflops(Dtype t) const {
  switch (t) {
    case Dtype::fp64:
      return fp64;
    case Dtype::fp32:
      return fp32;
    case Dtype::tf32:
      return tf32;
    case Dtype::fp16:
      return fp16;
    case Dtype::bf16:
      return bf16;
    case Dtype::fp8:
      return fp8;
  }
  return 0;
}

PeakTable peaks_for(const DeviceInfo& info) {
  PeakTable t;
  // HBM and GDDR transfer twice per memory clock.
  t.mem_gbs = 2.0 * info.max_mem_clock_mhz * 1e6 * (info.bus_width_bits / 8.0) / 1e9;
  for (const Datasheet& d : kDatasheets) {
    if (d.cc == info.cc() && info.name.find(d.name_part) != std::string::npos) {
      t.fp64 = d.fp64, t.fp32 = d.fp32, t.tf32 = d.tf32, t.fp16 = d.fp16, t.bf16 = d.bf16;
      t.fp8 = d.fp8;
      t.source = std::string("datasheet: ") + d.name_part;
      return t;
    }
  }
  PerSm r = per_sm(info.cc());
  double clk = info.sm_count * info.max_sm_clock_mhz * 1e6 / 1e12;
  t.fp32 = r.fp32 * clk;
  t.tf32 = r.tf32 * clk;
  t.fp16 = r.fp16 * clk;
  t.bf16 = info.cc() >= 80 ? r.fp16 * clk : 0;
  t.fp8 = r.fp8 * clk;
  t.fp64 = 0;
  t.source = "per-SM rate x " + std::to_string(info.sm_count) + " SMs x " +
             std::to_string(info.max_sm_clock_mhz) + " MHz";
  return t;
}

}  // namespace xfbench
