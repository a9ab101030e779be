#include "burn_report.hpp"

#include <algorithm>
#include <cstdio>

#include "burn_text.hpp"

namespace xfbench::burn {
namespace {

double window_tflops(const SlotResult& s, const BurnWindow& w) {
  return w.seconds > 0 ? double(w.products) * s.flops_per_product / w.seconds / 1e12 : 0;
}

std::uint64_t new_uncorrected(const SlotResult& s) {
  if (!s.ecc_before.known || !s.ecc_after.known) return 0;
  return s.ecc_after.uncorrected - std::min(s.ecc_after.uncorrected, s.ecc_before.uncorrected);
}

std::uint64_t new_corrected(const SlotResult& s) {
  if (!s.ecc_before.known || !s.ecc_after.known) return 0;
  return s.ecc_after.corrected - std::min(s.ecc_after.corrected, s.ecc_before.corrected);
}

std::string gpu_tag(const SlotResult& s) { return "gpu" + std::to_string(s.device); }

std::string xid_text(const SlotResult& s) {
  std::string out;
  for (std::uint64_t x : s.xids) out += (out.empty() ? "Xid " : ", ") + std::to_string(x);
  return out;
}

}  // namespace

TflopsSummary tflops_summary(const SlotResult& s) {
  TflopsSummary t;
  if (s.windows.empty()) return t;
  std::vector<double> each;
  double products = 0, seconds = 0;
  for (const BurnWindow& w : s.windows) {
    each.push_back(window_tflops(s, w));
    products += double(w.products);
    seconds += w.seconds;
  }
  t.last = each.back();
  t.overall = seconds > 0 ? products * s.flops_per_product / seconds / 1e12 : 0;
  std::sort(each.begin(), each.end());
  t.min = each.front();
  t.median = each.size() % 2 ? each[each.size() / 2]
                             : 0.5 * (each[each.size() / 2 - 1] + each[each.size() / 2]);
  return t;
}

std::uint64_t mismatches(const SlotResult& s) {
  std::uint64_t n = 0;
  for (const BurnWindow& w : s.windows) n += w.mismatches;
  return n;
}

std::uint64_t errors(const SlotResult& s) { return mismatches(s) + s.reference_errors; }

std::uint64_t error_windows(const SlotResult& s) {
  return std::uint64_t(std::count_if(s.windows.begin(), s.windows.end(),
                                     [](const BurnWindow& w) { return w.mismatches > 0; }));
}

bool burned(const SlotResult& s) { return s.not_run.empty(); }

bool faulty(const SlotResult& s) {
  return burned(s) &&
         (errors(s) > 0 || !s.failure.empty() || new_uncorrected(s) > 0 || !s.xids.empty());
}

std::string verdict(const SlotResult& s) {
  if (!burned(s)) return (s.unsupported ? "SKIPPED (" : "NOT RUN (") + s.not_run + ")";
  if (!faulty(s)) return "OK";
  const std::uint64_t n = errors(s);
  std::string why = std::to_string(n) + (n == 1 ? " error" : " errors");
  if (s.reference_errors > 0)
    why += ", " + std::to_string(s.reference_errors) + " of them against the float64 reference";
  if (std::uint64_t ecc = new_uncorrected(s))
    why += "; " + std::to_string(ecc) + " new uncorrectable ECC error" + (ecc == 1 ? "" : "s");
  if (!s.xids.empty()) why += "; " + xid_text(s);
  if (!s.failure.empty()) why += "; " + s.failure;
  return "FAULTY (" + why + ")";
}

std::string error_windows_text(const SlotResult& s, std::size_t most) {
  std::string out;
  std::size_t listed = 0;
  for (std::size_t i = 0; i < s.windows.size(); ++i) {
    if (s.windows[i].mismatches == 0) continue;
    if (listed++ == most) return out + ", ...";
    out += (out.empty() ? "" : ", ") + std::to_string(s.windows[i].mismatches) + " in window " +
           std::to_string(i);
  }
  return out;
}

std::string progress_line(const std::string& name, double elapsed, double seconds,
                          const std::vector<LiveSlot>& slots) {
  std::string out = name + format("  %3.0f%% ", 100 * std::min(1.0, elapsed / seconds)) +
                    clock_text(elapsed) + "/" + clock_text(seconds);
  for (const LiveSlot& g : slots) {
    out += " | gpu" + std::to_string(g.device);
    if (!g.burning) {
      out += " idle";
      continue;
    }
    // No TFLOPS until the first window ends (its length comes from the first product's time).
    out += (g.tflops > 0 ? format(" %.1f TFLOPS, ", g.tflops) : " first window, ") +
           std::to_string(g.errors) + (g.errors == 1 ? " error" : " errors") +
           format(", %.0f C, %.0f MHz, %.0f W", g.temp_c, g.sm_mhz, g.power_w);
  }
  return out;
}

std::string summary_line(const std::string& name, const SlotResult& s) {
  std::string out = name + " " + gpu_tag(s) + " " + s.name + " " + s.uuid + ": " + verdict(s);
  if (!burned(s)) return out;
  const TflopsSummary t = tflops_summary(s);
  double seconds = 0, products = 0;
  for (const BurnWindow& w : s.windows) seconds += w.seconds, products += double(w.products);
  out += format(" | %.1f TFLOPS (min %.1f, median %.1f, last %.1f)", t.overall, t.min, t.median,
                t.last);
  out += format(", %.0f products in %.1f s, %.0f result buffers", products, seconds,
                double(s.buffers));
  out += ", " + std::to_string(mismatches(s)) + " mismatches";
  if (!s.windows.empty() && mismatches(s) > 0) out += " (" + error_windows_text(s) + ")";
  out +=
      format(", reference %.0f/%.0f off", double(s.reference_errors), double(s.reference_samples));
  const TelemetryReading& r = s.telemetry;
  if (r.samples > 0) {
    out += format(", max %.0f C, %.0f MHz, memory %.0f MHz, %.0f W", r.temp_c, r.sm_mhz, r.mem_mhz,
                  r.power_w);
    if (r.power_w > 0) out += format(", %.3f TFLOPS/W", t.overall / r.power_w);
    if (std::string th = throttle_text(r); !th.empty()) out += ", throttle: " + th;
  } else {
    out += ", no telemetry";
  }
  if (s.ecc_before.known && s.ecc_after.known) {
    out += format(", ECC +%.0f corrected +%.0f uncorrectable", double(new_corrected(s)),
                  double(new_uncorrected(s)));
  }
  if (!s.xids.empty()) return out + ", " + xid_text(s);
  return out + ", no Xid" + (s.xid_status == "ok" ? "" : " (" + s.xid_status + ")");
}

std::vector<std::pair<std::string, double>> burn_counters(const BurnReport& r) {
  std::vector<std::pair<std::string, double>> c;
  double tflops = 0, power = 0, temp = 0, sm = 0, mem = 0, total_errors = 0;
  int ran = 0, faulty_gpus = 0, not_run = 0, sampled = 0;
  for (const SlotResult& s : r.slots) {
    const std::string p = gpu_tag(s) + "_";
    if (!burned(s)) {
      not_run += !s.unsupported;
      c.emplace_back(p + "not_run", 1);
      continue;
    }
    const TflopsSummary t = tflops_summary(s);
    const TelemetryReading& tel = s.telemetry;
    ++ran;
    faulty_gpus += faulty(s);
    tflops += t.overall;
    power += tel.power_w;
    temp = std::max(temp, tel.temp_c);
    sm += tel.sm_mhz;
    sampled += tel.samples > 0;
    mem += s.mem_bytes / 1e9;
    total_errors += double(errors(s));
    double products = 0;
    for (const BurnWindow& w : s.windows) products += double(w.products);
    c.emplace_back(p + "TFLOPS", t.overall);
    c.emplace_back(p + "TFLOPS_min", t.min);
    c.emplace_back(p + "TFLOPS_median", t.median);
    c.emplace_back(p + "TFLOPS_last", t.last);
    if (s.peak_tflops > 0) c.emplace_back(p + "pct_peak", 100 * t.overall / s.peak_tflops);
    c.emplace_back(p + "errors", double(errors(s)));
    c.emplace_back(p + "ref_errors", double(s.reference_errors));
    c.emplace_back(p + "ref_worst", s.reference_worst);
    c.emplace_back(p + "error_windows", double(error_windows(s)));
    c.emplace_back(p + "windows", double(s.windows.size()));
    c.emplace_back(p + "products", products);
    c.emplace_back(p + "buffers", double(s.buffers));
    c.emplace_back(p + "mem_GB", s.mem_bytes / 1e9);
    c.emplace_back(p + "faulty", faulty(s) ? 1 : 0);
    if (tel.samples > 0) {
      c.emplace_back(p + "sm_MHz", tel.sm_mhz);
      c.emplace_back(p + "mem_MHz", tel.mem_mhz);
      c.emplace_back(p + "temp_C", tel.temp_c);
      c.emplace_back(p + "power_W", tel.power_w);
      c.emplace_back(p + "energy_J", tel.power_w * (s.t1 - s.t0));
      if (tel.power_w > 0) c.emplace_back(p + "TFLOPS/W", t.overall / tel.power_w);
      for (const auto& [reason, share] : tel.throttle)
        c.emplace_back(p + "throttle_" + reason + "_pct", 100 * share);
    }
    if (s.ecc_before.known && s.ecc_after.known) {
      c.emplace_back(p + "ecc_corrected", double(new_corrected(s)));
      c.emplace_back(p + "ecc_uncorrected", double(new_uncorrected(s)));
    }
    c.emplace_back(p + "xids", double(s.xids.size()));
  }
  c.emplace_back("gpus", ran);
  c.emplace_back("gpus_not_run", not_run);
  c.emplace_back("faulty_gpus", faulty_gpus);
  c.emplace_back("errors", total_errors);
  c.emplace_back("TFLOPS", tflops);
  if (ran > 0) c.emplace_back("mem_GB", mem);
  if (sampled > 0) {
    c.emplace_back("temp_C", temp);
    c.emplace_back("sm_MHz", sm / sampled);
  }
  if (power > 0) {
    c.emplace_back("power_W", power);
    c.emplace_back("TFLOPS/W", tflops / power);
  }
  return c;
}

std::string burn_label(const BurnReport& r) {
  std::string out, algo;
  for (const SlotResult& s : r.slots) {
    out += (out.empty() ? "" : "; ") + gpu_tag(s) + " " + verdict(s);
    if (burned(s) && mismatches(s) > 0) out += " [" + error_windows_text(s) + "]";
    if (burned(s) && algo.empty()) algo = s.algo;
  }
  if (!algo.empty()) out += "; " + algo;
  if (r.inputs.lo != -1 || r.inputs.hi != 1) {  // the default, [-1, 1), goes unsaid
    char range[64];
    std::snprintf(range, sizeof range, "; inputs in [%g, %g)", r.inputs.lo, r.inputs.hi);
    out += range;
  }
  return out;
}

}  // namespace xfbench::burn
