// The JSON context of a run: device, driver, library versions, peaks, plugins.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <initializer_list>

#include "xfbench/context.hpp"
#include "xfbench/detail/host.hpp"
#include "xfbench/device.hpp"
#include "xfbench/flags.hpp"
#include "xfbench/telemetry.hpp"
#include "xfbench/timer.hpp"

#ifndef XFBENCH_VERSION
#define XFBENCH_VERSION "unknown"
#endif

namespace xfbench::detail {

const char* xfbench_version() { return XFBENCH_VERSION; }

namespace {

// Asks a library for its version through dlsym, preferring the copy a plugin already loaded.
void* open_library(std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_NOLOAD)) return h;
  }
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

std::string dotted(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string cublas_version() {
  void* h = open_library({"libcublasLt.so.13", "libcublasLt.so.12"});
  auto fn = h ? reinterpret_cast<std::size_t (*)()>(dlsym(h, "cublasLtGetVersion")) : nullptr;
  if (!fn) return "not found";
  std::size_t v = fn();  // major*10000 + minor*100 + patch
  return dotted(int(v / 10000), int(v / 100 % 100), int(v % 100));
}

std::string cudnn_version() {
  void* h = open_library({"libcudnn.so.9", "libcudnn.so"});
  auto fn = h ? reinterpret_cast<std::size_t (*)()>(dlsym(h, "cudnnGetVersion")) : nullptr;
  if (!fn) return "not found";
  std::size_t v = fn();  // cuDNN 9: major*10000 + minor*100 + patch
  return dotted(int(v / 10000), int(v / 100 % 100), int(v % 100));
}

std::string nccl_version() {
  void* h = open_library({"libnccl.so.2", "libnccl.so"});
  auto fn = h ? reinterpret_cast<int (*)(int*)>(dlsym(h, "ncclGetVersion")) : nullptr;
  int v = 0;
  if (!fn || fn(&v) != 0) return "not found";
  return dotted(v / 10000, v / 100 % 100, v % 100);  // NCCL >= 2.9 encoding
}

std::string cuda_version(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string fixed(double v, int digits = 1) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string general(double v) {  // %g, as the PyTorch peer writes the same keys
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::vector<std::function<ContextEntries()>>& providers() {
  static std::vector<std::function<ContextEntries()>> p;
  return p;
}

}  // namespace

void add_run_context(const std::vector<std::string>& plugin_versions) {
  using benchmark::AddCustomContext;
  AddCustomContext("xfbench_version", XFBENCH_VERSION);
  std::string plugins;
  for (const std::string& p : plugin_versions) plugins += (plugins.empty() ? "" : ", ") + p;
  AddCustomContext("xfbench_plugins", plugins);
  AddCustomContext("xfbench_mode", to_string(timing_mode()));
  if (timing_mode() == TimingMode::steady) {
    const SteadyStateOptions& o = steady_state_options();
    AddCustomContext("protocol_min_time", general(o.min_time));
    AddCustomContext("protocol_max_noise_pct", general(100 * o.max_noise));
    AddCustomContext("protocol_timeout", general(o.timeout));
    AddCustomContext("protocol_min_warmup", general(o.min_warmup));
    AddCustomContext("protocol_capped_warmup", general(o.capped_warmup));
    AddCustomContext("protocol_window_ms", general(1e3 * window_seconds()));
  }
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  AddCustomContext("cuda_runtime", cuda_version(rt));
  AddCustomContext("cublas_version", cublas_version());
  AddCustomContext("cudnn_version", cudnn_version());
  AddCustomContext("nccl_version", nccl_version());
  if (!gpu_unavailable_reason().empty()) {
    AddCustomContext("gpu_name", "none (" + gpu_unavailable_reason() + ")");
    return;
  }
  std::string driver = nvml_driver_version();
  if (driver.empty()) {
    int d = 0;
    cudaDriverGetVersion(&d);
    driver = "CUDA " + cuda_version(d);
  }
  AddCustomContext("driver_version", driver);
  AddCustomContext("nvml", telemetry_status());
  const DeviceInfo& info = device_info();
  const PeakTable& peak = device_peaks();
  AddCustomContext("gpu_index", std::to_string(info.index));
  AddCustomContext("gpu_name", info.name);
  AddCustomContext("gpu_cc", std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor));
  AddCustomContext("gpu_sm_count", std::to_string(info.sm_count));
  AddCustomContext("gpu_mem_GB", fixed(info.total_mem / 1e9));
  AddCustomContext("gpu_l2_MB", fixed(info.l2_bytes / 1e6));
  AddCustomContext("gpu_bus_width", std::to_string(info.bus_width_bits));
  AddCustomContext("gpu_max_sm_MHz", std::to_string(info.max_sm_clock_mhz));
  AddCustomContext("gpu_max_mem_MHz", std::to_string(info.max_mem_clock_mhz));
  for (Dtype t : {Dtype::fp64, Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8}) {
    AddCustomContext(std::string("peak_TFLOPS_") + to_string(t), fixed(peak.tflops(t)));
  }
  AddCustomContext("peak_mem_GBs", fixed(peak.mem_gbs));
  AddCustomContext("peak_source", peak.source);
  for (const auto& provider : providers()) {
    try {
      for (const auto& [key, value] : provider()) AddCustomContext(key, value);
    } catch (const std::exception& e) {
      AddCustomContext("context_error", e.what());
    }
  }
}

}  // namespace xfbench::detail

void xfbench::add_context_provider(std::function<ContextEntries()> provider) {
  detail::providers().push_back(std::move(provider));
}
