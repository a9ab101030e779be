#include "xfbench/telemetry.hpp"

#include <cuda_runtime_api.h>
#include <nvml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "xfbench/nvml.hpp"

namespace xfbench {
namespace {

// The NVML functions used, bound once.
struct Nvml {
  nvmlReturn_t (*clock)(nvmlDevice_t, nvmlClockType_t, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*driver)(char*, unsigned) = nullptr;
  bool ok() const { return clock && temperature && power && driver; }
};

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml f;
    f.clock = nvml_function<decltype(f.clock)>("nvmlDeviceGetClockInfo");
    f.temperature = nvml_function<decltype(f.temperature)>("nvmlDeviceGetTemperature");
    f.power = nvml_function<decltype(f.power)>("nvmlDeviceGetPowerUsage");
    f.reasons = nvml_function<decltype(f.reasons)>("nvmlDeviceGetCurrentClocksEventReasons");
    if (!f.reasons) {  // drivers before 535
      f.reasons = nvml_function<decltype(f.reasons)>("nvmlDeviceGetCurrentClocksThrottleReasons");
    }
    f.energy = nvml_function<decltype(f.energy)>("nvmlDeviceGetTotalEnergyConsumption");
    f.limit = nvml_function<decltype(f.limit)>("nvmlDeviceGetEnforcedPowerLimit");
    f.driver = nvml_function<decltype(f.driver)>("nvmlSystemGetDriverVersion");
    return f;
  }();
  return n;
}

// Clock-event reasons with the names the label uses (reports/nvml.py uses the same).
constexpr std::pair<std::uint64_t, const char*> kReasons[] = {
    {nvmlClocksEventReasonGpuIdle, "gpu_idle"},
    {nvmlClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
    {nvmlClocksEventReasonSwPowerCap, "sw_power_cap"},
    {nvmlClocksThrottleReasonHwSlowdown, "hw_slowdown"},
    {nvmlClocksEventReasonSyncBoost, "sync_boost"},
    {nvmlClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
    {nvmlClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
    {nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
    {nvmlClocksEventReasonDisplayClockSetting, "display_clock_setting"},
};
constexpr double kMinReasonShare = 0.005;

}  // namespace

double host_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

// The energy counter's slope between the first and last samples of [from, t1] that saw it step
// (samples in time order).
double energy_slope(const std::vector<TelemetrySample>& samples, double from, double t1) {
  const TelemetrySample* first = nullptr;
  const TelemetrySample* last = nullptr;
  const auto begin = std::lower_bound(samples.begin(), samples.end(), from,
                                      [](const TelemetrySample& s, double t) { return s.t < t; });
  for (auto i = std::size_t(std::max<std::ptrdiff_t>(begin - samples.begin(), 1));
       i < samples.size(); ++i) {
    const TelemetrySample& s = samples[i];
    if (s.t < from || s.t > t1 || s.energy_j < 0 || samples[i - 1].energy_j < 0) continue;
    if (s.energy_j > samples[i - 1].energy_j) {  // the counter stepped since the last sample
      if (!first) first = &s;
      last = &s;
    }
  }
  if (!first || last == first || !(last->t > first->t)) return 0;
  return (last->energy_j - first->energy_j) / (last->t - first->t);
}

}  // namespace

double energy_over(const std::vector<TelemetrySample>& samples, double t0, double t1) {
  return energy_slope(samples, std::min(t0, t1 - kMinPowerSpan), t1);
}

bool at_power_limit(const std::vector<TelemetrySample>& samples, double limit_w) {
  if (samples.empty() || !(limit_w > 0)) return false;
  const double t1 = samples.back().t;
  return energy_slope(samples, t1 - kCapSpan, t1) >= kAtLimit * limit_w;
}

TelemetryReading summarize(const std::vector<TelemetrySample>& samples, double t0, double t1) {
  TelemetryReading r;
  std::size_t counts[std::size(kReasons)] = {};
  for (const TelemetrySample& s : samples) {
    if (s.t < t0 || s.t > t1) continue;
    ++r.samples;
    r.sm_mhz += s.sm_mhz;
    r.mem_mhz += s.mem_mhz;
    r.power_w += s.power_w;
    r.temp_c = std::max(r.temp_c, double(s.temp_c));
    for (std::size_t i = 0; i < std::size(kReasons); ++i) {
      if (s.reasons & kReasons[i].first) ++counts[i];
    }
  }
  if (r.samples == 0) return r;
  r.sm_mhz /= r.samples;
  r.mem_mhz /= r.samples;
  r.power_w /= r.samples;
  if (double p = energy_over(samples, t0, t1); p > 0) {
    r.power_w = p;
    r.power_from_energy = true;
  }
  for (std::size_t i = 0; i < std::size(kReasons); ++i) {
    double share = double(counts[i]) / r.samples;
    if (share >= kMinReasonShare) r.throttle.emplace_back(kReasons[i].second, share);
  }
  return r;
}

std::string throttle_text(const TelemetryReading& r) {
  std::string out;
  for (const auto& [name, fraction] : r.throttle) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.0f%%", out.empty() ? "" : ", ", name.c_str(),
                  100.0 * fraction);
    out += buf;
  }
  return out;
}

