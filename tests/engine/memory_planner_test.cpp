#include "engine/runtime/memory_planner.h"

#include "engine/core/error.h"

#include <gtest/gtest.h>

#include <random>

namespace xnn {
namespace {

// No two tensors with overlapping lifetimes overlap in memory; all fit in the arena.
void expect_valid(const std::vector<TensorLifetime>& t, const MemoryPlan& p) {
  ASSERT_EQ(p.offsets.size(), t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(p.offsets[i] % kArenaAlignment, 0);
    EXPECT_LE(p.offsets[i] + t[i].bytes, p.arena_bytes);
    for (size_t j = i + 1; j < t.size(); ++j) {
      if (t[i].bytes == 0 || t[j].bytes == 0) continue;
      const bool live_together = t[i].first_step <= t[j].last_step && t[j].first_step <= t[i].last_step;
      const bool mem_overlap = p.offsets[i] < p.offsets[j] + t[j].bytes && p.offsets[j] < p.offsets[i] + t[i].bytes;
      EXPECT_FALSE(live_together && mem_overlap) << i << " and " << j;
    }
  }
  EXPECT_GE(p.arena_bytes, p.lower_bound_bytes);
}

TEST(MemoryPlanner, ChainReusesTwoBuffers) {
  // a -> b -> c -> d: each tensor lives for two steps; two buffers suffice.
  std::vector<TensorLifetime> t{{1024, 0, 1}, {1024, 1, 2}, {1024, 2, 3}, {1024, 3, 4}};
  const MemoryPlan p = plan_memory(t);
  expect_valid(t, p);
  EXPECT_EQ(p.arena_bytes, 2048);
  EXPECT_EQ(p.lower_bound_bytes, 2048);
}

TEST(MemoryPlanner, SmallTensorFillsGap) {
  // A big long-lived tensor, two mid-size ones in sequence, a small one that fits a gap.
  std::vector<TensorLifetime> t{{4096, 0, 5}, {2048, 0, 1}, {2048, 2, 3}, {1024, 2, 2}, {512, 4, 5}};
  const MemoryPlan p = plan_memory(t);
  expect_valid(t, p);
  EXPECT_EQ(p.lower_bound_bytes, 4096 + 2048 + 1024);
  EXPECT_LE(p.arena_bytes, p.lower_bound_bytes * 11 / 10);
}

TEST(MemoryPlanner, AlignmentAndZeroSize) {
  std::vector<TensorLifetime> t{{1, 0, 0}, {0, 0, 3}, {65, 0, 1}};
  const MemoryPlan p = plan_memory(t);
  expect_valid(t, p);
  EXPECT_EQ(p.arena_bytes, 64 + 128);
}

TEST(MemoryPlanner, RandomGraphsAreValidAndNearTheBound) {
  std::mt19937 rng(7);
  double worst = 1;
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 5 + static_cast<int>(rng() % 60);
    std::vector<TensorLifetime> t;
    for (int i = 0; i < n; ++i) {
      const int first = i;  // one producer per step, like a sorted graph
      const int last = first + static_cast<int>(rng() % 6);
      t.push_back({static_cast<int64_t>(64 * (1 + rng() % 200)), first, last});
    }
    const MemoryPlan p = plan_memory(t);
    expect_valid(t, p);
    worst = std::max(worst, static_cast<double>(p.arena_bytes) / p.lower_bound_bytes);
  }
  // Greedy by size is not optimal in general; random graphs stay well under 2x.
  EXPECT_LT(worst, 2.0);
}

TEST(MemoryPlanner, RejectsBadLifetimes) {
  EXPECT_THROW(plan_memory({{64, 3, 1}}), Error);
  EXPECT_THROW(plan_memory({{-1, 0, 1}}), Error);
}

}  // namespace
}  // namespace xnn
