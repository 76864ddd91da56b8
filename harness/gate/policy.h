// The gate's policy: which metrics it compares, the statistics' settings and the minimum changes
// that count, globally, per metric and per model. Defaults are built in; `--policy FILE` (YAML,
// schema in configs/ci/README.md) overrides any part of them.
//
//   alpha: 0.01          # Mann-Whitney p-value below which a difference is significant
//   min_samples: 5       # fewer raw samples on either side: UNCERTAIN
//   max_cv: 0.10         # coefficient of variation above this on either side: UNCERTAIN
//   metrics:
//     latency_ms: {regression: 0.05, improvement: 0.05}   # relative change of the median
//     size_bytes: {regression: 0.01}
//     top1: {regression: 0.3, absolute: true}             # percentage points
//   models:
//     fmnist_cnn: {latency_ms: {regression: 0.10}}
//
// Errors are xnn::Error starting with "FILE:LINE:COLUMN: " like experiment config errors, with
// the key path and a did-you-mean for unknown keys.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace xnn::gate {

// When a change counts. `absolute` thresholds are in the metric's display unit (ms, bytes,
// percentage points for accuracy); otherwise they are fractions of the baseline (0.05 = 5%).
struct MetricRule {
  bool enabled = true;
  double regression = 0.05;   // a change this much worse (or more) is a regression
  double improvement = 0.05;  // a change this much better (or more) is an improvement
  bool absolute = false;
};

// A metric the gate knows how to compare.
struct GatedMetric {
  std::string name;         // in policies and reports
  std::string samples;      // raw-sample series in the store ("" : a single recorded value)
  std::string metric;       // the recorded metric for single values
  bool higher_is_better = false;
  double display_scale = 1;  // stored value * display_scale = value in display_unit
  std::string display_unit;  // "ms", "bytes", "%" (accuracy in percent: differences are points)
  MetricRule default_rule;
};

// latency_ms (raw samples, Mann-Whitney + minimum change of the median), size_bytes, top1 and
// top5 (single values: minimum change only). Accuracy is stored as a ratio 0..1; its thresholds
// and changes are in percentage points.
const std::vector<GatedMetric>& gated_metrics();
const GatedMetric* find_gated_metric(const std::string& name);

struct Policy {
  double alpha = 0.01;
  int min_samples = 5;
  double max_cv = 0.10;
  std::map<std::string, MetricRule> metrics;  // every gated metric's rule
  // Per model: the rules of the metrics that model overrides (keys it leaves out come from
  // `metrics`).
  std::map<std::string, std::map<std::string, MetricRule>> models;
  std::string source = "built-in defaults";  // the policy file, for reports

  // The rule for `metric` on `model` (a gated metric name).
  const MetricRule& rule(const std::string& model, const std::string& metric) const;
};

Policy default_policy();
// Reads and validates a policy file; keys it leaves out keep their defaults.
Policy load_policy(const std::string& path);
// The same for text already in memory; `path` names it in messages.
Policy parse_policy(const std::string& yaml_text, const std::string& path);

}  // namespace xnn::gate
