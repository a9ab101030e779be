#include "cpu_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "burn_text.hpp"
#include "cpu_topology.hpp"
#include "xfbench/counters.hpp"  // median

namespace xfbench::burn {
namespace {

std::uint64_t mismatches(const CoreResult& c) {
  std::uint64_t n = 0;
  for (const CpuWindow& w : c.windows) n += w.mismatches;
  return n;
}

std::string errors_text(std::uint64_t n) {
  return std::to_string(n) + (n == 1 ? " error" : " errors");
}

// "cpu5 2 in window 4, 1 in window 9" (the first 8 windows with errors, then "...").
std::string core_errors_text(const CoreResult& c) {
  std::string out = "cpu" + std::to_string(c.cpu);
  std::size_t listed = 0;
  for (std::size_t i = 0; i < c.windows.size(); ++i) {
    if (c.windows[i].mismatches == 0) continue;
    if (listed++ == 8) return out + ", ...";
    out += (listed == 1 ? " " : ", ") + std::to_string(c.windows[i].mismatches) + " in window " +
           std::to_string(i);
  }
  if (c.ref_errors > 0)
    out += (listed ? ", " : " ") + std::to_string(c.ref_errors) + " against the reference";
  return out;
}

std::vector<const CoreResult*> cores_of(const CpuBurnReport& r, int socket) {
  std::vector<const CoreResult*> out;
  for (const CoreResult& c : r.cores)
    if (c.socket == socket) out.push_back(&c);
  return out;
}

std::string socket_tag(int socket) { return "socket" + std::to_string(socket); }

// The sensor readings worth a line: what exists, then what does not and why.
std::string sensors_text(const SensorSummary& s) {
  std::string out;
  if (s.package_temp_max)
    out += format(", package %.0f C (%.0f C at the start)", *s.package_temp_max,
                  s.package_temp_start.value_or(*s.package_temp_max));
  if (s.core_temp_max) out += format(", cores up to %.0f C", *s.core_temp_max);
  if (s.mhz_min) out += format(", cpufreq %.0f MHz (min %.0f)", *s.mhz_median, *s.mhz_min);
  if (s.throttle_events) out += format(", %.0f throttle events", *s.throttle_events);
  if (s.power_w) out += format(", %.0f W", *s.power_w);
  for (const std::string& why : s.absent) out += "; " + why;
  return out;
}

}  // namespace

CoreRate core_rate(const CoreResult& c) {
  CoreRate rate;
  double chunks = 0, seconds = 0, cpu_seconds = 0;
  std::vector<double> clocks;
  for (const CpuWindow& w : c.windows) {
    chunks += double(w.chunks);
    seconds += w.seconds;
    cpu_seconds += w.cpu_seconds;
    if (w.clock_mhz > 0) clocks.push_back(w.clock_mhz);
  }
  rate.gflops = seconds > 0 ? chunks * c.flops_per_chunk / seconds / 1e9 : 0;
  rate.busy = seconds > 0 ? std::min(1.0, cpu_seconds / seconds) : 0;
  rate.clock_mhz = median(clocks);
  if (rate.clock_mhz > 0) rate.flop_per_cycle = rate.gflops * 1e3 / rate.clock_mhz;
  return rate;
}

std::uint64_t core_errors(const CoreResult& c) { return mismatches(c) + c.ref_errors; }

bool core_burned(const CoreResult& c) { return c.not_run.empty(); }

bool core_pinned(const CoreResult& c) {
  return std::all_of(c.ran_on.begin(), c.ran_on.end(), [&](int on) { return on == c.cpu; });
}

std::vector<int> sockets(const CpuBurnReport& r) {
  std::vector<int> out;
  for (const CoreResult& c : r.cores) out.push_back(c.socket);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool socket_faulty(const CpuBurnReport& r, int socket) {
  for (const CoreResult* c : cores_of(r, socket))
    if (core_burned(*c) && core_errors(*c) > 0) return true;
  return false;
}

bool any_core_not_run(const CpuBurnReport& r) {
  return std::any_of(r.cores.begin(), r.cores.end(),
                     [](const CoreResult& c) { return !core_burned(c); });
}

std::string socket_verdict(const CpuBurnReport& r, int socket) {
  std::uint64_t errors = 0;
  std::string which, not_run;
  bool burned = false;
  for (const CoreResult* c : cores_of(r, socket)) {
    if (!core_burned(*c)) {
      not_run += (not_run.empty() ? "" : "; ") + ("cpu" + std::to_string(c->cpu)) +
                 " NOT RUN: " + c->not_run;
      continue;
    }
    burned = true;
    if (core_errors(*c) == 0) continue;
    errors += core_errors(*c);
    which += (which.empty() ? "" : "; ") + core_errors_text(*c);
  }
  if (!burned) return "NOT RUN (" + not_run + ")";
  std::string out = errors > 0 ? "FAULTY (" + errors_text(errors) + ": " + which + ")" : "OK";
  return not_run.empty() ? out : out + " (" + not_run + ")";
}

std::string cpu_progress_line(const std::string& name, const std::string& isa, double elapsed,
                              double seconds, const CpuLive& v) {
  std::string out =
      name + format("  %3.0f%% ", 100 * std::min(1.0, elapsed / seconds)) + clock_text(elapsed) +
      "/" + clock_text(seconds) + " | " + std::to_string(v.cores_burning) +
      (v.cores_burning == 1 ? " core " : " cores ") + isa +
      format(" %.1f GFLOPS (core min %.1f), ", v.gflops, v.gflops_min) + errors_text(v.errors);
  if (v.package_temp_c) out += format(", package %.0f C", *v.package_temp_c);
  if (v.mhz) out += format(", %.0f MHz", *v.mhz);
  if (v.power_w) out += format(", %.0f W", *v.power_w);
  return out;
}

std::vector<std::string> cpu_summary_lines(const std::string& name, const CpuBurnReport& r) {
  std::vector<std::string> lines;
  for (int s : sockets(r)) {
    std::vector<int> cpus;
    std::vector<double> rates, clocks;
    double total = 0, fpc = 0, busy = 1;
    for (const CoreResult* c : cores_of(r, s)) {
      cpus.push_back(c->cpu);
      if (!core_burned(*c)) continue;
      const CoreRate rate = core_rate(*c);
      rates.push_back(rate.gflops);
      busy = std::min(busy, rate.busy);
      total += rate.gflops;
      if (rate.clock_mhz > 0) clocks.push_back(rate.clock_mhz), fpc += rate.flop_per_cycle;
    }
    std::string line = name + " " + socket_tag(s) + " (cpu " + cpulist_text(cpus) + ", " +
                       isa_name(r.isa) + "): " + socket_verdict(r, s);
    if (!rates.empty()) {
      line += format(" | %.1f GFLOPS (per core min %.1f, median %.1f), cores busy >= %.1f%%", total,
                     *std::min_element(rates.begin(), rates.end()), median(rates), 100 * busy);
    }
    if (!clocks.empty()) {
      const double per_cycle = fpc / double(clocks.size());
      line += format(", clock %.0f MHz measured, %.1f FLOP/cycle/core = %.1f%% of %.0f assumed",
                     median(clocks), per_cycle, 100 * per_cycle / r.peak_flop_per_cycle,
                     r.peak_flop_per_cycle);
    }
    lines.push_back(line + sensors_text(r.sensors));
  }
  return lines;
}

std::vector<std::pair<std::string, double>> cpu_counters(const CpuBurnReport& r,
                                                         const std::string& p) {
  std::vector<std::pair<std::string, double>> c;
  std::vector<double> rates, clocks;
  double total = 0, peak = 0, errors = 0, ref_errors = 0, not_run = 0, faulty = 0, busy = 1;
  for (const CoreResult& core : r.cores) {
    if (!core_burned(core)) {
      ++not_run;
      continue;
    }
    const CoreRate rate = core_rate(core);
    rates.push_back(rate.gflops);
    busy = std::min(busy, rate.busy);
    total += rate.gflops;
    errors += double(core_errors(core));
    ref_errors += double(core.ref_errors);
    if (rate.clock_mhz > 0) {
      clocks.push_back(rate.clock_mhz);
      peak += r.peak_flop_per_cycle * rate.clock_mhz / 1e3;
    }
  }
  for (int s : sockets(r)) faulty += socket_faulty(r, s);
  c.emplace_back(p + "GFLOPS", total);
  if (!rates.empty()) {
    c.emplace_back(p + "GFLOPS_core_min", *std::min_element(rates.begin(), rates.end()));
    c.emplace_back(p + "GFLOPS_core_median", median(rates));
    c.emplace_back(p + "busy_pct_min", 100 * busy);
  }
  if (clocks.size() == rates.size() && peak > 0) {  // every burned core's clock measured
    c.emplace_back(p + "pct_peak", 100 * total / peak);
    c.emplace_back(p + "clock_MHz_min", *std::min_element(clocks.begin(), clocks.end()));
    c.emplace_back(p + "clock_MHz_median", median(clocks));
  }
  c.emplace_back(p + "errors", errors);
  c.emplace_back(p + "ref_errors", ref_errors);
  c.emplace_back(p + "cores", double(r.cores.size()) - not_run);
  c.emplace_back(p + "cores_not_run", not_run);
  c.emplace_back(p + "sockets", double(sockets(r).size()));
  c.emplace_back(p + "faulty_sockets", faulty);
  const SensorSummary& s = r.sensors;
  if (s.package_temp_max) c.emplace_back(p + "package_temp_C", *s.package_temp_max);
  if (s.package_temp_start) c.emplace_back(p + "package_temp_C_start", *s.package_temp_start);
  if (s.core_temp_max) c.emplace_back(p + "core_temp_C", *s.core_temp_max);
  if (s.mhz_min) c.emplace_back(p + "cpufreq_MHz_min", *s.mhz_min);
  if (s.mhz_median) c.emplace_back(p + "cpufreq_MHz_median", *s.mhz_median);
  if (s.throttle_events) c.emplace_back(p + "throttle_events", *s.throttle_events);
  if (s.power_w) {
    c.emplace_back(p + "power_W", *s.power_w);
    if (*s.power_w > 0) c.emplace_back(p + "GFLOPS/W", total / *s.power_w);
  }
  for (int socket : sockets(r)) {
    double gflops = 0, socket_errors = 0;
    for (const CoreResult* core : cores_of(r, socket)) {
      if (!core_burned(*core)) continue;
      gflops += core_rate(*core).gflops;
      socket_errors += double(core_errors(*core));
    }
    const std::string t = p + socket_tag(socket) + "_";
    c.emplace_back(t + "GFLOPS", gflops);
    c.emplace_back(t + "errors", socket_errors);
    c.emplace_back(t + "faulty", socket_faulty(r, socket) ? 1 : 0);
  }
  return c;
}

std::string cpu_label(const CpuBurnReport& r) {
  std::vector<int> cpus;
  for (const CoreResult& c : r.cores) cpus.push_back(c.cpu);
  std::string out = isa_name(r.isa) + ", cpu " + cpulist_text(cpus) +
                    format(", peak %.0f FLOP/cycle/core assumed", r.peak_flop_per_cycle);
  for (int s : sockets(r)) out += "; " + socket_tag(s) + " " + socket_verdict(r, s);
  if (!r.sockets_known) out += "; no sockets: physical_package_id absent, every core in socket0";
  for (const CoreResult& c : r.cores) {
    if (core_burned(c) && !core_pinned(c))
      out += "; cpu" + std::to_string(c.cpu) + " left its core";
  }
  for (const std::string& why : r.sensors.absent) out += "; " + why;
  return out;
}

}  // namespace xfbench::burn
