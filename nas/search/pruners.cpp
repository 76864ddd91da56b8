#include "nas/search/pruners.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/error.h"
#include "harness/util/json.h"

namespace xnn::nas {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

// ---------------------------------------------------------------- median

MedianPruner::MedianPruner(Direction direction, MedianPrunerOptions options) : direction_(direction), options_(options) {
  XNN_CHECK(options_.n_startup_trials >= 0, "median pruner: n_startup_trials must be >= 0");
  XNN_CHECK(options_.n_warmup_steps >= 0, "median pruner: n_warmup_steps must be >= 0");
  XNN_CHECK(options_.interval_steps >= 1, "median pruner: interval_steps must be >= 1");
  XNN_CHECK(options_.n_min_trials >= 1, "median pruner: n_min_trials must be >= 1");
}

std::string MedianPruner::config_json() const {
  return json::Writer()
      .begin_object()
      .field("n_startup_trials", options_.n_startup_trials)
      .field("n_warmup_steps", options_.n_warmup_steps)
      .field("interval_steps", options_.interval_steps)
      .field("n_min_trials", options_.n_min_trials)
      .end_object()
      .str();
}

void MedianPruner::tell(const Trial& finished) {
  if (finished.state != TrialState::kComplete) return;
  ++completed_;
  for (const auto& [step, v] : finished.intermediate_values) {
    if (!std::isnan(v)) completed_at_step_[step].push_back(v);
  }
}

bool MedianPruner::should_prune(const Trial& running, int64_t step, double intermediate) {
  if (completed_ < options_.n_startup_trials) return false;
  if (step < options_.n_warmup_steps) return false;
  if ((step - options_.n_warmup_steps) % options_.interval_steps != 0) return false;
  auto it = completed_at_step_.find(step);
  if (it == completed_at_step_.end() || static_cast<int>(it->second.size()) < options_.n_min_trials) return false;
  // The running trial's best so far (a NaN report counts as the worst).
  double best = std::numeric_limits<double>::quiet_NaN();
  for (const auto& [s, v] : running.intermediate_values) {
    if (s > step || std::isnan(v)) continue;
    if (std::isnan(best) || minimised(v, direction_) < minimised(best, direction_)) best = v;
  }
  if (std::isnan(intermediate) && std::isnan(best)) return true;
  if (!std::isnan(intermediate) && (std::isnan(best) || minimised(intermediate, direction_) < minimised(best, direction_)))
    best = intermediate;
  return minimised(best, direction_) > minimised(median(it->second), direction_);
}

// ---------------------------------------------------------------- successive halving

SuccessiveHalvingPruner::SuccessiveHalvingPruner(Direction direction, SuccessiveHalvingOptions options)
    : direction_(direction), options_(options) {
  XNN_CHECK(options_.min_resource >= 1, "successive halving: min_resource must be >= 1");
  XNN_CHECK(options_.reduction_factor >= 2, "successive halving: reduction_factor must be >= 2");
  XNN_CHECK(options_.min_early_stopping_rate >= 0, "successive halving: min_early_stopping_rate must be >= 0");
}

std::string SuccessiveHalvingPruner::config_json() const {
  return json::Writer()
      .begin_object()
      .field("min_resource", options_.min_resource)
      .field("reduction_factor", options_.reduction_factor)
      .field("min_early_stopping_rate", options_.min_early_stopping_rate)
      .end_object()
      .str();
}

int64_t SuccessiveHalvingPruner::rung_step(int64_t rung) const {
  int64_t s = options_.min_resource;
  for (int64_t i = 0; i < options_.min_early_stopping_rate + rung; ++i) {
    if (s > (int64_t{1} << 52) / options_.reduction_factor) return int64_t{1} << 52;  // beyond any real step
    s *= options_.reduction_factor;
  }
  return s;
}

std::map<int64_t, double> SuccessiveHalvingPruner::rung_values(const Trial& t) const {
  std::map<int64_t, double> out;
  int64_t rung = 0;
  for (const auto& [step, v] : t.intermediate_values) {
    while (step >= rung_step(rung)) out[rung++] = v;
  }
  return out;
}

void SuccessiveHalvingPruner::tell(const Trial& finished) {
  if (finished.state == TrialState::kFail) return;
  for (const auto& [rung, v] : rung_values(finished)) finished_rungs_[rung].push_back(v);
}

bool SuccessiveHalvingPruner::should_prune(const Trial& running, int64_t step, double intermediate) {
  Trial t = running;
  t.intermediate_values[step] = intermediate;
  auto mine = rung_values(t);
  // Only the rungs this report reached decide (earlier ones were decided at their own report).
  Trial before = running;
  before.intermediate_values.erase(step);
  auto earlier = rung_values(before);
  for (const auto& [rung, v] : mine) {
    if (earlier.count(rung)) continue;
    if (std::isnan(v)) return true;
    std::vector<double> competing;
    auto it = finished_rungs_.find(rung);
    if (it != finished_rungs_.end()) competing = it->second;
    competing.push_back(v);
    for (double& c : competing) c = std::isnan(c) ? std::numeric_limits<double>::infinity() : minimised(c, direction_);
    std::sort(competing.begin(), competing.end());
    int64_t k = static_cast<int64_t>(competing.size()) / options_.reduction_factor - 1;
    if (k < 0) k = 0;
    if (minimised(v, direction_) > competing[static_cast<size_t>(k)]) return true;
  }
  return false;
}

}  // namespace xnn::nas
