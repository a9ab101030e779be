// The steady protocol across MPI ranks (SteadyState's AgreeMax hook): simulated ranks, one thread
// each with its own window times, joined by an in-process all-reduce (max), take the same
// decisions window by window; without the hook they do not (and collectives inside the timed work
// would deadlock).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "xfbench/steady_state.hpp"

namespace {

// An all-reduce (max, in place) over `ranks` threads: each caller blocks until every rank has
// contributed. A rank left waiting for 10 s (the others stopped calling: they disagreed) is a
// deadlock, recorded instead of hanging the test.
class FakeAllReduceMax {
 public:
  explicit FakeAllReduceMax(int ranks) : ranks_(ranks) {}

  void operator()(double* values, std::size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    const long round = round_;
    if (arrived_ == 0) {
      acc_.assign(values, values + n);
    } else {
      for (std::size_t i = 0; i < n && i < acc_.size(); ++i) acc_[i] = std::max(acc_[i], values[i]);
    }
    if (++arrived_ == ranks_) {
      result_ = acc_;
      arrived_ = 0;
      ++round_;
      cv_.notify_all();
    } else if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return round_ != round; })) {
      deadlocked_ = true;
      return;
    }
    std::copy(result_.begin(), result_.end(), values);
  }
  bool deadlocked() const { return deadlocked_; }

 private:
  const int ranks_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<double> acc_, result_;
  int arrived_ = 0;
  long round_ = 0;
  bool deadlocked_ = false;
};

// One simulated rank: window i lasts windows(i) seconds (batch launches); power-capped from
// window `capped_from` on (never when negative).
struct RankRun {
  std::function<double(int)> windows;
  int batch = 10;
  int capped_from = -1;
  // Outcome.
  int stopped_at = 0;  // windows added when the rule said stop
  int agreements = 0;  // calls of the hook
  xfbench::SteadyStateResult result;
};

void run_rank(RankRun& r, const xfbench::SteadyStateOptions& o, const xfbench::AgreeMax& agree) {
  xfbench::AgreeMax counted;
  if (agree) {
    counted = [&](double* v, std::size_t n) {
      ++r.agreements;
      agree(v, n);
    };
  }
  xfbench::SteadyState rule(o, counted);
  for (int i = 0; i < 100000; ++i) {
    if (r.capped_from >= 0 && i >= r.capped_from) rule.power_capped();
    const double w = r.windows(i);
    if (rule.add(w / r.batch, w)) {
      r.stopped_at = i + 1;
      break;
    }
  }
  r.result = rule.result();
}

// Runs every rank on its own thread; `agree` empty: each rank alone.
void run_ranks(std::vector<RankRun>& ranks, const xfbench::SteadyStateOptions& o,
               const xfbench::AgreeMax& agree) {
  std::vector<std::thread> threads;
  for (RankRun& r : ranks) threads.emplace_back([&r, &o, &agree] { run_rank(r, o, agree); });
  for (std::thread& t : threads) t.join();
}

// 10 ms windows; rank 1's carry 2% of deterministic jitter around a 3% slower mean.
double steady_window(int) { return 10e-3; }
double noisy_window(int i) { return 10.3e-3 * (1 + 0.02 * (((i * 7919) % 13) / 6.0 - 1)); }

void expect_same_outcome(const RankRun& a, const RankRun& b) {
  EXPECT_EQ(a.stopped_at, b.stopped_at);
  EXPECT_EQ(a.result.windows, b.result.windows);
  EXPECT_EQ(a.result.first_window, b.result.first_window);
  EXPECT_EQ(a.result.seconds, b.result.seconds);  // bit for bit: the same numbers went in
  EXPECT_EQ(a.result.cv, b.result.cv);
  EXPECT_EQ(a.result.ci, b.result.ci);
  EXPECT_EQ(a.result.drift, b.result.drift);
  EXPECT_EQ(a.result.warmup_s, b.result.warmup_s);
  EXPECT_EQ(a.result.converged, b.result.converged);
}

}  // namespace

// The control: alone, a steady rank and a noisy one stop at different windows (under MPI the
// first would leave the second waiting in its next window's collectives).
TEST(SteadyRanks, AloneTwoRanksStopAtDifferentWindows) {
  std::vector<RankRun> ranks{{steady_window}, {noisy_window}};
  run_ranks(ranks, xfbench::SteadyStateOptions{}, {});
  EXPECT_EQ(ranks[0].stopped_at, 70);  // 0.2 s warm-up, then 0.5 s measured
  EXPECT_GT(ranks[1].stopped_at, 0);
  EXPECT_NE(ranks[0].stopped_at, ranks[1].stopped_at);
  EXPECT_EQ(ranks[0].agreements, 0);
}

TEST(SteadyRanks, AgreeingRanksTakeTheSameDecisionsOnTheSlowestWindows) {
  std::vector<RankRun> ranks{{steady_window}, {noisy_window}};
  FakeAllReduceMax all_reduce(2);
  run_ranks(ranks, xfbench::SteadyStateOptions{}, std::ref(all_reduce));
  ASSERT_FALSE(all_reduce.deadlocked());
  expect_same_outcome(ranks[0], ranks[1]);
  // One all-reduce per window, and the numbers are the slower rank's.
  EXPECT_EQ(ranks[0].agreements, ranks[0].stopped_at);
  EXPECT_EQ(ranks[1].agreements, ranks[1].stopped_at);
  RankRun alone{noisy_window};
  run_rank(alone, xfbench::SteadyStateOptions{}, {});
  expect_same_outcome(alone, ranks[1]);  // noisy_window >= steady_window throughout
}

TEST(SteadyRanks, AgreementIsTheWindowByWindowMaximum) {
  // Three ranks, each the slowest in turn: the agreed windows are 12 ms throughout, so the
  // outcome is that of one rank at 12 ms (1.2 ms per launch).
  auto turn = [](int me) { return [me](int i) { return i % 3 == me ? 12e-3 : 9e-3; }; };
  std::vector<RankRun> ranks{{turn(0)}, {turn(1)}, {turn(2)}};
  FakeAllReduceMax all_reduce(3);
  run_ranks(ranks, xfbench::SteadyStateOptions{}, std::ref(all_reduce));
  ASSERT_FALSE(all_reduce.deadlocked());
  expect_same_outcome(ranks[0], ranks[1]);
  expect_same_outcome(ranks[0], ranks[2]);
  EXPECT_DOUBLE_EQ(ranks[0].result.seconds, 1.2e-3);
  EXPECT_LT(ranks[0].result.cv, 1e-12);
}

// A power cap one rank reports lengthens every rank's warm-up (1.5 s): steady dyadic windows
// stop at window 256, as a single capped rank does (test_steady_state's
// PowerCapLengthensTheWarmup).
TEST(SteadyRanks, OneRanksPowerCapLengthensEveryRanksWarmup) {
  auto dyadic = [](int) { return 0.0078125; };
  std::vector<RankRun> ranks{{dyadic, 1, -1}, {dyadic, 1, 4}};
  FakeAllReduceMax all_reduce(2);
  run_ranks(ranks, xfbench::SteadyStateOptions{}, std::ref(all_reduce));
  ASSERT_FALSE(all_reduce.deadlocked());
  expect_same_outcome(ranks[0], ranks[1]);
  EXPECT_EQ(ranks[0].stopped_at, 256);
  EXPECT_DOUBLE_EQ(ranks[0].result.warmup_s, 1.5);
}
