#include "compress/prune/prune_schedule.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace xnn::prune {

double zhu_gupta_sparsity(double initial, double final_sparsity, int64_t step, int64_t begin_step, int64_t end_step) {
  if (end_step <= begin_step) return step < begin_step ? initial : final_sparsity;
  if (step <= begin_step) return initial;
  if (step >= end_step) return final_sparsity;
  const double progress = static_cast<double>(step - begin_step) / static_cast<double>(end_step - begin_step);
  const double rest = 1.0 - progress;
  return final_sparsity + (initial - final_sparsity) * rest * rest * rest;
}

GradualPruner::GradualPruner(std::vector<PrunableWeight> weights, GradualSchedule schedule, bool global)
    : weights_(std::move(weights)), schedule_(schedule), global_(global) {
  const auto in_range = [](double s) { return s >= 0.0 && s < 1.0; };
  if (!in_range(schedule_.initial_sparsity) || !in_range(schedule_.final_sparsity)) {
    throw Error("gradual pruning: sparsities must lie in [0, 1) (initial " + std::to_string(schedule_.initial_sparsity) +
                ", final " + std::to_string(schedule_.final_sparsity) + ")");
  }
  if (schedule_.begin_step < 0 || schedule_.end_step < 0 || schedule_.every < 0 ||
      (schedule_.end_step > 0 && schedule_.end_step < schedule_.begin_step)) {
    throw Error("gradual pruning: steps must satisfy 0 <= begin_step <= end_step and every >= 0");
  }
  if (!(schedule_.end_fraction > 0 && schedule_.end_fraction <= 1)) {
    throw Error("gradual pruning: end_fraction " + std::to_string(schedule_.end_fraction) + " is outside (0, 1]");
  }
}

void GradualPruner::on_step(int64_t step, int64_t total_steps, std::span<train::Parameter> params) {
  if (end_ < 0) {
    end_ = schedule_.end_step > 0
               ? schedule_.end_step
               : std::max(schedule_.begin_step,
                          static_cast<int64_t>(std::floor(schedule_.end_fraction * static_cast<double>(total_steps))));
    every_ = schedule_.every > 0 ? schedule_.every : std::max<int64_t>(1, (end_ - schedule_.begin_step) / 10);
  }
  // Mask updates at t0, t0 + every, ... up to t1, and once more at t1 itself so the final
  // sparsity is reached exactly even when the period does not divide the span.
  const bool update = masks_.empty() ||
                      (step >= schedule_.begin_step && step <= end_ &&
                       ((step - schedule_.begin_step) % every_ == 0 || step == end_));
  if (update) {
    const double s = zhu_gupta_sparsity(schedule_.initial_sparsity, schedule_.final_sparsity, step,
                                        schedule_.begin_step, end_);
    if (s != current_) {
      masks_ = magnitude_prune(params, weights_, s, global_);
      current_ = s;
      ++updates_;
    }
  }
  apply_masks(params, masks_);
}

}  // namespace xnn::prune
