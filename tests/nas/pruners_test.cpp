// Pruners on hand-made learning curves.
#include <gtest/gtest.h>

#include "nas/search/pruners.h"

namespace xnn::nas {
namespace {

Trial curve(int64_t number, TrialState state, std::vector<double> values) {
  Trial t;
  t.number = number;
  t.state = state;
  for (size_t s = 0; s < values.size(); ++s) t.intermediate_values[static_cast<int64_t>(s)] = values[s];
  if (state == TrialState::kComplete) t.values = {values.back()};
  return t;
}

// Reports `values` step by step; returns the step at which the pruner stopped it (-1: never).
int64_t prune_step(Pruner& p, std::vector<double> values, int64_t number = 100) {
  Trial running = curve(number, TrialState::kRunning, {});
  for (size_t s = 0; s < values.size(); ++s) {
    if (p.should_prune(running, static_cast<int64_t>(s), values[s])) return static_cast<int64_t>(s);
    running.intermediate_values[static_cast<int64_t>(s)] = values[s];
  }
  return -1;
}

TEST(MedianPruner, PrunesATrialWorseThanTheMedianAtTheSameStep) {
  MedianPrunerOptions o;
  o.n_startup_trials = 3;
  MedianPruner p(Direction::kMinimize, o);
  // Losses of three completed trials: medians per step are 0.8, 0.6, 0.4, 0.3.
  p.tell(curve(0, TrialState::kComplete, {0.9, 0.7, 0.5, 0.4}));
  p.tell(curve(1, TrialState::kComplete, {0.8, 0.6, 0.4, 0.3}));
  EXPECT_EQ(prune_step(p, {5, 5, 5, 5}), -1);  // only 2 completed: still warming up
  p.tell(curve(2, TrialState::kComplete, {0.7, 0.5, 0.3, 0.2}));
  p.tell(curve(3, TrialState::kPruned, {0.1}));  // pruned trials are not counted
  EXPECT_EQ(prune_step(p, {0.75, 0.55, 0.35, 0.25}), -1);   // better than the median throughout
  EXPECT_EQ(prune_step(p, {0.75, 0.55, 0.45, 0.35}), 2);    // 0.45 > 0.4 at step 2
  EXPECT_EQ(prune_step(p, {0.85, 0.7}), 0);                 // 0.85 > 0.8 at step 0
  EXPECT_EQ(prune_step(p, {0.35, 0.9, 0.9, 0.9}), 3);       // best so far 0.35 is only worse at step 3
  EXPECT_EQ(prune_step(p, {0.2, 0.2, 0.2, 0.2, 9.0}), -1);  // step 4: no completed trial reported it
}

TEST(MedianPruner, HonoursWarmupIntervalAndDirection) {
  MedianPrunerOptions o;
  o.n_startup_trials = 1;
  o.n_warmup_steps = 2;
  o.interval_steps = 2;
  MedianPruner p(Direction::kMaximize, o);  // accuracy: higher is better
  p.tell(curve(0, TrialState::kComplete, {0.5, 0.6, 0.7, 0.8, 0.9}));
  EXPECT_EQ(prune_step(p, {0.1, 0.1, 0.1, 0.1, 0.1}), 2);  // steps 0, 1 warm up; 2 is on the grid
  EXPECT_EQ(prune_step(p, {0.1, 0.1, 0.8, 0.8, 0.1}), 4);  // step 3 is off the grid
  EXPECT_EQ(prune_step(p, {0.6, 0.7, 0.8, 0.9, 1.0}), -1);
}

TEST(SuccessiveHalving, KeepsTheTopFractionAtEachRung) {
  SuccessiveHalvingOptions o;
  o.min_resource = 1;
  o.reduction_factor = 2;
  SuccessiveHalvingPruner p(Direction::kMinimize, o);
  EXPECT_EQ(p.rung_step(0), 1);
  EXPECT_EQ(p.rung_step(1), 2);
  EXPECT_EQ(p.rung_step(2), 4);
  // The first trial has no competitors: it is the top one everywhere.
  EXPECT_EQ(prune_step(p, {9, 0.5, 0.4, 0.3, 0.2}, 0), -1);
  p.tell(curve(0, TrialState::kComplete, {9, 0.5, 0.4, 0.3, 0.2}));
  // Rung 0 (step 1): competitors {0.5, x}; top floor(2/2) = 1 => must beat 0.5.
  EXPECT_EQ(prune_step(p, {9, 0.6}, 1), 1);
  p.tell(curve(1, TrialState::kPruned, {9, 0.6}));
  // Rung 0 with 3 values {0.5, 0.6, x}: top 1 => x must be the best; rung 1 against {0.4}.
  EXPECT_EQ(prune_step(p, {9, 0.45, 0.38, 0.2, 0.1}, 2), -1);
  p.tell(curve(2, TrialState::kComplete, {9, 0.45, 0.38, 0.2, 0.1}));
  // Rung 0: {0.5, 0.6, 0.45, 0.55}: top 2 => 0.55 > 0.5: pruned at step 1.
  EXPECT_EQ(prune_step(p, {9, 0.55}, 3), 1);
  // Passes rung 0 with 0.48 (top 2 of {0.45, 0.5, 0.6, 0.48}), rung 1 (step 2) against
  // {0.4, 0.38, x}: top 1 => 0.41 > 0.38 pruned at step 2.
  EXPECT_EQ(prune_step(p, {9, 0.48, 0.41}, 4), 2);
}

}  // namespace
}  // namespace xnn::nas
