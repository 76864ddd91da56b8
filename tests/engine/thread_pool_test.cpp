#include "engine/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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
