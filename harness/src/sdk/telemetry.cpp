#include "telemetry.hpp"

#include <cuda_runtime_api.h>
#include <nvml.h>

#include <algorithm>
#include <chrono>

#include "xfbench/nvml.hpp"

namespace xfbench::detail {
namespace {

// The NVML functions sampled, bound once.
struct Nvml {
  nvmlReturn_t (*clock)(nvmlDevice_t, nvmlClockType_t, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*driver)(char*, unsigned) = nullptr;
  bool ok() const { return clock && temperature && power && driver; }
};

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml f;
    f.clock = nvml_function<decltype(f.clock)>("nvmlDeviceGetClockInfo");
    f.temperature = nvml_function<decltype(f.temperature)>("nvmlDeviceGetTemperature");
    f.power = nvml_function<decltype(f.power)>("nvmlDeviceGetPowerUsage");
    f.driver = nvml_function<decltype(f.driver)>("nvmlSystemGetDriverVersion");
    return f;
  }();
  return n;
}

}  // namespace

TelemetrySampler::TelemetrySampler(int cuda_device) {
  if (cuda_device < 0 || !nvml().ok()) return;  // off (--xfbench_telemetry=false) or no NVML
  device_ = nvml_device(cuda_device);
  if (!device_) return;
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
  const Nvml& n = nvml();
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
  const Nvml& n = nvml();
  if (!n.ok()) return "";
  char buf[96] = {};
  return n.driver(buf, sizeof buf) == NVML_SUCCESS ? buf : "";
}

std::string nvml_status() {
  if (xfbench::nvml_status() != "ok") return xfbench::nvml_status();
  return nvml().ok() ? "ok" : "libnvidia-ml.so.1 lacks a telemetry function";
}

}  // namespace xfbench::detail
