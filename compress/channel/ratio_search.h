// Per-group pruning ratios chosen automatically.
//
// Sensitivity scan: each prunable group alone is pruned to each fraction (0.1 .. 0.9 by
// default, keep counts rounded as in round_keep) and the model run on a few held-out batches;
// the damage is the noise-to-signal ratio of the first output (logits) against the unpruned
// model, sum ||y - y0||^2 / sum ||y0||^2 (smooth where top-1 on a small batch is flat), and the
// top-1 accuracy is recorded when labels are given.
//
// Search: starting from the unpruned model, greedily take the step (one group one fraction
// further) with the least added damage per unit of cost saved, until the cost is at most
// `ratio` of the unpruned cost; then give back `round_to` channels at a time where they reduce
// the (interpolated) damage most, while the cost stays within the target. The cost is MACs or parameters from ChannelCostModel, or any
// callable (measured or predicted latency: the CLI passes one).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compress/channel/channel_cost.h"
#include "compress/channel/channel_importance.h"
#include "compress/channel/channel_prune.h"

namespace xnn::channel {

struct CalibrationData {
  std::vector<std::map<std::string, Tensor>> batches;  // model inputs by name
  std::vector<std::vector<int64_t>> labels;            // optional: one class per sample of each batch
};

struct SensitivityOptions {
  std::vector<double> fractions = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};  // pruned fractions
  int64_t round_to = 8;
  int threads = 1;
};

struct GroupSensitivity {
  int group = 0;
  std::vector<double> fractions;  // pruned fraction asked for
  std::vector<int64_t> keep;      // channels kept at each (after rounding)
  std::vector<double> damage;     // noise-to-signal ratio of the logits
  std::vector<double> accuracy;   // top-1 in [0,1] (empty without labels)
};

struct SensitivityResult {
  std::vector<GroupSensitivity> groups;  // prunable groups only
  double base_accuracy = -1;             // -1 without labels
};

using ProgressFn = std::function<void(const std::string&)>;

// Throws an Error when `data` has no batches or labels do not match the batches.
SensitivityResult sensitivity_scan(const Model& model, const ChannelAnalysis& analysis, const ImportanceScores& scores,
                                   const CalibrationData& data, const SensitivityOptions& options,
                                   const ProgressFn& progress = nullptr);

// Top-1 of the model's first output ([N, classes]) against `data.labels`, and its outputs.
double top1_accuracy(const Model& model, const CalibrationData& data, int threads);

enum class CostTarget { kFlops, kParams };
CostTarget parse_cost_target(const std::string& name);  // "flops" or "params"

struct RatioSearchOptions {
  CostTarget target = CostTarget::kFlops;
  double ratio = 0.5;         // keep at most this fraction of the cost
  double max_fraction = 0.9;  // never prune more of one group than this
  int64_t round_to = 8;       // granularity of the refill after the greedy steps (as the scan's)
  // When set, replaces the MACs/params cost (e.g. measured or predicted latency in ms).
  std::function<double(const KeepCounts&)> cost;
  // When set, steps are ranked by added damage per unit of THIS cost saved (e.g. predicted
  // latency), while the target still applies to the cost above: at a FLOPs target, the FLOPs
  // removed come from where they cost the most time.
  std::function<double(const KeepCounts&)> rank_cost;
};

struct RatioSearchResult {
  KeepCounts keep;             // per group
  double base_cost = 0, cost = 0;
  bool met = false;            // cost <= ratio * base_cost
  int steps = 0;
};

RatioSearchResult search_ratios(const ChannelAnalysis& analysis, const ChannelCostModel& cost_model,
                                const SensitivityResult& sensitivity, const RatioSearchOptions& options);

}  // namespace xnn::channel
