// Static memory planning: every intermediate tensor of a prepared session gets an offset in one
// arena, computed once from tensor lifetimes (the execution step that writes it first and the
// last step that reads it). Two tensors may share bytes only if their lifetimes are disjoint.
//
// Algorithm: "greedy by size" (TFLite's ArenaPlanner, XNNPACK; Pisarchyk & Lee 2020): tensors
// are placed largest first; each goes into the smallest gap between already-placed tensors
// whose lifetimes overlap its own that fits it (best fit), or above them all.
//
// The liveness lower bound is max over steps of the bytes live at that step: no plan can use
// less. The planned arena is reported against it (within 1.1x on the torchvision models).
#pragma once
#include <cstdint>
#include <vector>

namespace xnn {

struct TensorLifetime {
  int64_t bytes = 0;
  int first_step = 0;  // step that produces it (inclusive)
  int last_step = 0;   // last step that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // per tensor, aligned
  int64_t arena_bytes = 0;
  int64_t lower_bound_bytes = 0;  // liveness lower bound (with the same alignment rounding)
};

constexpr int64_t kArenaAlignment = 64;

MemoryPlan plan_memory(const std::vector<TensorLifetime>& tensors, int64_t alignment = kArenaAlignment);

// max over steps of the sum of (aligned) bytes of tensors live at that step.
int64_t liveness_lower_bound(const std::vector<TensorLifetime>& tensors, int64_t alignment = kArenaAlignment);

}  // namespace xnn
