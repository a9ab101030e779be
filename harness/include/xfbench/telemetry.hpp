// GPU clocks, temperature, power, clock-event (throttle) reasons and the energy counter from NVML,
// loaded at run time (libnvidia-ml comes with the driver, so xfbench starts on machines without
// one and simply reports no telemetry).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace xfbench {

// Seconds on the host's steady clock: the time base of samples and energy readings.
double host_seconds();

struct TelemetrySample {
  double t = 0;  // host_seconds()
  unsigned sm_mhz = 0, mem_mhz = 0, temp_c = 0;
  double power_w = 0;         // NVML's power reading (averaged by the driver over ~1 s)
  std::uint64_t reasons = 0;  // nvmlClocksEventReason* bits
  double energy_j = -1;       // NVML's total-energy counter (-1: unavailable)
};

struct TelemetryReading {
  int samples = 0;
  double sm_mhz = 0, mem_mhz = 0;  // means
  double temp_c = 0;               // maximum
  // Mean power from the energy counter's slope (energy_over), else the mean power reading.
  double power_w = 0;
  bool power_from_energy = false;
  // Clock-event reasons (power cap, thermal, hardware slowdown, ...) active in at least 0.5% of
  // the samples, with the fraction of samples each was active in.
  std::vector<std::pair<std::string, double>> throttle;
};

// The samples of [t0, t1] summarised (pure: unit-tested). Power comes from energy_over.
TelemetryReading summarize(const std::vector<TelemetrySample>& samples, double t0, double t1);

// Mean power from the energy counter over [t0, t1], widened to the last kMinPowerSpan seconds
// when shorter: the counter steps only about every 100 ms, so the slope is taken between the
// first and last samples that saw it step (each step's time is known to one sampling interval).
// 0 when fewer than two steps were seen.
constexpr double kMinPowerSpan = 1.0;
double energy_over(const std::vector<TelemetrySample>& samples, double t0, double t1);
// At the power limit: the energy counter's slope over the last kCapSpan seconds of samples (as
// energy_over takes it, at least two steps) at or above kAtLimit of the enforced limit. A case
// drawing that much meets the limiter within about a second, before NVML reports sw_power_cap (a
// case shorter than that measured its burst above the limit: an H100 fp32 GEMM alone drew 742 W at
// 1980 MHz in 0.7 s, 2.3% faster than the same case capped), so its warm-up is the capped one.
constexpr double kCapSpan = 0.3, kAtLimit = 0.97;
bool at_power_limit(const std::vector<TelemetrySample>& samples, double limit_w);
// "sw_power_cap 100%, hw_thermal 12%" (empty when none was active).
std::string throttle_text(const TelemetryReading& r);

// Samples the device every 10 ms on a background thread from construction to stop(); a negative
// device (telemetry off) samples nothing.
class TelemetrySampler {
 public:
  explicit TelemetrySampler(int cuda_device);
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;
  // Stops sampling (idempotent) and summarises the samples taken in [t0, t1].
  TelemetryReading stop(double t0, double t1);
  // Summarises the samples taken in [t0, t1] so far, sampling on (live progress lines).
  TelemetryReading read(double t0, double t1);
  // Whether any sample so far saw the power cap (clock-event reason sw_power_cap) or the power
  // at the limit (at_power_limit).
  bool power_capped() const { return power_capped_.load(std::memory_order_relaxed); }

 private:
  void sample();
  void* device_ = nullptr;  // nvmlDevice_t
  double limit_w_ = 0;      // the enforced power limit (0: unknown)
  std::vector<TelemetrySample> samples_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::atomic<bool> power_capped_{false};
  std::thread thread_;
};

std::string nvml_driver_version();  // "" when NVML is unavailable
std::string
telemetry_status();  // "ok" or why NVML (or one of its telemetry functions) is unavailable

}  // namespace xfbench
