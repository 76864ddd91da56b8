// Early stopping of weak trials from their intermediate values (pruners, strategy.h).
//
// MedianPruner (Optuna's rule): at `step`, prune the running trial when its best intermediate
// value so far is worse than the median of the values that COMPLETE trials reported at that
// same step. Never before `n_startup_trials` trials have completed, before `n_warmup_steps`,
// off the `interval_steps` grid (counted from n_warmup_steps), or with fewer than
// `n_min_trials` completed trials that reported this step.
//
// SuccessiveHalvingPruner (asynchronous successive halving, Li et al. 2018, as Optuna's):
// rung r is reached at step min_resource * reduction_factor^(min_early_stopping_rate + r). A
// trial's value at a rung is its first intermediate value at a step >= the rung's step. When
// the running trial reaches a rung, it competes with every trial (finished or itself) that has
// a value there: it continues only when it is among the top floor(n / reduction_factor) (at
// least the top one), otherwise it is pruned.
#pragma once
#include <optional>

#include "nas/search/strategy.h"

namespace xnn::nas {

struct MedianPrunerOptions {
  int n_startup_trials = 5;
  int64_t n_warmup_steps = 0;
  int64_t interval_steps = 1;
  int n_min_trials = 1;
};

class MedianPruner : public Pruner {
 public:
  explicit MedianPruner(Direction direction, MedianPrunerOptions options = {});
  bool should_prune(const Trial& running, int64_t step, double intermediate) override;
  void tell(const Trial& finished) override;
  std::string name() const override { return "median"; }
  std::string config_json() const override;

 private:
  Direction direction_;
  MedianPrunerOptions options_;
  int completed_ = 0;
  std::map<int64_t, std::vector<double>> completed_at_step_;  // step -> values of COMPLETE trials
};

struct SuccessiveHalvingOptions {
  int64_t min_resource = 1;
  int64_t reduction_factor = 4;
  int64_t min_early_stopping_rate = 0;
};

class SuccessiveHalvingPruner : public Pruner {
 public:
  explicit SuccessiveHalvingPruner(Direction direction, SuccessiveHalvingOptions options = {});
  bool should_prune(const Trial& running, int64_t step, double intermediate) override;
  void tell(const Trial& finished) override;
  std::string name() const override { return "successive_halving"; }
  std::string config_json() const override;

  // Step at which rung r is reached.
  int64_t rung_step(int64_t rung) const;

 private:
  // The trial's value at every rung it reached: rung -> value.
  std::map<int64_t, double> rung_values(const Trial& t) const;
  Direction direction_;
  SuccessiveHalvingOptions options_;
  std::map<int64_t, std::vector<double>> finished_rungs_;  // rung -> values of finished trials
};

}  // namespace xnn::nas