TelemetrySampler::TelemetrySampler(int cuda_device) {
  if (cuda_device < 0 || !nvml().ok()) return;  // off (--xfbench_telemetry=false) or no NVML
  device_ = nvml_device(cuda_device);
  if (!device_) return;
  unsigned limit_mw = 0;
  if (nvml().limit && nvml().limit(static_cast<nvmlDevice_t>(device_), &limit_mw) == NVML_SUCCESS)
    limit_w_ = limit_mw / 1000.0;
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

TelemetrySampler::~TelemetrySampler() { stop(0, 0); }

void TelemetrySampler::sample() {
  const Nvml& n = nvml();
  auto dev = static_cast<nvmlDevice_t>(device_);
  TelemetrySample s;
  // The energy counter first, stamped right after: its step times give the power (energy_over).
  unsigned long long mj = 0;
  if (n.energy && n.energy(dev, &mj) == NVML_SUCCESS) s.energy_j = double(mj) / 1e3;
  s.t = host_seconds();
  unsigned mw = 0;
  unsigned long long reasons = 0;
  bool ok = n.clock(dev, NVML_CLOCK_SM, &s.sm_mhz) == NVML_SUCCESS &&
            n.clock(dev, NVML_CLOCK_MEM, &s.mem_mhz) == NVML_SUCCESS &&
            n.temperature(dev, NVML_TEMPERATURE_GPU, &s.temp_c) == NVML_SUCCESS &&
            n.power(dev, &mw) == NVML_SUCCESS;
  if (!ok) return;
  if (n.reasons && n.reasons(dev, &reasons) == NVML_SUCCESS) s.reasons = reasons;
  if (reasons & nvmlClocksEventReasonSwPowerCap)
    power_capped_.store(true, std::memory_order_relaxed);
  s.power_w = mw / 1000.0;
  std::lock_guard<std::mutex> lock(mu_);
  samples_.push_back(s);
  if (at_power_limit(samples_, limit_w_)) power_capped_.store(true, std::memory_order_relaxed);
}

TelemetryReading TelemetrySampler::stop(double t0, double t1) {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  return summarize(samples_, t0, t1);
}

TelemetryReading TelemetrySampler::read(double t0, double t1) {
  std::lock_guard<std::mutex> lock(mu_);
  return summarize(samples_, t0, t1);
}

std::string nvml_driver_version() {
  const Nvml& n = nvml();
  if (!n.ok()) return "";
  char buf[96] = {};
  return n.driver(buf, sizeof buf) == NVML_SUCCESS ? buf : "";
}

std::string telemetry_status() {
  if (xfbench::nvml_status() != "ok") return xfbench::nvml_status();
  return nvml().ok() ? "ok" : "libnvidia-ml.so.1 lacks a telemetry function";
}

}  // namespace xfbench
