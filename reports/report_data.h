// Report data: everything `xnn-lab report` shows, gathered from the results store into plain
// structs, so the HTML and Markdown writers never touch SQLite and tests can build the structs
// by hand. The baseline comparison is the gate library's (harness/gate/gate.h), so its verdicts
// are the ones `xnn-lab gate` prints for the same two runs and policy.
#pragma once
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "harness/gate/gate.h"
#include "harness/store/store.h"

namespace xnn::reports {

// One job of the reported run.
struct JobSummary {
  std::string job_id, model, variant, target, target_kind, status, error;
  bool simulated = false;  // the target's flag: results from a device model
  bool reused = false;     // the run found it recorded and did not execute it again
  std::vector<MetricValue> metrics;
  // Per-op profile: the slowest ops first (at most ReportOptions::top_ops), the rest summed up.
  std::vector<OpProfileRow> top_ops;
  size_t op_count = 0;        // ops in the whole profile
  double ops_total_ms = 0;    // sum of every op's time
  double other_ops_ms = 0;    // time of the ops not in top_ops
  // Training runs (xnn-lab train): per-epoch series; empty for measured jobs.
  std::vector<double> epoch_test_accuracy, epoch_train_loss;

  double metric(const std::string& name) const;  // NaN when not recorded
  std::string label() const;                     // "model / variant"
};

// One point of an accuracy-vs-latency scatter.
struct ParetoPoint {
  size_t job = 0;  // index into ReportData::jobs
  double latency_ms = NAN;
  double accuracy = NAN;  // top-1, 0..1
  bool on_front = false;
};

// The scatter of one target: every DONE job with both a latency median and a top-1.
struct TargetScatter {
  std::string target;
  bool simulated = false;
  std::vector<ParetoPoint> points;  // in job order
};

// For points (latency, accuracy): true where no other point is at least as fast and at least as
// accurate while strictly better in one of the two (lower latency, higher accuracy). Equal
// points do not dominate each other. NaN coordinates are never on the front.
std::vector<bool> pareto_front(const std::vector<double>& latency, const std::vector<double>& accuracy);

struct BaselineComparison {
  RunRecord run;   // the baseline run
  std::string db;  // the database it was read from
  std::string policy_source;
  gate::GateReport gate;  // candidate = the reported run
};

struct ReportData {
  std::string db;  // the database the reported run was read from
  RunRecord run;
  bool run_orphaned = false;  // RUNNING but its process is gone
  std::optional<Environment> environment;
  std::vector<JobSummary> jobs;  // link order
  std::vector<TargetScatter> scatters;  // one per target with at least one point
  std::optional<BaselineComparison> baseline;
  std::string generated_at;  // UTC ISO 8601
  std::string xnn_version;   // the xnn-lab that wrote the report

  bool has_training() const;  // some job has epoch series
};

struct ReportOptions {
  std::string db = "xnn-lab.db";
  std::string experiment;    // empty: the whole database
  std::string run;           // selector; empty: the latest FINISHED run (of `experiment`)
  std::string baseline;      // gate selector; empty: no comparison
  std::string policy;        // gate policy file; empty: the built-in defaults
  size_t top_ops = 8;        // ops per job in the breakdown
};

// Opens the database read-only, resolves the run (and baseline) and gathers everything. Throws
// xnn::Error with a message that names the database and the selector: no database, an empty
// database, an unknown experiment, no matching run, a baseline that is the reported run.
ReportData gather_report(const ReportOptions& options);

// The same from an open store and a resolved run (tests; the baseline is left out).
ReportData gather_run(Store& store, const std::string& db, const RunRecord& run, size_t top_ops = 8);

// Fills ReportData::scatters from the jobs (pareto_front per target).
void compute_scatters(ReportData& data);

// ---- display formatting shared by the HTML and Markdown writers ----

// A summary-table column: a recorded metric and how to show it.
struct SummaryColumn {
  const char* title;   // "median ms"
  const char* metric;  // "latency_ms_median"
  const char* kind;    // "ms", "bytes", "count", "pct" (a 0..1 ratio shown in percent)
};
// The columns the report's summary shows for these jobs: latency median/p90, size, parameters,
// MACs, top-1, top-5, peak RSS, each only when at least one job recorded it.
std::vector<SummaryColumn> summary_columns(const std::vector<JobSummary>& jobs);
// "-" for NaN; ms with 4 significant digits, bytes as B/KiB/MiB, counts with k/M/G, pct as %.
std::string format_value(double v, const std::string& kind);

// The gate's presentation of a comparison (as `xnn-lab gate` prints it): a value in its display
// unit, the change (accuracy in points, the rest relative), the p-value, and the counts line.
std::string gate_value_text(double v, const std::string& unit);
std::string gate_change_text(const gate::Comparison& c);
std::string gate_p_text(const gate::Comparison& c);
std::string gate_counts_text(const gate::GateReport& rep);
// "PASS", "FAIL" (a regression) or "ERROR" (a data error or nothing compared), as the gate says.
std::string gate_overall(const gate::GateReport& rep);

}  // namespace xnn::reports
