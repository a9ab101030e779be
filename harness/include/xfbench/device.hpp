// What the selected GPU is and what it can do at best (the peak table behind `pct_peak`).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "xfbench/dtype.hpp"

namespace xfbench {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t total_mem = 0;  // bytes
  std::size_t l2_bytes = 0;
  int bus_width_bits = 0;
  int max_sm_clock_mhz = 0;
  int max_mem_clock_mhz = 0;
  int cc() const { return cc_major * 10 + cc_minor; }
};

// Dense tensor-core (and plain fp32/fp64) peaks in TFLOP/s, and memory bandwidth in GB/s.
struct PeakTable {
  double fp64 = 0, fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0;  // 0: not supported
  double mem_gbs = 0;
  std::string source;  // "datasheet: <product>" or "per-SM rate x SMs x max clock"
  double tflops(Dtype t) const;
};

// Availability of a CUDA device, checked once: "" when usable, otherwise what was found.
const std::string& gpu_unavailable_reason();
int device_count();  // 0 when no usable device

// The device cases run on (--xfbench_device); info is read once and cached.
int selected_device();
void select_device(int index);  // throws InvalidArgument naming the number of devices
const DeviceInfo& device_info();
DeviceInfo read_device_info(int index);  // any device, read each call (multi-GPU cases)
const PeakTable& device_peaks();

// --xfbench_gpus (e.g. 0,1; empty: all visible): the GPUs of multi-GPU cases — P2P pairs, NCCL
// collectives, multi-GPU TrainStep, Burn. One flag, read the same way by every plugin. Throws
// InvalidArgument, as --xfbench_device does, for an item that is not an index, a GPU named twice
// or (when a GPU is usable) one this machine does not have.
std::vector<int> gpus_flag();
// The parsing behind gpus_flag (pure; `visible` < 0 skips the range check).
std::vector<int> parse_gpus(const std::vector<std::string>& items, int visible);

// The peak table for a device description (pure: unit-tested without a GPU).
PeakTable peaks_for(const DeviceInfo& info);

}  // namespace xfbench
