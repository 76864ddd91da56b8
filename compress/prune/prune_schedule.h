// Gradual magnitude pruning during fine-tuning (Zhu & Gupta 2017, "To prune, or not to prune"):
// sparsity rises from s_i to s_f along
//     s_t = s_f + (s_i - s_f) · (1 - (t - t0) / (t1 - t0))³     for t0 <= t <= t1
// (s_i before t0, s_f after t1): fast at first while the network has redundant weights, slowly
// at the end. Every `every` steps the masks are recomputed at the schedule's sparsity from the
// current magnitudes (pruned weights are 0, so they rank first and masks only grow); after every
// optimiser step the masks are re-applied, so pruned weights stay exactly 0 (momentum and
// weight decay would otherwise move them).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "compress/prune/magnitude_prune.h"

namespace xnn::prune {

struct GradualSchedule {
  double initial_sparsity = 0;    // s_i
  double final_sparsity = 0.9;    // s_f
  int64_t begin_step = 0;         // t0
  int64_t end_step = 0;           // t1 (>= t0); 0 with end_fraction: from the training length
  double end_fraction = 0.75;     // t1 = end_fraction × total steps when end_step is 0
  int64_t every = 0;              // mask updates every N steps; 0: (t1 - t0) / 10, at least 1
};

// s_t of the cubic schedule (clamped outside [t0, t1]; s_f when t1 <= t0).
double zhu_gupta_sparsity(double initial, double final_sparsity, int64_t step, int64_t begin_step, int64_t end_step);

// The training step hook (harness/train/trainer.h StepHook): call with step 0 before the first
// optimiser step and with the number of steps taken after each one.
class GradualPruner {
 public:
  GradualPruner(std::vector<PrunableWeight> weights, GradualSchedule schedule, bool global);

  void on_step(int64_t step, int64_t total_steps, std::span<train::Parameter> params);

  const PruneMasks& masks() const { return masks_; }
  double current_sparsity() const { return current_; }  // the target of the last mask update
  int64_t updates() const { return updates_; }          // mask updates so far
  // t1 and the update period once resolved (after the first on_step).
  int64_t end_step() const { return end_; }
  int64_t every() const { return every_; }

 private:
  std::vector<PrunableWeight> weights_;
  GradualSchedule schedule_;
  bool global_;
  PruneMasks masks_;
  double current_ = -1;
  int64_t updates_ = 0, end_ = -1, every_ = 1;
};

}  // namespace xnn::prune
