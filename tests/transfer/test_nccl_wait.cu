// Waiting on NCCL work and on other ranks without hanging (kernels/comm/nccl_comm.hpp): the polling
// loop's time-out arithmetic on a fake clock, the one-line messages, the flag's range and the
// single-process error paths (CPU); a wait on a stream that never finishes timing out and aborting
// the communicator, and the timer's hooks for cases across ranks (GPU, skipped without one).
#include <benchmark/benchmark.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/comm/nccl_comm.hpp"
#include "kernels/comm/nccl_timer.hpp"
#include "test_gpu.hpp"
#include "xfbench/memory.hpp"
#include "xfbench/timer.hpp"

namespace {

using xfbench::kernels::WaitStatus;

// A clock that advances one step (1/1024 s: exact in binary) per pause.
struct FakeClock {
  double t = 0;
  int pauses = 0;
  xfbench::kernels::PollClock clock() {
    return {[this] { return t; },
            [this] {
              t += 1.0 / 1024;
              ++pauses;
            }};
  }
};

// Polls answering `answer` from the `at`-th call on (1-based), pending before.
struct Poller {
  int at = 0;
  WaitStatus answer = WaitStatus::done;
  int calls = 0;
  WaitStatus operator()() { return ++calls >= at && at > 0 ? answer : WaitStatus::pending; }
};

// Restores the default time-out after a test changed it.
struct TimeoutGuard {
  ~TimeoutGuard() {
    xfbench::kernels::set_nccl_timeout(xfbench::kernels::kDefaultNcclTimeoutSeconds);
  }
};

}  // namespace

TEST(NcclWait, PollingStopsAtTheTimeout) {
  FakeClock c;
  Poller never;  // a peer that never arrives
  EXPECT_EQ(xfbench::kernels::poll_until(std::ref(never), 0.25, c.clock()), WaitStatus::pending);
  EXPECT_EQ(c.t, 0.25);         // exactly the time-out: 256 pauses of 1/1024 s
  EXPECT_EQ(never.calls, 257);  // a poll before each pause and one at the end
  EXPECT_EQ(c.pauses, 256);
}

TEST(NcclWait, PollingEndsAtTheFirstAnswer) {
  FakeClock c;
  Poller done{5, WaitStatus::done};
  EXPECT_EQ(xfbench::kernels::poll_until(std::ref(done), 300, c.clock()), WaitStatus::done);
  EXPECT_EQ(done.calls, 5);
  EXPECT_EQ(c.pauses, 4);

  FakeClock f;
  Poller failed{3, WaitStatus::failed};  // NCCL's asynchronous error
  EXPECT_EQ(xfbench::kernels::poll_until(std::ref(failed), 300, f.clock()), WaitStatus::failed);
  EXPECT_EQ(failed.calls, 3);

  FakeClock late;  // done on the very poll at the time-out: done, not timed out
  Poller last{257, WaitStatus::done};
  EXPECT_EQ(xfbench::kernels::poll_until(std::ref(last), 0.25, late.clock()), WaitStatus::done);
}

TEST(NcclWait, MessagesNameTheRankTheGpuAndTheFlag) {
  using xfbench::kernels::timeout_reason;
  using xfbench::kernels::who_waits;
  EXPECT_EQ(who_waits(true, 1, 2, {0}), "rank 1 of 2 (GPU 0)");
  EXPECT_EQ(who_waits(true, 3, 8, {}), "rank 3 of 8");
  EXPECT_EQ(who_waits(false, 0, 2, {0, 1}), "GPUs 0,1 (one process)");
  EXPECT_EQ(who_waits(false, 0, 1, {3}), "GPU 3 (one process)");
  EXPECT_EQ(timeout_reason(300, "the other ranks in an all-reduce (max)"),
            "timed out after 300 s waiting for the other ranks in an all-reduce (max) "
            "(--xfbench_nccl_timeout_s)");
  EXPECT_EQ(timeout_reason(0.25, "x"),
            "timed out after 0.25 s waiting for x (--xfbench_nccl_timeout_s)");
}

