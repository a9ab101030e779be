#include "telemetry.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvml.h>

#include <algorithm>
#include <chrono>

namespace xfbench::detail {
namespace {

struct Nvml {
  std::string status = "ok";
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, nvmlClockType_t, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*driver)(char*, unsigned) = nullptr;
  bool ok() const { return status == "ok"; }
};

template <class F>
bool bind(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

Nvml load() {
  Nvml n;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    n.status = std::string("libnvidia-ml.so.1 not loadable: ") + dlerror();
    return n;
  }
  if (!bind(lib, n.init, "nvmlInit_v2") ||
      !bind(lib, n.by_pci, "nvmlDeviceGetHandleByPciBusId_v2") ||
      !bind(lib, n.clock, "nvmlDeviceGetClockInfo") ||
      !bind(lib, n.temperature, "nvmlDeviceGetTemperature") ||
      !bind(lib, n.power, "nvmlDeviceGetPowerUsage") ||
      !bind(lib, n.driver, "nvmlSystemGetDriverVersion")) {
    n.status = "libnvidia-ml.so.1 lacks a needed function";
    return n;
  }
  nvmlReturn_t r = n.init();
  if (r != NVML_SUCCESS) n.status = "nvmlInit failed with code " + std::to_string(int(r));
  return n;
}

Nvml& nvml() {
  static Nvml n = load();
  return n;
}

}  // namespace

TelemetrySampler::TelemetrySampler(int cuda_device) {
  Nvml& n = nvml();
  if (!n.ok()) return;
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_device) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  nvmlDevice_t dev{};
  if (n.by_pci(bus, &dev) != NVML_SUCCESS) return;
  device_ = dev;
  sample();
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(10), [this] { return stopping_; })) {
      lock.unlock();
      sample();
      lock.lock();
    }
  });
}

TelemetrySampler::~TelemetrySampler() { stop(); }

void TelemetrySampler::sample() {
  Nvml& n = nvml();
  auto dev = static_cast<nvmlDevice_t>(device_);
  unsigned sm = 0, mem = 0, temp = 0, mw = 0;
  bool ok = n.clock(dev, NVML_CLOCK_SM, &sm) == NVML_SUCCESS &&
            n.clock(dev, NVML_CLOCK_MEM, &mem) == NVML_SUCCESS &&
            n.temperature(dev, NVML_TEMPERATURE_GPU, &temp) == NVML_SUCCESS &&
            n.power(dev, &mw) == NVML_SUCCESS;
  if (!ok) return;
  std::lock_guard<std::mutex> lock(mu_);
  ++sum_.samples;
  sum_.sm_mhz += sm;
  sum_.mem_mhz += mem;
  sum_.power_w += mw / 1000.0;
  sum_.temp_c = std::max(sum_.temp_c, double(temp));
}

TelemetryReading TelemetrySampler::stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    sample();
  }
  std::lock_guard<std::mutex> lock(mu_);
  TelemetryReading r = sum_;
  if (r.samples > 0) {
    r.sm_mhz /= r.samples;
    r.mem_mhz /= r.samples;
    r.power_w /= r.samples;
  }
  return r;
}

std::string nvml_driver_version() {
  Nvml& n = nvml();
  if (!n.ok()) return "";
  char buf[96] = {};
  return n.driver(buf, sizeof buf) == NVML_SUCCESS ? buf : "";
}

std::string nvml_status() { return nvml().status; }

}  // namespace xfbench::detail
