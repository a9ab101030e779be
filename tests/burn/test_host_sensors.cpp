// The host's sensors on fake /sys trees: an Intel server with everything, an AMD one, a VM with
// nothing (each absent sensor says why, never a zero), unreadable files, and summaries of samples
// (temperatures, frequencies, throttle counts, power across a RAPL wrap).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "fake_sys.hpp"
#include "host_sensors.hpp"

namespace {

using namespace xfbench::burn;

std::string cpu(int c) { return "/sys/devices/system/cpu/cpu" + std::to_string(c); }

// Two cores of one socket with coretemp, x86_pkg_temp, cpufreq, therm_throt and RAPL, plus
// sensors that are not the CPU's (NVMe, ACPI, RAPL's core and psys domains).
void intel_host(xftest::FakeSys& sys) {
  sys.write("/sys/class/hwmon/hwmon0/name", "nvme\n");
  sys.write("/sys/class/hwmon/hwmon0/temp1_input", "31850\n");
  sys.write("/sys/class/hwmon/hwmon1/name", "coretemp\n");
  sys.write("/sys/class/hwmon/hwmon1/temp1_label", "Package id 0\n");
  sys.write("/sys/class/hwmon/hwmon1/temp1_input", "45000\n");
  sys.write("/sys/class/hwmon/hwmon1/temp1_max", "90000\n");
  sys.write("/sys/class/hwmon/hwmon1/temp2_label", "Core 0\n");
  sys.write("/sys/class/hwmon/hwmon1/temp2_input", "43000\n");
  sys.write("/sys/class/hwmon/hwmon1/temp3_label", "Core 1\n");
  sys.write("/sys/class/hwmon/hwmon1/temp3_input", "44000\n");
  sys.write("/sys/class/thermal/thermal_zone0/type", "acpitz\n");
  sys.write("/sys/class/thermal/thermal_zone0/temp", "27800\n");
  sys.write("/sys/class/thermal/thermal_zone1/type", "x86_pkg_temp\n");
  sys.write("/sys/class/thermal/thermal_zone1/temp", "46000\n");
  for (int c : {0, 1}) {
    sys.write(cpu(c) + "/cpufreq/scaling_cur_freq", c == 0 ? "3000000\n" : "3100000\n");
    sys.write(cpu(c) + "/thermal_throttle/core_throttle_count", "7\n");
  }
  sys.write("/sys/class/powercap/intel-rapl:0/name", "package-0\n");
  sys.write("/sys/class/powercap/intel-rapl:0/energy_uj", "1000000\n");
  sys.write("/sys/class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
  sys.write("/sys/class/powercap/intel-rapl:0:0/name", "core\n");
  sys.write("/sys/class/powercap/intel-rapl:0:0/energy_uj", "5\n");
  sys.write("/sys/class/powercap/intel-rapl:1/name", "psys\n");
  sys.write("/sys/class/powercap/intel-rapl:1/energy_uj", "5\n");
}

TEST(HostSensors, IntelServer) {
  xftest::FakeSys sys;
  intel_host(sys);
  const SysFs fs(sys.root());
  const HostSensors s = find_sensors(fs, {0, 1});
  ASSERT_EQ(s.temps.size(), 4u);  // not NVMe, not ACPI
  EXPECT_EQ(s.temps[0].label, "coretemp Package id 0");
  EXPECT_EQ(s.temps[0].kind, TempKind::package);
  EXPECT_EQ(s.temps[1].label, "coretemp Core 0");
  EXPECT_EQ(s.temps[1].kind, TempKind::core);
  EXPECT_EQ(s.temps[3].label, "thermal x86_pkg_temp");
  EXPECT_TRUE(s.freq);
  EXPECT_TRUE(s.throttle);
  ASSERT_EQ(s.rapl.size(), 1u);  // the package, not its core domain nor psys
  EXPECT_EQ(s.rapl[0].name, "package-0");
  EXPECT_EQ(s.rapl[0].max_uj, 262143328850.0);
  for (const std::string* why :
       {&s.no_package_temp, &s.no_core_temp, &s.no_freq, &s.no_throttle, &s.no_power})
    EXPECT_EQ(*why, "");

  // Samples: start, middle (hotter, faster, one throttle event on core 1), end; 100 J in 2 s.
  std::vector<SensorSample> samples;
  samples.push_back(sample_sensors(fs, s, 10.0));
  EXPECT_EQ(samples[0].temp_c, std::vector<double>({45, 43, 44, 46}));
  EXPECT_EQ(samples[0].mhz, std::vector<double>({3000, 3100}));
  sys.write("/sys/class/hwmon/hwmon1/temp1_input", "71000\n");
  sys.write("/sys/class/hwmon/hwmon1/temp3_input", "69000\n");
  sys.write(cpu(0) + "/cpufreq/scaling_cur_freq", "2000000\n");
  sys.write(cpu(1) + "/thermal_throttle/core_throttle_count", "8\n");
  sys.write("/sys/class/powercap/intel-rapl:0/energy_uj", "51000000\n");
  samples.push_back(sample_sensors(fs, s, 11.0));
  sys.write("/sys/class/powercap/intel-rapl:0/energy_uj", "101000000\n");
  samples.push_back(sample_sensors(fs, s, 12.0));
  const SensorSummary sum = summarize_sensors(s, samples);
  EXPECT_EQ(sum.package_temp_start, 46.0);  // the hottest package sensor at the start
  EXPECT_EQ(sum.package_temp_max, 71.0);
  EXPECT_EQ(sum.core_temp_max, 69.0);
  ASSERT_EQ(sum.core_mhz.size(), 2u);
  EXPECT_NEAR(sum.core_mhz[0], (3000 + 2000 + 2000) / 3.0, 1e-9);
  EXPECT_EQ(sum.core_mhz[1], 3100);
  EXPECT_NEAR(*sum.mhz_min, 7000 / 3.0, 1e-9);
  EXPECT_NEAR(*sum.mhz_median, (7000 / 3.0 + 3100) / 2, 1e-9);
  EXPECT_EQ(sum.throttle_events, 1.0);
  EXPECT_NEAR(*sum.power_w, 50.0, 1e-9);
  EXPECT_TRUE(sum.absent.empty());
}

TEST(HostSensors, RaplWrapsAndTwoPackages) {
  xftest::FakeSys sys;
  for (int p : {0, 1}) {
    const std::string d = "/sys/class/powercap/intel-rapl:" + std::to_string(p);
    sys.write(d + "/name", "package-" + std::to_string(p));
    sys.write(d + "/energy_uj", "999000000");
    sys.write(d + "/max_energy_range_uj", "1000000000");
  }
  const SysFs fs(sys.root());
  const HostSensors s = find_sensors(fs, {0});
  ASSERT_EQ(s.rapl.size(), 2u);
  std::vector<SensorSample> samples{sample_sensors(fs, s, 0)};
  sys.write("/sys/class/powercap/intel-rapl:0/energy_uj", "9000000");    // wrapped: +10 J
  sys.write("/sys/class/powercap/intel-rapl:1/energy_uj", "999000000");  // idle
  samples.push_back(sample_sensors(fs, s, 0.5));
  sys.write("/sys/class/powercap/intel-rapl:0/energy_uj", "19000000");    // +10 J
  sys.write("/sys/class/powercap/intel-rapl:1/energy_uj", "1019000000");  // +20 J
  samples.push_back(sample_sensors(fs, s, 1.0));
  EXPECT_NEAR(*summarize_sensors(s, samples).power_w, 40.0, 1e-9);
}

TEST(HostSensors, AmdServer) {
  xftest::FakeSys sys;
  sys.write("/sys/class/hwmon/hwmon2/name", "k10temp\n");
  sys.write("/sys/class/hwmon/hwmon2/temp1_label", "Tctl\n");
  sys.write("/sys/class/hwmon/hwmon2/temp1_input", "52125\n");
  sys.write("/sys/class/hwmon/hwmon2/temp3_label", "Tccd1\n");
  sys.write("/sys/class/hwmon/hwmon2/temp3_input", "48750\n");
  sys.write("/sys/class/hwmon/hwmon10/name", "amdgpu\n");  // after hwmon2, not the CPU's
  sys.write("/sys/class/hwmon/hwmon10/temp1_input", "60000\n");
  const SysFs fs(sys.root());
  const HostSensors s = find_sensors(fs, {0});
  ASSERT_EQ(s.temps.size(), 2u);
  EXPECT_EQ(s.temps[0].label, "k10temp Tctl");
  EXPECT_EQ(s.temps[0].kind, TempKind::package);
  EXPECT_EQ(s.temps[1].kind, TempKind::core);
  const SensorSummary sum = summarize_sensors(s, {sample_sensors(fs, s, 0)});
  EXPECT_EQ(sum.package_temp_max, 52.125);
  EXPECT_EQ(sum.core_temp_max, 48.75);
  EXPECT_FALSE(sum.power_w);  // one sample: no span
}

TEST(HostSensors, AbsentEachSaysWhy) {
  xftest::FakeSys sys;  // a VM: no hwmon, no thermal zones, no cpufreq, no powercap
  sys.write("/sys/devices/system/cpu/cpu0/topology/physical_package_id", "0");
  const SysFs fs(sys.root());
  const HostSensors s = find_sensors(fs, {0});
  EXPECT_TRUE(s.temps.empty());
  EXPECT_EQ(s.no_package_temp,
            "no package temperature: /sys/class/hwmon and /sys/class/thermal have none (a VM, or "
            "no coretemp/k10temp driver)");
  EXPECT_EQ(s.no_core_temp.rfind("no core temperature: /sys/class/hwmon and", 0), 0u);
  EXPECT_EQ(s.no_freq,
            "no core frequency: /sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq absent (no "
            "cpufreq driver; a VM?)");
  EXPECT_EQ(s.no_throttle,
            "no throttle counts: /sys/devices/system/cpu/cpu0/thermal_throttle/"
            "core_throttle_count absent");
  EXPECT_EQ(s.no_power, "no power: /sys/class/powercap has no intel-rapl package domain");
  const SensorSummary sum =
      summarize_sensors(s, {sample_sensors(fs, s, 0), sample_sensors(fs, s, 1)});
  EXPECT_FALSE(sum.package_temp_max || sum.package_temp_start || sum.core_temp_max || sum.mhz_min ||
               sum.mhz_median || sum.throttle_events || sum.power_w);
  EXPECT_EQ(sum.absent.size(), 5u);
  EXPECT_TRUE(std::isnan(sum.core_mhz.at(0)));

  // Sensors there, none of the CPU's.
  sys.write("/sys/class/hwmon/hwmon0/name", "nvme");
  sys.write("/sys/class/hwmon/hwmon0/temp1_input", "30000");
  EXPECT_EQ(find_sensors(fs, {0}).no_package_temp,
            "no package temperature: /sys/class/hwmon has no coretemp 'Package id', k10temp "
            "'Tctl' or cpu_thermal sensor, /sys/class/thermal no x86_pkg_temp zone");
}

TEST(HostSensors, UnreadableEachSaysWhy) {
  xftest::FakeSys sys;
  intel_host(sys);
  sys.remove("/sys/class/thermal/thermal_zone1");
  sys.remove("/sys/class/hwmon/hwmon1/temp1_input");
  sys.unreadable("/sys/class/hwmon/hwmon1/temp1_input");
  sys.write("/sys/class/hwmon/hwmon1/temp2_input", "N/A\n");
  sys.remove("/sys/class/powercap/intel-rapl:0/energy_uj");
  sys.unreadable("/sys/class/powercap/intel-rapl:0/energy_uj");
  for (int c : {0, 1}) {
    sys.remove(cpu(c) + "/cpufreq/scaling_cur_freq");
    sys.unreadable(cpu(c) + "/cpufreq/scaling_cur_freq");
  }
  const SysFs fs(sys.root());
  const HostSensors s = find_sensors(fs, {0, 1});
  ASSERT_EQ(s.temps.size(), 1u);  // Core 1 only
  EXPECT_EQ(s.temps[0].label, "coretemp Core 1");
  EXPECT_EQ(s.no_package_temp,
            "no package temperature: /sys/class/hwmon/hwmon1/temp1_input unreadable (Is a "
            "directory)");
  EXPECT_EQ(s.no_core_temp, "");
  EXPECT_EQ(s.no_freq,
            "no core frequency: /sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq unreadable "
            "(Is a directory)");
  EXPECT_EQ(s.no_power,
            "no power: /sys/class/powercap/intel-rapl:0/energy_uj unreadable (Is a directory)");
  // A sensor that stops answering during the burn: absent, and said.
  std::vector<SensorSample> samples{sample_sensors(fs, s, 0)};
  sys.remove("/sys/class/hwmon/hwmon1/temp3_input");
  samples.push_back(sample_sensors(fs, s, 1));
  EXPECT_EQ(summarize_sensors(s, samples).core_temp_max, 44.0);
  samples.erase(samples.begin());
  const SensorSummary lost = summarize_sensors(s, samples);
  EXPECT_FALSE(lost.core_temp_max);
  EXPECT_NE(std::find(lost.absent.begin(), lost.absent.end(), "no core temperature: read failed"),
            lost.absent.end());
}

TEST(HostSensors, ReadsThroughTheRoot) {
  xftest::FakeSys sys;
  sys.write("/sys/x", "hello \n");
  const SysFs fs(sys.root() + "/");
  EXPECT_EQ(fs.read("/sys/x").text, "hello");
  EXPECT_TRUE(fs.read("/sys/x").ok);
  EXPECT_EQ(fs.read("/sys/y").why, "absent");
  EXPECT_FALSE(fs.exists("/sys/y"));
  long long v = 0;
  EXPECT_TRUE(parse_number("-3", v));
  EXPECT_EQ(v, -3);
  EXPECT_FALSE(parse_number("3x", v));
  EXPECT_FALSE(parse_number("", v));
  // The real host, whatever it has: no sensor ever reads as a zero it did not measure.
  const HostSensors real = find_sensors(SysFs(), {0});
  const SensorSummary sum = summarize_sensors(real, {sample_sensors(SysFs(), real, 0)});
  EXPECT_EQ(sum.absent.size(), std::size_t(!sum.package_temp_max) + !sum.core_temp_max +
                                   !sum.mhz_min + !real.throttle + !real.no_power.empty());
}

}  // namespace
