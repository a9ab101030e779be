// The steady-state stopping rule against the cases it shares with the PyTorch peer
// (tests/protocol/steady_state_cases.txt, made by tests/protocol/make_steady_cases.py), and the
// arithmetic of the telemetry that comes with it: energy, power and throttle summaries.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../../harness/src/host/reporters.hpp"
#include "test_paths.hpp"
#include "xfbench/steady_state.hpp"
#include "xfbench/telemetry.hpp"

namespace {

struct FixtureCase {
  std::string name;
  xfbench::SteadyStateOptions options;
  int batch = 1;
  int capped_from = -1;  // power_capped() before this window (0-based); -1: never
  std::vector<double> windows;
  int n_stop = 0, k = 0, converged = 0;
  double mean = 0, cv = 0, ci = 0, drift = 0;
};

std::vector<FixtureCase> read_fixture(const std::string& path) {
  std::ifstream in(path);
  std::vector<FixtureCase> cases;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string key;
    if (!(words >> key) || key[0] == '#') continue;
    if (key == "case") {
      cases.emplace_back();
      words >> cases.back().name;
      continue;
    }
    if (cases.empty()) continue;
    FixtureCase& c = cases.back();
    if (key == "params") {
      words >> c.options.min_time >> c.options.max_noise >> c.options.timeout >>
          c.options.min_warmup >> c.options.groups >> c.batch;
    } else if (key == "capped") {
      words >> c.capped_from >> c.options.capped_warmup;
    } else if (key == "windows") {
      for (double x; words >> x;) c.windows.push_back(x);
    } else if (key == "expect") {
      words >> c.n_stop >> c.k >> c.mean >> c.cv >> c.ci >> c.drift >> c.converged;
    }
  }
  return cases;
}

void expect_relative(double got, double want, const std::string& what) {
  if (want == 0) {
    EXPECT_EQ(got, 0) << what;
  } else {
    EXPECT_NEAR(got, want, 1e-9 * std::fabs(want)) << what;
  }
}

}  // namespace

TEST(SteadyState, MatchesTheCasesSharedWithThePeer) {
  const std::string path = xftest::from_test_dir("steady_state_cases.txt");
  std::vector<FixtureCase> cases = read_fixture(path);
  ASSERT_GE(cases.size(), 6u) << path;
  int converged = 0, timed_out = 0;
  for (const FixtureCase& c : cases) {
    SCOPED_TRACE(c.name);
    xfbench::SteadyState rule(c.options);
    int n = 0;
    bool stopped = false;
    for (double x : c.windows) {
      if (c.capped_from >= 0 && n >= c.capped_from) rule.power_capped();
      ++n;
      if ((stopped = rule.add(x, x * c.batch))) break;
    }
    ASSERT_TRUE(stopped) << "the rule never stopped";
    const xfbench::SteadyStateResult& r = rule.result();
    EXPECT_EQ(n, c.n_stop);
    EXPECT_EQ(r.windows, c.k);
    EXPECT_EQ(r.first_window, n - r.windows);
    expect_relative(r.seconds, c.mean, "mean");
    expect_relative(r.cv, c.cv, "cv");
    expect_relative(r.ci, c.ci, "ci");
    expect_relative(r.drift, c.drift, "drift");
    EXPECT_EQ(int(r.converged), c.converged);
    (r.converged ? converged : timed_out)++;
  }
  // The fixture covers both outcomes.
  EXPECT_GT(converged, 0);
  EXPECT_GT(timed_out, 0);
}

TEST(SteadyState, WaitsForTheWarmupAndTheMinimumTime) {
  xfbench::SteadyStateOptions o;  // 0.5 s measured, 0.2 s warm-up, 10 windows
  xfbench::SteadyState rule(o);
  int n = 0;
  while (!rule.add(1e-3, 10e-3)) ++n;  // a perfectly steady 10 ms window
  EXPECT_EQ(n + 1, 70);                // 20 windows of warm-up, then 50 measured
  EXPECT_EQ(rule.result().windows, 50);
  EXPECT_TRUE(rule.result().converged);
  EXPECT_DOUBLE_EQ(rule.result().seconds, 1e-3);
}

// Once the GPU reports its power cap the warm-up lasts capped_warmup (1.5 s) and S is every window
// after it (v4): steady dyadic windows (2^-7 s), capped from the 5th on, stop at window 256 with
// 64 (min_time) measured, as reports/steady_state.py's test_power_cap_lengthens_the_warmup.
TEST(SteadyState, PowerCapLengthensTheWarmup) {
  xfbench::SteadyStateOptions o;
  EXPECT_EQ(o.capped_warmup, 1.5);
  xfbench::SteadyState rule(o);
  int n = 0;
  for (;;) {
    if (n >= 4) rule.power_capped();
    ++n;
    if (rule.add(1e-3, 0.0078125)) break;
  }
  EXPECT_EQ(n, 256);
  EXPECT_EQ(rule.result().windows, 64);
  EXPECT_DOUBLE_EQ(rule.result().warmup_s, 1.5);
  EXPECT_TRUE(rule.result().converged);
}

TEST(SteadyState, ADriftingClockIsNotSteady) {
  xfbench::SteadyStateOptions o;
  o.timeout = 3;
  xfbench::SteadyState rule(o);
  double x = 1e-3;
  int n = 0;
  while (!rule.add(x, 10 * x)) {
    x *= 1.0004;  // 4% per second: each window within 0.04% of the last
    ++n;
  }
  EXPECT_FALSE(rule.result().converged);
  EXPECT_GT(rule.result().drift, o.max_noise);
  EXPECT_LT(rule.result().cv, 0.02);
}

