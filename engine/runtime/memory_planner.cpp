#include "engine/runtime/memory_planner.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "engine/core/error.h"

namespace xnn {
namespace {

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

bool overlaps(const TensorLifetime& a, const TensorLifetime& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

}  // namespace

int64_t liveness_lower_bound(const std::vector<TensorLifetime>& tensors, int64_t alignment) {
  // Sweep: +bytes at first_step, -bytes after last_step.
  std::map<int, int64_t> delta;
  for (const TensorLifetime& t : tensors) {
    if (t.bytes <= 0) continue;
    const int64_t b = align_up(t.bytes, alignment);
    delta[t.first_step] += b;
    delta[t.last_step + 1] -= b;
  }
  int64_t live = 0, peak = 0;
  for (const auto& [step, d] : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return peak;
}

MemoryPlan plan_memory(const std::vector<TensorLifetime>& tensors, int64_t alignment) {
  for (const TensorLifetime& t : tensors) {
    XNN_CHECK(t.bytes >= 0 && t.first_step <= t.last_step, "plan_memory: bad tensor lifetime");
  }
  MemoryPlan plan;
  plan.offsets.assign(tensors.size(), 0);
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Largest first; ties by earlier first use, then index, so plans are deterministic.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (tensors[a].bytes != tensors[b].bytes) return tensors[a].bytes > tensors[b].bytes;
    return tensors[a].first_step < tensors[b].first_step;
  });
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of overlapping placed tensors
  for (size_t idx : order) {
    const TensorLifetime& t = tensors[idx];
    if (t.bytes == 0) continue;
    const int64_t size = align_up(t.bytes, alignment);
    busy.clear();
    for (size_t p : placed) {
      if (overlaps(t, tensors[p])) busy.emplace_back(plan.offsets[p], plan.offsets[p] + align_up(tensors[p].bytes, alignment));
    }
    std::sort(busy.begin(), busy.end());
    int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
    for (const auto& [begin, end] : busy) {
      if (begin > cursor) {
        const int64_t gap = begin - cursor;
        if (gap >= size && gap < best_gap) best = cursor, best_gap = gap;
      }
      cursor = std::max(cursor, end);
    }
    if (best < 0) best = cursor;  // above everything that overlaps
    plan.offsets[idx] = best;
    plan.arena_bytes = std::max(plan.arena_bytes, best + size);
    placed.push_back(idx);
  }
  plan.lower_bound_bytes = liveness_lower_bound(tensors, alignment);
  return plan;
}

}  // namespace xnn