TEST(NcclWait, TimeoutFlagRange) {
  TimeoutGuard restore;
  using xfbench::kernels::set_nccl_timeout;
  EXPECT_EQ(xfbench::kernels::nccl_timeout_seconds(), 300);
  for (double bad : {0.0, -1.0, std::nan(""), 86401.0}) {
    try {
      set_nccl_timeout(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const xfbench::InvalidArgument& e) {
      EXPECT_NE(e.message().find("--xfbench_nccl_timeout_s"), std::string::npos) << e.message();
    }
  }
  set_nccl_timeout(0.5);
  EXPECT_EQ(xfbench::kernels::nccl_timeout_seconds(), 0.5);
}

// Without MPI: a validation's own outcome, and errors pass to the case (no job to end).
TEST(NcclWait, OneProcessSectionsAndValidationsPassErrorsOn) {
  using xfbench::kernels::agreed_validation;
  using xfbench::kernels::collective_section;
  EXPECT_EQ(agreed_validation([] { return std::string("loss 10.4 -> 7.9"); }), "loss 10.4 -> 7.9");
  try {
    agreed_validation([]() -> std::string { XF_THROW(ValidationError, "loss did not fall"); });
    ADD_FAILURE() << "no error";
  } catch (const xfbench::ValidationError& e) {
    EXPECT_EQ(e.message(), "loss did not fall");
  }
  EXPECT_THROW(collective_section("Case/x", [] { XF_THROW(ValidationError, "wrong"); }),
               xfbench::ValidationError);
  EXPECT_THROW(collective_section("Case/x", [] { XF_THROW(Unsupported, "out of memory"); }),
               xfbench::Unsupported);
  EXPECT_THROW(collective_section("Case/x", [] { XF_THROW(LibraryError, "NCCL error"); }),
               xfbench::LibraryError);
  bool ran = false;
  collective_section("Case/x", [&] { ran = true; });
  EXPECT_TRUE(ran);
}

namespace {

// Spins until *release is set or `limit_ns` have passed (so a broken test cannot hang the GPU).
__global__ void spin_until(const volatile int* release, std::uint64_t limit_ns) {
  std::uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*release == 0 && now - start < limit_ns);
}

__global__ void spin_ns(std::uint64_t ns) {
  std::uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// A stream that never finishes (a peer that never arrives looks the same from here) times out
// with one line naming the GPU and the time-out. No communicator is cached while it does: its
// abort frees device memory, which waits for the stuck kernel (NCCL's own kernels stop at the
// abort; this one would not). Then a communicator's collective is waited on to completion.
TEST(NcclWaitGpu, AStuckStreamTimesOutAndACollectiveCompletes) {
  SKIP_WITHOUT_GPU();
  TimeoutGuard restore;
  using namespace xfbench::kernels;
  abort_communicator();
  int* release = nullptr;
  ASSERT_EQ(cudaHostAlloc(&release, sizeof(int), cudaHostAllocMapped), cudaSuccess);
  *release = 0;
  xfbench::Stream stream;
  spin_until<<<1, 1, 0, stream>>>(release, 20'000'000'000ull);
  set_nccl_timeout(0.3);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    wait_for_stream(stream);
    ADD_FAILURE() << "the wait returned";
  } catch (const xfbench::LibraryError& e) {
    EXPECT_EQ(e.message(),
              "GPU 0 (one process): timed out after 0.3 s waiting for the collectives to complete "
              "(--xfbench_nccl_timeout_s)");
  }
  const double waited = seconds_since(t0);
  EXPECT_GE(waited, 0.3);
  EXPECT_LT(waited, 2.0);
  *release = 1;
  stream.sync();
  cudaFreeHost(release);

  // A one-rank all-reduce of ones gives ones, waited on with NCCL's error checked.
  set_nccl_timeout(30);
  Communicator& comm = communicator({0});
  xfbench::DeviceBuffer<float> x(1024);
  std::vector<float> ones(1024, 1.f), back(1024, 0.f);
  XF_CUDA_CHECK(cudaMemcpy(x.data(), ones.data(), 4096, cudaMemcpyHostToDevice));
  ASSERT_EQ(ncclAllReduce(x.data(), x.data(), 1024, ncclFloat32, ncclSum, comm.comms[0], stream),
            ncclSuccess);
  wait_for_stream(stream);
  XF_CUDA_CHECK(cudaMemcpy(back.data(), x.data(), 4096, cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, ones);
}

namespace {
struct Quiet : benchmark::BenchmarkReporter {
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};
}  // namespace

// The timer's hooks: every wait goes through `wait`, and the numbers are the agreed ones (here a
// fake "other rank" twice as slow, as MPI's max would give).
TEST(NcclWaitGpu, TheTimerWaitsThroughTheHookAndTimesTheAgreedNumbers) {
  SKIP_WITHOUT_GPU();
  int waits = 0, agreements = 0;
  xfbench::Timing timing;
  benchmark::RegisterBenchmark(
      "AgreeTest/spin",
      [&](benchmark::State& state) {
        xfbench::TimerOptions o = xfbench::kernels::collective_timer_options();
        o.wait = [&](cudaEvent_t e) {
          ++waits;
          xfbench::kernels::wait_for_event(e);
        };
        o.agree = [&](double* v, std::size_t n) {
          ++agreements;
          for (std::size_t i = 0; i < n; ++i) v[i] *= 2;
        };
        xfbench::Stream stream;
        timing = xfbench::time_gpu(
            state, stream, [](cudaStream_t s) { spin_ns<<<1, 1, 0, s>>>(500000); }, o);
      })
      ->UseManualTime()
      ->Iterations(1);
  Quiet quiet;
  ASSERT_EQ(benchmark::RunSpecifiedBenchmarks(&quiet, "AgreeTest/spin"), 1u);
  EXPECT_NEAR(timing.seconds, 2 * 500e-6, 0.03 * 2 * 500e-6);
  EXPECT_FALSE(timing.graph);
  // Steady mode: one agreement for the batch size, one per window; a wait per window and three
  // synchronisations (warm-up, single launch, the queued window at the end).
  const int windows = timing.steady.first_window + timing.steady.windows;
  EXPECT_EQ(agreements, 1 + windows);
  EXPECT_EQ(waits, 3 + windows);
}
