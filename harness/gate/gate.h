// CI performance gating: compare a candidate run with a baseline run, job by job (model,
// variant, target) and metric by metric, and decide PASS / REGRESSION / IMPROVEMENT /
// UNCERTAIN for each.
//
//  * Metrics with raw samples (latency_ms): a two-sided Mann-Whitney U test on the raw samples
//    (mann_whitney.h) with p < alpha AND a minimum change of the median (the policy's
//    regression / improvement threshold) are both needed for REGRESSION or IMPROVEMENT —
//    Google Benchmark compare.py's statistics with Perfherder's minimum change. Significant but
//    smaller changes, and large changes that are not significant, PASS.
//  * Single values (size_bytes, top1, top5): the minimum change alone.
//  * UNCERTAIN (sampled metrics): fewer than min_samples samples on a side, sizes for which even
//    complete separation cannot reach alpha, or a coefficient of variation above max_cv on a
//    side. It does not fail the gate; the report asks for more runs.
// A job present in both runs whose candidate FAILED (while the baseline has results), or two
// sides that are the very same recorded job (a run that reused or re-measured the other's job in
// one database), are data errors: the gate cannot vouch for them.
#pragma once
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/gate/mann_whitney.h"
#include "harness/gate/policy.h"
#include "harness/store/store.h"

namespace xnn::gate {

enum class Verdict { kPass, kRegression, kImprovement, kUncertain };
const char* verdict_name(Verdict v);  // "PASS", "REGRESSION", "IMPROVEMENT", "UNCERTAIN"

// One job's results as the gate sees them.
struct JobData {
  std::string db;  // the database it was read from (canonical path), to tell shared jobs apart
  std::string job_id, model, variant, target, status, error;
  std::string producing_run;  // the run that recorded these results (jobs.run_id)
  bool from_gbench = false;   // imported from Google Benchmark (the re-run hint differs)
  std::vector<MetricValue> metrics;
  std::map<std::string, std::vector<double>> samples;
};

struct Comparison {
  std::string model, variant, target, metric;
  std::string unit;  // display unit: "ms", "bytes", "%" (accuracy; changes are in points)
  double baseline = NAN, candidate = NAN;  // medians of the samples, or the values, in `unit`
  double change_rel = NAN;                 // (candidate - baseline) / baseline
  double change_abs = NAN;                 // candidate - baseline, in `unit`
  bool sampled = false;                    // decided with the Mann-Whitney test
  double p_value = NAN;                    // sampled metrics only
  bool exact = false;                      // the exact distribution gave p_value
  size_t n_baseline = 0, n_candidate = 0;  // samples (sampled metrics)
  double cv_baseline = NAN, cv_candidate = NAN;
  bool higher_is_better = false;
  MetricRule rule;
  Verdict verdict = Verdict::kPass;
  std::string reason;  // one line: why this verdict
  std::string hint;    // UNCERTAIN: what to run to decide
};

// A job the gate could not compare.
struct NotCompared {
  std::string model, variant, target;
  std::string reason;
  bool error = false;  // a data error (exit 2), not just a job that is only in one run
};

struct GateReport {
  std::vector<Comparison> comparisons;  // baseline job order, then metric order
  std::vector<NotCompared> not_compared;
  size_t count(Verdict v) const;
  size_t errors() const;
  // 1 with a regression; 2 with a data error or nothing to compare; else 0.
  int exit_code() const;
};

// Every gated metric the two jobs both have (a metric switched off in the policy is left out).
std::vector<Comparison> compare_jobs(const JobData& baseline, const JobData& candidate, const Policy& policy);

// Matches the jobs of two runs by (model, variant, target) and compares them.
GateReport gate_runs(const std::vector<JobData>& baseline, const std::vector<JobData>& candidate, const Policy& policy);

// A resolved run selector: the database it lives in and the run.
struct RunSide {
  std::unique_ptr<Store> store;
  std::string db;  // canonical path of the database
  RunRecord run;
};

// `sel` is a run id (or unique prefix), `commit:<sha>` (newest FINISHED run whose commit starts
// with sha), `tag:<name>` (newest FINISHED run with that tag), or `<file.db>:<any of these>` for a
// run in another database; others resolve in `default_db`. A run named by id must not be RUNNING.
// Throws xnn::Error naming the selector and the database when nothing matches.
RunSide resolve_run_side(const std::string& sel, const std::string& default_db);

// The jobs a run covers, with metrics and raw samples.
std::vector<JobData> load_jobs(Store& store, const std::string& db, const std::string& run_id);

}  // namespace xnn::gate
