#include "xfbench/steady_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace xfbench {
namespace {

double mean(const std::vector<double>& x, std::size_t begin, std::size_t end) {
  double s = 0;
  for (std::size_t i = begin; i < end; ++i) s += x[i];
  return end > begin ? s / double(end - begin) : 0;
}

double sample_stdev(const std::vector<double>& x, double mean) {
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  return x.size() > 1 ? std::sqrt(ss / double(x.size() - 1)) : 0;
}

}  // namespace

bool SteadyState::evaluate(std::size_t first, bool timed_out) {
  const std::size_t n = x_.size(), k = n - first;
  const double m = mean(x_, first, n);
  double span = 0;
  for (std::size_t i = first; i < n; ++i) span += d_[i];
  // Batch means: `groups` consecutive groups of the measured windows (fewer when a time-out left
  // fewer windows).
  const std::size_t g = std::min<std::size_t>(std::size_t(o_.groups), k);
  std::vector<double> group_means;
  for (std::size_t j = 0; j < g; ++j) {
    group_means.push_back(mean(x_, first + j * k / g, first + (j + 1) * k / g));
  }
  std::vector<double> measured(x_.begin() + std::ptrdiff_t(first), x_.end());
  const std::size_t h = k / 2;
  r_.seconds = m;
  r_.cv = m > 0 ? sample_stdev(measured, m) / m : 0;
  r_.ci = m > 0 && g > 1
              ? 2 * sample_stdev(group_means, mean(group_means, 0, g)) / std::sqrt(double(g)) / m
              : 0;
  r_.drift = h > 0 && m > 0 ? std::fabs(mean(x_, n - h, n) - mean(x_, first, first + h)) / m : 0;
  r_.windows = int(k);
  r_.first_window = int(first);
  r_.warmup_s = elapsed_ - span;
  r_.converged = !timed_out;
  if (timed_out) return true;
  // Steady windows need no more; noisy ones (a clock wandering under a power cap) are judged by
  // their batch means only once each group is much longer than the wander.
  const bool windows_steady = r_.cv <= o_.max_noise;
  const bool mean_known = span >= double(o_.groups) * kMinGroupSeconds && r_.ci <= o_.max_noise;
  return r_.warmup_s >= o_.min_warmup && r_.drift <= o_.max_noise && (windows_steady || mean_known);
}

// The shortest trailing run lasting the later half of the run (at least min_time) with at least
// `groups` windows: a clock of unknown settling time is measured once it has had as long.
std::pair<std::size_t, bool> SteadyState::later_half() const {
  const std::size_t n = x_.size();
  const double target = std::max(o_.min_time, elapsed_ / 2);
  double span = 0;
  for (std::size_t first = n; first > 0;) {
    span += d_[--first];
    if (span >= target && n - first >= std::size_t(o_.groups)) return {first, true};
  }
  return {n, false};
}

// Once capped (v4): every window after the warm-up (capped_warmup, the limiter's measured
// transient), once they last min_time with at least `groups` windows. A capped case needs a span
// of groups x kMinGroupSeconds = 3 s; as the later half of the run it took 6 s.
std::pair<std::size_t, bool> SteadyState::after_warmup() const {
  const std::size_t n = x_.size();
  std::size_t first = 0;
  double warmup = 0, span = 0;
  while (first < n && warmup < o_.min_warmup) warmup += d_[first++];
  for (std::size_t i = first; i < n; ++i) span += d_[i];
  const bool found =
      warmup >= o_.min_warmup && span >= o_.min_time && n - first >= std::size_t(o_.groups);
  return {first, found};
}

bool SteadyState::add(double seconds_per_launch, double window_seconds) {
  if (agree_) {
    double v[3] = {seconds_per_launch, window_seconds, capped_here_ ? 1.0 : 0.0};
    agree_(v, 3);
    seconds_per_launch = v[0], window_seconds = v[1], capped_here_ = v[2] > 0;
  }
  if (capped_here_) o_.min_warmup = std::max(o_.min_warmup, o_.capped_warmup);
  x_.push_back(seconds_per_launch);
  d_.push_back(window_seconds);
  elapsed_ += window_seconds;
  const std::size_t n = x_.size();
  const auto [first, found] = capped_here_ ? after_warmup() : later_half();
  const bool timed_out = elapsed_ >= o_.timeout;
  if (found && evaluate(first, false)) return true;
  if (!timed_out) return false;
  evaluate(found ? first : 0, true);
  return true;
}

}  // namespace xfbench
