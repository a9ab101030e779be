// The steady-state stopping rule (README "Timing"; reports/peer_torch.py implements the same rule
// for the PyTorch peer, and both are tested on tests/protocol/steady_state_cases.txt).
//
// A case runs in windows of `batch` back-to-back launches. After each window the rule measures the
// later half of the run so far (at least `min_time`, at least `groups` windows) — once the GPU has
// reported its power cap, every window after a warm-up of `capped_warmup` (protocol v4) — and it
// stops once the windows before it — the warm-up — lasted `min_warmup`, the means of the span's two
// halves differ
// by at most `max_noise` (drift: a clock still settling), and either the windows themselves are
// steady (their relative standard deviation, cv, within `max_noise`) or the mean is known within
// `max_noise`: the ~95% interval from `groups` batch means (ci), trusted only once each group lasts
// kMinGroupSeconds, much longer than the ~100 ms wander of a clock under a power cap. A case that
// is not steady by `timeout` stops there and is reported as noisy. Once the GPU reports its power
// cap or draws at its limit (telemetry.hpp's at_power_limit; the caller says so), the warm-up
// lasts at least `capped_warmup`: after a lighter phase the
// limiter lets a case run above the limit for about a second (H100: 749 W and +2.5% over a span
// starting 0.2 s into a case, 689 W once settled). Pure arithmetic: no GPU.
//
// Under MPI every rank times the same case, and collectives inside the timed work deadlock
// unless every rank takes the same decisions (another window, stop). An AgreeMax hook (MPI's
// all-reduce, from libxfbench_nccl: the SDK does not link MPI) replaces each window's numbers and
// the power-cap report by their maximum over the ranks, so every rank runs the rule on the same
// numbers: those of the slowest rank, whose time is the collective's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace xfbench {

constexpr double kMinGroupSeconds = 0.3;

struct SteadyStateOptions {
  double min_time = 0.5;       // seconds of measured windows (at least; half the run once longer)
  double max_noise = 5e-3;     // fraction, for both ci and drift
  double timeout = 10.0;       // seconds of windows in all (warm-up included)
  double min_warmup = 0.2;     // seconds of windows before the measured ones
  double capped_warmup = 1.5;  // the same once the GPU runs at its power cap
  int groups = 10;             // batch means for ci; also the fewest measured windows
};

// Replaces each of `values[0..count)` by its maximum over every process timing the case.
using AgreeMax = std::function<void(double* values, std::size_t count)>;

struct SteadyStateResult {
  double seconds = 0;      // mean seconds per launch over the measured windows
  double cv = 0;           // relative standard deviation of their per-launch times
  double ci = 0;           // relative half-width of a ~95% interval of the mean (batch means)
  double drift = 0;        // |mean(second half) - mean(first half)| / mean
  int windows = 0;         // measured windows (k)
  int first_window = 0;    // index of the first measured window
  double warmup_s = 0;     // seconds of windows before them
  bool converged = false;  // false: stopped by the time-out
};

class SteadyState {
 public:
  // `agree` empty: this process alone.
  explicit SteadyState(const SteadyStateOptions& options, AgreeMax agree = {})
      : o_(options), agree_(std::move(agree)) {}

  // One completed window: per-launch seconds and the window's duration (agreed first: one
  // all-reduce per window). Returns true when the rule says stop (converged or timed out);
  // result() then holds the outcome.
  bool add(double seconds_per_launch, double window_seconds);
  // The GPU has reported its power cap: from the next window on (on every rank, once agreed),
  // the warm-up lasts at least capped_warmup.
  void power_capped() { capped_here_ = true; }
  const SteadyStateResult& result() const { return r_; }
  std::size_t size() const { return x_.size(); }

 private:
  bool evaluate(std::size_t first, bool timed_out);
  // The first measured window and whether the span exists yet: before the power cap the later
  // half of the run, once capped every window after the capped warm-up (protocol v4).
  std::pair<std::size_t, bool> later_half() const;
  std::pair<std::size_t, bool> after_warmup() const;
  SteadyStateOptions o_;
  AgreeMax agree_;
  bool capped_here_ = false;
  std::vector<double> x_, d_;
  double elapsed_ = 0;
  SteadyStateResult r_;
};

}  // namespace xfbench
