// GPU clocks, temperature and power from NVML, loaded at run time (libnvidia-ml comes with the
// driver, so xfbench starts on machines without one and simply reports no telemetry).
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace xfbench::detail {

struct TelemetryReading {
  int samples = 0;
  double sm_mhz = 0, mem_mhz = 0, power_w = 0;  // means
  double temp_c = 0;                            // maximum
};

// Samples the device every few milliseconds on a background thread from construction to stop();
// a negative device (telemetry off) samples nothing.
class TelemetrySampler {
 public:
  explicit TelemetrySampler(int cuda_device);
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;
  TelemetryReading stop();

 private:
  void sample();
  void* device_ = nullptr;  // nvmlDevice_t
  TelemetryReading sum_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

std::string nvml_driver_version();  // "" when NVML is unavailable
std::string nvml_status();          // "ok" or why NVML is unavailable

}  // namespace xfbench::detail
