#include "host_sensors.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace xfbench::burn {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const std::string kHwmon = "/sys/class/hwmon", kThermal = "/sys/class/thermal";
const std::string kPowercap = "/sys/class/powercap";

std::string cpu_dir(int cpu) { return "/sys/devices/system/cpu/cpu" + std::to_string(cpu); }

double number_at(const SysFs& sys, const std::string& path) {
  const SysRead r = sys.read(path);
  long long v = 0;
  return r.ok && parse_number(r.text, v) ? double(v) : kNaN;
}

// "coretemp" + "Package id 0" -> package, "Core 3" -> core; k10temp and zenpower "Tctl"/"Tdie"
// -> package, "Tccd1" -> core (a chiplet); an ARM SoC's cpu_thermal -> package; others (NVMe,
// ACPI, GPUs) are not the CPU's. Returns false for those.
bool classify_hwmon(const std::string& chip, const std::string& label, TempKind& kind) {
  auto starts = [&](const char* p) { return label.rfind(p, 0) == 0; };
  if (chip == "coretemp") {
    if (starts("Package id")) return kind = TempKind::package, true;
    if (starts("Core")) return kind = TempKind::core, true;
    return false;
  }
  if (chip == "k10temp" || chip == "zenpower") {
    if (starts("Tctl") || starts("Tdie")) return kind = TempKind::package, true;
    if (starts("Tccd")) return kind = TempKind::core, true;
    return false;
  }
  if (chip.find("cpu") != std::string::npos) return kind = TempKind::package, true;
  return false;
}

// The CPU's temperature sensors; `unreadable` gets the first one found that cannot be read.
void find_temps(const SysFs& sys, HostSensors& s, std::string& unreadable) {
  auto add = [&](const std::string& path, const std::string& label, TempKind kind) {
    const SysRead r = sys.read(path);
    long long v = 0;
    if (r.ok && parse_number(r.text, v)) {
      s.temps.push_back({path, label, kind});
    } else if (unreadable.empty()) {
      unreadable = path + " " + (r.ok ? "unparsable ('" + r.text.substr(0, 20) + "')" : r.why);
    }
  };
  for (const std::string& h : sys.list(kHwmon, "hwmon")) {
    const std::string dir = kHwmon + "/" + h;
    const SysRead chip = sys.read(dir + "/name");
    for (const std::string& f : sys.list(dir, "temp")) {
      const std::size_t suffix = f.find("_input");
      if (suffix == std::string::npos || suffix + 6 != f.size()) continue;
      const SysRead label = sys.read(dir + "/" + f.substr(0, suffix) + "_label");
      const std::string text = label.ok ? label.text : f.substr(0, suffix);
      TempKind kind;
      if (chip.ok && classify_hwmon(chip.text, text, kind))
        add(dir + "/" + f, chip.text + " " + text, kind);
    }
  }
  for (const std::string& z : sys.list(kThermal, "thermal_zone")) {
    const SysRead type = sys.read(kThermal + "/" + z + "/type");
    if (type.ok && (type.text == "x86_pkg_temp" || type.text.find("cpu") != std::string::npos))
      add(kThermal + "/" + z + "/temp", "thermal " + type.text, TempKind::package);
  }
}

void explain_temps(const SysFs& sys, HostSensors& s, const std::string& unreadable) {
  const bool any_package = std::any_of(s.temps.begin(), s.temps.end(), [](const TempSensor& t) {
    return t.kind == TempKind::package;
  });
  const bool any_core = std::any_of(s.temps.begin(), s.temps.end(),
                                    [](const TempSensor& t) { return t.kind == TempKind::core; });
  std::string why;
  if (!unreadable.empty()) {
    why = unreadable;
  } else if (sys.list(kHwmon).empty() && sys.list(kThermal, "thermal_zone").empty()) {
    why = kHwmon + " and " + kThermal + " have none (a VM, or no coretemp/k10temp driver)";
  }
  if (!any_package) {
    s.no_package_temp = "no package temperature: " +
                        (why.empty() ? kHwmon +
                                           " has no coretemp 'Package id', k10temp 'Tctl' or "
                                           "cpu_thermal sensor, " +
                                           kThermal + " no x86_pkg_temp zone"
                                     : why);
  }
  if (!any_core) {
    s.no_core_temp =
        "no core temperature: " +
        (why.empty() ? kHwmon + " has no coretemp 'Core N' or k10temp 'Tccd N' sensor" : why);
  }
}

void find_rapl(const SysFs& sys, HostSensors& s) {
  std::string unreadable;
  for (const std::string& d : sys.list(kPowercap, "intel-rapl:")) {
    if (d.find(':', 11) != std::string::npos) continue;  // intel-rapl:0:0 is inside package 0
    const std::string dir = kPowercap + "/" + d;
    const SysRead name = sys.read(dir + "/name");
    if (!name.ok || name.text.rfind("package", 0) != 0) continue;  // psys counts the platform
    const SysRead energy = sys.read(dir + "/energy_uj");
    long long v = 0;
    if (!energy.ok || !parse_number(energy.text, v)) {
      if (unreadable.empty())
        unreadable = dir + "/energy_uj " + (energy.ok ? "unparsable" : energy.why);
      continue;
    }
    const double max_uj = number_at(sys, dir + "/max_energy_range_uj");
    s.rapl.push_back({dir + "/energy_uj", name.text, std::isnan(max_uj) ? 0 : max_uj});
  }
  if (!s.rapl.empty()) return;
  s.no_power =
      "no power: " +
      (unreadable.empty()
           ? kPowercap + " has no intel-rapl package domain"
           : unreadable +
                 (unreadable.find("Permission") != std::string::npos ? ", root only" : ""));
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  int n = 0;
  for (double x : v)
    if (!std::isnan(x)) sum += x, ++n;
  return n ? sum / n : kNaN;
}

