#include "engine/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace xnn {
namespace {

TEST(ThreadPool, RunsEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int64_t n : {0, 1, 2, 7, 100, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "threads " << threads << " n " << n;
    }
  }
}

TEST(ThreadPool, UsesExactlyTheRequestedThreads) {
  ThreadPool pool(3);
  std::mutex m;
  std::set<std::thread::id> ids;
  // Enough slow tasks that every worker takes some.
  for (int round = 0; round < 20 && ids.size() < 3; ++round) {
    pool.parallel_for(64, [&](int64_t) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    });
  }
  EXPECT_EQ(ids.size(), 3u);
}

// Each thread owns a contiguous block of indices (the caller the first), so consecutive layers
// that number their tiles alike give a thread the same part of the image. Tasks 0 and 2 (then 1
// and 3) wait for each other: with blocks {0, 1} and {2, 3} both threads get through; a shared
// counter (caller 0, worker 1) would leave both waiting for partners nobody has claimed.
TEST(ThreadPool, EachThreadRunsItsOwnContiguousBlock) {
  ThreadPool pool(2);
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> started[2] = {0, 0};
    std::atomic<bool> timed_out{false};
    std::thread::id ran_on[4];
    pool.parallel_for(4, [&](int64_t i) {
      ran_on[i] = std::this_thread::get_id();
      std::atomic<int>& pair = started[i % 2];
      pair.fetch_add(1);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (pair.load() < 2) {
        if (std::chrono::steady_clock::now() > deadline) {
          timed_out = true;
          return;
        }
        std::this_thread::yield();
      }
    });
    ASSERT_FALSE(timed_out.load()) << "round " << round;
    EXPECT_EQ(ran_on[0], std::this_thread::get_id());
    EXPECT_EQ(ran_on[1], std::this_thread::get_id());
    EXPECT_NE(ran_on[2], std::this_thread::get_id());
    EXPECT_EQ(ran_on[2], ran_on[3]);
  }
}

TEST(ThreadPool, RethrowsTaskErrorsAndStaysUsable) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(10, [](int64_t i) {
    if (i == 5) throw std::runtime_error("task 5 failed");
  }), std::runtime_error);
  std::atomic<int> sum{0};
  pool.parallel_for(10, [&](int64_t i) { sum += static_cast<int>(i); });
  EXPECT_EQ(sum.load(), 45);
}

TEST(ThreadPool, NestedCallsRunSerially) {
  ThreadPool pool(2);
  std::atomic<int> count{0};
  pool.parallel_for(4, [&](int64_t) { pool.parallel_for(5, [&](int64_t) { count++; }); });
  EXPECT_EQ(count.load(), 20);
}

TEST(ThreadPool, ManyShortCallsBackToBack) {
  ThreadPool pool(2);
  int64_t total = 0;
  std::vector<int64_t> partial(2);
  for (int round = 0; round < 2000; ++round) {
    partial.assign(2, 0);
    pool.parallel_for(2, [&](int64_t i) { partial[static_cast<size_t>(i)] += i + 1; });
    total += partial[0] + partial[1];
  }
  EXPECT_EQ(total, 2000 * 3);
}

TEST(ThreadPool, NullPoolRunsSerially) {
  int sum = 0;
  parallel_for(nullptr, 5, [&](int64_t i) { sum += static_cast<int>(i); });
  EXPECT_EQ(sum, 10);
}

}  // namespace
}  // namespace xnn
