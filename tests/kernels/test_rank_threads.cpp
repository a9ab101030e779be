// RankThreads (kernels/comm/rank_threads.hpp): one host thread per local GPU, shared by the
// parallel trainer (run) and the burn (start, a monitor loop, then wait).
#include "kernels/comm/rank_threads.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "test_gpu.hpp"

namespace {

using xfbench::kernels::OnDevice;
using xfbench::kernels::RankThreads;

TEST(RankThreads, RunCallsEveryIndexOnceEachOnItsOwnThread) {
  RankThreads threads(4);
  EXPECT_EQ(threads.size(), 4);
  std::mutex mu;
  std::multiset<int> seen;
  std::set<std::thread::id> ids;
  for (int job = 0; job < 3; ++job) {  // the same threads serve every job
    threads.run([&](int i) {
      std::lock_guard<std::mutex> lock(mu);
      seen.insert(i);
      ids.insert(std::this_thread::get_id());
    });
  }
  EXPECT_EQ(seen, (std::multiset<int>{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}));
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids.count(std::this_thread::get_id()), 0u);
}

TEST(RankThreads, StartReturnsWhileTheJobRunsAndWaitJoinsIt) {
  RankThreads threads(2);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> finished{0};
  threads.start([&, gate](int) {  // the job outlives start's argument: it is kept
    gate.wait();
    ++finished;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(finished.load(), 0);  // start did not wait
  release.set_value();
  threads.wait();
  EXPECT_EQ(finished.load(), 2);
  threads.wait();  // nothing started: returns at once
}

TEST(RankThreads, WaitRethrowsAThreadsExceptionOnce) {
  RankThreads threads(3);
  threads.start([](int i) {
    if (i == 1) throw std::runtime_error("rank 1 failed");
  });
  try {
    threads.wait();
    FAIL() << "wait did not rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "rank 1 failed");
  }
  EXPECT_NO_THROW(threads.wait());
  EXPECT_NO_THROW(threads.run([](int) {}));  // the threads live on
}

TEST(RankThreads, StartingTwiceWithoutWaitingIsRefused) {
  RankThreads threads(1);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  threads.start([gate](int) { gate.wait(); });
  EXPECT_THROW(threads.start([](int) {}), xfbench::InvalidArgument);
  release.set_value();
  threads.wait();
}

TEST(RankThreads, DestructionWaitsForAStartedJob) {
  std::atomic<int> finished{0};
  {
    RankThreads threads(2);
    threads.start([&](int) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      ++finished;
    });
  }
  EXPECT_EQ(finished.load(), 2);
}

TEST(RankThreadsGpu, EachThreadHasItsDeviceCurrentAndOnDeviceRestores) {
  SKIP_WITHOUT_GPU();
  RankThreads threads(std::vector<int>{0, 0});
  std::atomic<int> on_zero{0};
  threads.run([&](int) {
    int d = -1;
    if (cudaGetDevice(&d) == cudaSuccess && d == 0) ++on_zero;
  });
  EXPECT_EQ(on_zero.load(), 2);
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  {
    OnDevice on(count - 1);
    int d = -1;
    ASSERT_EQ(cudaGetDevice(&d), cudaSuccess);
    EXPECT_EQ(d, count - 1);
  }
  int d = -1;
  ASSERT_EQ(cudaGetDevice(&d), cudaSuccess);
  EXPECT_EQ(d, 0);
  EXPECT_THROW(OnDevice bad(count), xfbench::Error);  // no such device: named, not ignored
}

}  // namespace
