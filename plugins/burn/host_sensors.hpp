// The host's sensors during a CPU burn, as `sensors` and the kernel show them: package and core
// temperatures (/sys/class/hwmon: coretemp, k10temp, zenpower; /sys/class/thermal zones), each
// core's current frequency (cpufreq), thermal-throttle counts (Intel's therm_throt) and package
// energy (RAPL, /sys/class/powercap). What the host does not expose is absent, never a zero, and
// says why in one line. Everything is read through SysFs, so the tests use a fake tree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sysfs.hpp"

namespace xfbench::burn {

enum class TempKind { package, core };
struct TempSensor {
  std::string path;   // its temp*_input or thermal_zone*/temp
  std::string label;  // "coretemp Package id 0", "k10temp Tctl", "thermal x86_pkg_temp"
  TempKind kind = TempKind::package;
};

struct RaplDomain {
  std::string path;   // energy_uj of a package domain (intel-rapl:N, also on AMD)
  std::string name;   // "package-0"
  double max_uj = 0;  // where the counter wraps (max_energy_range_uj); 0: unknown
};

// What the host exposes for `cpus`, found once before a burn; each reason is "" where present.
struct HostSensors {
  std::vector<int> cpus;
  std::vector<TempSensor> temps;
  bool freq = false, throttle = false;
  std::vector<RaplDomain> rapl;
  std::string no_package_temp, no_core_temp, no_freq, no_throttle, no_power;
};
HostSensors find_sensors(const SysFs& sys, const std::vector<int>& cpus);

// One reading of every sensor found; NaN where a read failed.
struct SensorSample {
  double t = 0;                   // seconds
  std::vector<double> temp_c;     // per HostSensors::temps
  std::vector<double> mhz;        // per cpu
  std::vector<double> throttle;   // per cpu: core_throttle_count
  std::vector<double> energy_uj;  // per RAPL domain
};
SensorSample sample_sensors(const SysFs& sys, const HostSensors& found, double t);

// The samples of a burn, the first taken as it starts and the last as it ends.
struct SensorSummary {
  std::optional<double> package_temp_start, package_temp_max, core_temp_max;  // C
  std::vector<double> core_mhz;               // per cpu, the mean of its samples; NaN where unknown
  std::optional<double> mhz_min, mhz_median;  // of core_mhz
  std::optional<double> throttle_events;      // new core throttle events, all cpus
  std::optional<double> power_w;              // package energy over the burn, all domains
  std::vector<std::string> absent;            // "no package temperature: /sys/class/hwmon has none"
};
SensorSummary summarize_sensors(const HostSensors& found, const std::vector<SensorSample>& samples);

}  // namespace xfbench::burn