namespace {
// A counter stepping by `watts` x 0.1 s every 100 ms, sampled every 10 ms from t = 0.
std::vector<xfbench::TelemetrySample> energy_samples(double watts, double seconds) {
  std::vector<xfbench::TelemetrySample> s;
  for (int i = 0; i * 0.01 <= seconds; ++i) {
    xfbench::TelemetrySample x;
    x.t = i * 0.01;
    x.energy_j = 1000 + watts * 0.1 * std::floor(x.t / 0.1 + 1e-9);
    s.push_back(x);
  }
  return s;
}
}  // namespace

TEST(Energy, PowerIsTheSlopeBetweenTheCountersSteps) {
  auto s = energy_samples(700, 3.0);
  EXPECT_NEAR(xfbench::energy_over(s, 1.0, 3.0), 700, 1e-6);
  // A span shorter than a second is widened to the last second: ten steps, not four.
  EXPECT_NEAR(xfbench::energy_over(s, 2.55, 3.0), 700, 1e-6);
  EXPECT_EQ(xfbench::energy_over(s, 5, 6), 0);  // no samples there
  for (auto& x : s) x.energy_j = -1;            // no counter
  EXPECT_EQ(xfbench::energy_over(s, 1.0, 3.0), 0);
}

// At the limit: the last 0.3 s of steps at or above 97% of it, before NVML reports the cap; an
// idle second before a case starts does not hide it, and what was drawn before the last 0.3 s does
// not count.
TEST(Energy, AtThePowerLimitFromTheLastStepsOnly) {
  // `first` for `seconds`, then `then` for 0.5 s (the counter carried on).
  auto joined = [](double first, double seconds, double then) {
    auto s = energy_samples(first, seconds);
    const double base = s.back().energy_j - 1000 + then * 0.1;
    for (auto x : energy_samples(then, 0.5)) {
      x.t += seconds + 0.01;
      x.energy_j += base;
      s.push_back(x);
    }
    return s;
  };
  const auto burst = joined(300, 1.0, 742);  // idle, then 742 W from t = 1
  EXPECT_TRUE(xfbench::at_power_limit(burst, 700));
  EXPECT_FALSE(xfbench::at_power_limit(burst, 800));                    // 742 W is below 97% of 800
  EXPECT_TRUE(xfbench::at_power_limit(energy_samples(680, 2.0), 700));  // 97.1%
  EXPECT_FALSE(xfbench::at_power_limit(energy_samples(670, 2.0), 700));  // 95.7%
  // A burst that ended: the last 0.3 s at 300 W.
  EXPECT_FALSE(xfbench::at_power_limit(joined(742, 1.0, 300), 700));
  EXPECT_FALSE(xfbench::at_power_limit(energy_samples(742, 0.15), 700));  // one step: no slope
  EXPECT_FALSE(xfbench::at_power_limit(energy_samples(742, 2.0), 0));     // limit unknown
  EXPECT_FALSE(xfbench::at_power_limit({}, 700));
}

TEST(Telemetry, SummarisesOnlyTheMeasuredSpanAndNamesThrottleReasons) {
  using xfbench::TelemetrySample;
  std::vector<TelemetrySample> s;
  // Before the span: idle at 300 W; in it: 1500 MHz, power-capped in 3 of 4 samples.
  s.push_back({0.5, 1980, 2619, 40, 300, 0x1});
  s.push_back({1.0, 1500, 2619, 60, 690, 0x4});
  s.push_back({1.1, 1500, 2619, 62, 700, 0x4});
  s.push_back({1.2, 1500, 2619, 61, 695, 0x4 | 0x40});
  s.push_back({1.3, 1500, 2619, 63, 650, 0x0});
  xfbench::TelemetryReading r = xfbench::summarize(s, 1.0, 1.3);
  EXPECT_EQ(r.samples, 4);
  EXPECT_DOUBLE_EQ(r.sm_mhz, 1500);
  EXPECT_DOUBLE_EQ(r.temp_c, 63);
  EXPECT_FALSE(r.power_from_energy);  // no energy counter: the mean power reading
  EXPECT_DOUBLE_EQ(r.power_w, (690 + 700 + 695 + 650) / 4.0);
  EXPECT_EQ(xfbench::throttle_text(r), "sw_power_cap 75%, hw_thermal_slowdown 25%");
  EXPECT_EQ(xfbench::summarize(s, 2, 3).samples, 0);

  auto e = energy_samples(650, 2.0);
  xfbench::TelemetryReading from_energy = xfbench::summarize(e, 1.0, 2.0);
  EXPECT_TRUE(from_energy.power_from_energy);
  EXPECT_NEAR(from_energy.power_w, 650, 1e-6);
}

TEST(Progress, EstimatesFromEachFamilysMean) {
  xfbench::host::Progress p({"Vector", "Vector", "Vector", "BertLayer", "BertLayer"});
  EXPECT_EQ(p.seconds_left(), 0);  // nothing to go on yet
  p.finished("Vector", 1);
  p.finished("Vector", 3);
  // One Vector case left at its family's 2 s, two BertLayer cases at the overall mean of 2 s.
  EXPECT_DOUBLE_EQ(p.seconds_left(), 2 + 2 * 2);
  p.finished("Vector", 2);
  p.finished("BertLayer", 10);
  EXPECT_DOUBLE_EQ(p.seconds_left(), 10);
  EXPECT_EQ(p.done(), 4u);
  EXPECT_EQ(p.total(), 5u);
  EXPECT_EQ(xfbench::host::clock_text(65), "1:05");
  EXPECT_EQ(xfbench::host::clock_text(3727), "1:02:07");
}