std::optional<double> known(double v) {
  return std::isnan(v) ? std::nullopt : std::optional<double>(v);
}

}  // namespace

HostSensors find_sensors(const SysFs& sys, const std::vector<int>& cpus) {
  HostSensors s;
  s.cpus = cpus;
  std::string unreadable;
  find_temps(sys, s, unreadable);
  explain_temps(sys, s, unreadable);
  std::string freq_why, throttle_why;
  for (int c : cpus) {
    const std::string f = cpu_dir(c) + "/cpufreq/scaling_cur_freq";
    const std::string t = cpu_dir(c) + "/thermal_throttle/core_throttle_count";
    const SysRead fr = sys.read(f), tr = sys.read(t);
    s.freq = s.freq || fr.ok;
    s.throttle = s.throttle || tr.ok;
    if (!fr.ok && freq_why.empty())
      freq_why = f + " " + fr.why + (fr.why == "absent" ? " (no cpufreq driver; a VM?)" : "");
    if (!tr.ok && throttle_why.empty()) throttle_why = t + " " + tr.why;
  }
  if (!s.freq) s.no_freq = "no core frequency: " + freq_why;
  if (!s.throttle) s.no_throttle = "no throttle counts: " + throttle_why;
  find_rapl(sys, s);
  return s;
}

SensorSample sample_sensors(const SysFs& sys, const HostSensors& found, double t) {
  SensorSample s;
  s.t = t;
  for (const TempSensor& temp : found.temps) s.temp_c.push_back(number_at(sys, temp.path) / 1e3);
  for (int c : found.cpus) {
    s.mhz.push_back(found.freq ? number_at(sys, cpu_dir(c) + "/cpufreq/scaling_cur_freq") / 1e3
                               : kNaN);
    s.throttle.push_back(found.throttle
                             ? number_at(sys, cpu_dir(c) + "/thermal_throttle/core_throttle_count")
                             : kNaN);
  }
  for (const RaplDomain& d : found.rapl) s.energy_uj.push_back(number_at(sys, d.path));
  return s;
}

SensorSummary summarize_sensors(const HostSensors& found,
                                const std::vector<SensorSample>& samples) {
  SensorSummary out;
  for (const std::string* why : {&found.no_package_temp, &found.no_core_temp, &found.no_freq,
                                 &found.no_throttle, &found.no_power})
    if (!why->empty()) out.absent.push_back(*why);
  if (samples.empty()) return out;
  // Temperatures: the hottest package sensor as the burn starts, the hottest reading of each kind.
  double start = kNaN, package = kNaN, core = kNaN;
  for (std::size_t i = 0; i < found.temps.size(); ++i) {
    const bool is_package = found.temps[i].kind == TempKind::package;
    for (std::size_t k = 0; k < samples.size(); ++k) {
      const double v = samples[k].temp_c[i];
      if (std::isnan(v)) continue;
      double& top = is_package ? package : core;
      top = std::isnan(top) ? v : std::max(top, v);
      if (k == 0 && is_package) start = std::isnan(start) ? v : std::max(start, v);
    }
  }
  out.package_temp_start = known(start);
  out.package_temp_max = known(package);
  out.core_temp_max = known(core);
  // Frequency: each core's mean, then the slowest core and the median one.
  std::vector<double> each;
  for (std::size_t c = 0; c < found.cpus.size(); ++c) {
    std::vector<double> v;
    for (const SensorSample& s : samples) v.push_back(s.mhz[c]);
    out.core_mhz.push_back(mean(v));
    if (!std::isnan(out.core_mhz.back())) each.push_back(out.core_mhz.back());
  }
  if (!each.empty()) {
    std::sort(each.begin(), each.end());
    out.mhz_min = each.front();
    const std::size_t n = each.size();
    out.mhz_median = n % 2 ? each[n / 2] : 0.5 * (each[n / 2 - 1] + each[n / 2]);
  }
  // Throttle events: what each core's counter gained from the first sample to the last.
  double events = 0;
  bool counted = false;
  for (std::size_t c = 0; c < found.cpus.size(); ++c) {
    const double a = samples.front().throttle[c], b = samples.back().throttle[c];
    if (std::isnan(a) || std::isnan(b)) continue;
    events += std::max(0.0, b - a);
    counted = true;
  }
  if (counted) out.throttle_events = events;
  // Power: each domain's energy step by step (a counter that wrapped gains its range).
  double joules = 0;
  bool measured = false;
  for (std::size_t d = 0; d < found.rapl.size(); ++d) {
    double last = kNaN;
    for (const SensorSample& s : samples) {
      const double v = s.energy_uj[d];
      if (std::isnan(v)) continue;
      if (!std::isnan(last)) {
        double step = v - last;
        if (step < 0 && found.rapl[d].max_uj > 0) step += found.rapl[d].max_uj;
        if (step >= 0) joules += step / 1e6, measured = true;
      }
      last = v;
    }
  }
  const double span = samples.back().t - samples.front().t;
  if (measured && span > 0) out.power_w = joules / span;
  // Found before the burn but never read during it: absent too, and said.
  auto lost = [&](bool found_it, bool have, const char* what) {
    if (found_it && !have) out.absent.push_back(std::string("no ") + what + ": read failed");
  };
  lost(found.no_package_temp.empty(), bool(out.package_temp_max), "package temperature");
  lost(found.no_core_temp.empty(), bool(out.core_temp_max), "core temperature");
  lost(found.freq, bool(out.mhz_min), "core frequency");
  lost(found.throttle, bool(out.throttle_events), "throttle counts");
  lost(!found.rapl.empty() && samples.size() > 1, bool(out.power_w), "power");
  return out;
}

}  // namespace xfbench::burn
