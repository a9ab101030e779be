#include "xfbench/counters.hpp"

#include <algorithm>
#include <string>

#include "xfbench/device.hpp"
#include "xfbench/error.hpp"

namespace xfbench {
namespace {
thread_local std::string t_label;
}  // namespace

void add_label(benchmark::State& state, const std::string& note) {
  if (note.empty()) return;
  t_label += (t_label.empty() ? "" : "; ") + note;
  state.SetLabel(t_label);
}

namespace detail {
void reset_label() { t_label.clear(); }
}  // namespace detail

double tflops(double flops, double seconds) { return seconds > 0 ? flops / seconds / 1e12 : 0; }
double gbps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0; }
double percent_of(double value, double peak) { return peak > 0 ? 100.0 * value / peak : 0; }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void set_counters(benchmark::State& state, const Timing& timing, const Work& work) {
  const double s = timing.seconds;
  const PeakTable* peaks = nullptr;
  try {
    peaks = &device_peaks();
  } catch (const Error&) {
    // CPU cases have no device: no pct_peak.
  }
  if (work.flops > 0) {
    double tf = tflops(work.flops, s);
    state.counters["TFLOPS"] = tf;
    if (peaks) state.counters["pct_peak"] = percent_of(tf, peaks->tflops(work.dtype));
  }
  if (work.bytes > 0) {
    double bw = gbps(work.bytes, s);
    state.counters["GB/s"] = bw;
    if (peaks && work.flops <= 0) state.counters["pct_peak"] = percent_of(bw, peaks->mem_gbs);
  }
  // Work per watt over the same span (the timer's energy counter or NVML's power reading).
  if (timing.power_w > 0 && s > 0) {
    if (work.flops > 0) {
      state.counters["TFLOPS/W"] = tflops(work.flops, s) / timing.power_w;
    } else if (work.bytes > 0) {
      state.counters["GB/s/W"] = gbps(work.bytes, s) / timing.power_w;
    }
  }
  if (work.samples > 0 && s > 0) state.counters["samples/s"] = work.samples / s;
  if (work.tokens > 0 && s > 0) state.counters["tokens/s"] = work.tokens / s;
}

}  // namespace xfbench
