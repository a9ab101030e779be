#include "xfbench/device.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "xfbench/error.hpp"
#include "xfbench/flags.hpp"

namespace xfbench {
namespace {

std::string probe_gpu() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string vis = visible ? std::string(" (CUDA_VISIBLE_DEVICES='") + visible + "')" : "";
  if (err == cudaErrorInsufficientDriver) {
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    if (drv == 0) return "no NVIDIA driver found (libcuda.so.1 is not installed)";
    return "the NVIDIA driver supports CUDA " + std::to_string(drv / 1000) + "." +
           std::to_string(drv % 1000 / 10) + " but xfbench needs CUDA " +
           std::to_string(rt / 1000) + "." + std::to_string(rt % 1000 / 10) +
           " or newer (update the driver)";
  }
  if (err == cudaErrorNoDevice || (err == cudaSuccess && n == 0)) {
    return "no CUDA device visible" + vis;
  }
  if (err != cudaSuccess) {
    return std::string("CUDA could not start: ") + cudaGetErrorName(err) + " (" +
           cudaGetErrorString(err) + ")" + vis;
  }
  return "";
}

int g_selected = 0;

}  // namespace

const std::string& gpu_unavailable_reason() {
  static const std::string reason = probe_gpu();
  return reason;
}

int device_count() {
  if (!gpu_unavailable_reason().empty()) return 0;
  int n = 0;
  XF_CUDA_CHECK(cudaGetDeviceCount(&n));
  return n;
}

int selected_device() { return g_selected; }

void select_device(int index) {
  int n = device_count();
  if (index < 0 || index >= n) {
    XF_THROW(InvalidArgument, "--xfbench_device=" + std::to_string(index) + " is out of range: " +
                                  std::to_string(n) + " CUDA device" + (n == 1 ? "" : "s") +
                                  " visible (valid: 0.." + std::to_string(n - 1) + ")");
  }
  g_selected = index;
  XF_CUDA_CHECK(cudaSetDevice(index));
}

std::vector<int> parse_gpus(const std::vector<std::string>& items, int visible) {
  std::vector<int> gpus;
  for (const std::string& item : items) {
    char* end = nullptr;
    const long index = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || index < 0 || index > 1023)
      XF_THROW(InvalidArgument, "--xfbench_gpus: '" + item + "' is not a GPU index");
    if (std::find(gpus.begin(), gpus.end(), int(index)) != gpus.end())
      XF_THROW(InvalidArgument, "--xfbench_gpus: GPU " + item + " is named twice");
    if (visible >= 0 && index >= visible) {
      XF_THROW(InvalidArgument, "--xfbench_gpus: GPU " + item +
                                    " is out of range: " + std::to_string(visible) +
                                    " CUDA device" + (visible == 1 ? "" : "s") +
                                    " visible (valid: 0.." + std::to_string(visible - 1) + ")");
    }
    gpus.push_back(int(index));
  }
  return gpus;
}

std::vector<int> gpus_flag() {
  const std::vector<std::string> items =
      flag_list("gpus",
                "GPUs of the multi-GPU cases (P2P pairs, NCCL collectives, multi-GPU TrainStep, "
                "Burn), e.g. 0,1 (default: all visible)");
  return parse_gpus(items, gpu_unavailable_reason().empty() ? device_count() : -1);
}

DeviceInfo read_device_info(int d) {
  if (!gpu_unavailable_reason().empty()) XF_THROW(Unsupported, gpu_unavailable_reason());
  cudaDeviceProp p{};
  XF_CUDA_CHECK(cudaGetDeviceProperties(&p, d));
  auto attr = [d](cudaDeviceAttr a) {
    int v = 0;
    XF_CUDA_CHECK(cudaDeviceGetAttribute(&v, a, d));
    return v;
  };
  DeviceInfo info;
  info.index = d;
  info.name = p.name;
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  info.sm_count = p.multiProcessorCount;
  info.total_mem = p.totalGlobalMem;
  info.l2_bytes = std::size_t(p.l2CacheSize);
  info.bus_width_bits = attr(cudaDevAttrGlobalMemoryBusWidth);
  info.max_sm_clock_mhz = attr(cudaDevAttrClockRate) / 1000;
  info.max_mem_clock_mhz = attr(cudaDevAttrMemoryClockRate) / 1000;
  return info;
}

const DeviceInfo& device_info() {
  static std::once_flag once;
  static DeviceInfo info;
  std::call_once(once, [] { info = read_device_info(g_selected); });
  if (info.name.empty()) XF_THROW(Unsupported, "device information unavailable");
  return info;
}

const PeakTable& device_peaks() {
  static const PeakTable table = peaks_for(device_info());
  return table;
}

}  // namespace xfbench
