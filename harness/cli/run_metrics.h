// Prometheus metrics of one `xnn-lab run` (the CLI wires the metrics library to the runner's
// observer; the runner knows nothing of Prometheus):
//   --metrics-listen ADDR  live /metrics while the run lasts
//   --push-gateway URL     push-add to a Pushgateway at the end (job "xnn-lab", grouped by
//                          instance and experiment), with a last-success timestamp on success
//   --textfile DIR         node_exporter textfile DIR/xnn_lab.prom, atomically, at the end
//                          (and after each job with --textfile-each-job)
//
// Metrics (labels bounded by the experiment config; no run ids or commits):
//   xnn_lab_run_jobs{experiment,state}                   gauge: planned, done, failed, skipped, remaining
//   xnn_lab_run_jobs_finished_total{experiment,outcome}  counter: done, failed, skipped
//   xnn_lab_run_job_duration_seconds{experiment}         histogram of executed jobs' wall time
//   xnn_lab_run_duration_seconds{experiment}             gauge: time since the run started
//   xnn_lab_run_in_progress{experiment}                  gauge: 1 while running, then 0
//   xnn_lab_last_success_timestamp_seconds{experiment}   gauge, only after a run with no failure
//   plus the result gauges of store_metrics.h for every job as it is recorded.
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "harness/metrics/registry.h"
#include "harness/metrics/store_metrics.h"
#include "harness/runner/runner.h"

namespace xnn::cli {

inline constexpr char kPushJobName[] = "xnn-lab";

class RunMetrics : public RunObserver, public metrics::Collectable {
 public:
  // `store`: the run's store (read on the runner's thread for skipped jobs' timestamps).
  // `textfile_each_job`: write DIR/xnn_lab.prom after every job, not only at the end.
  RunMetrics(Store& store, std::string textfile_dir, bool textfile_each_job);

  void run_started(const std::string& run_id, const std::string& experiment, size_t planned_jobs) override;
  void job_started(size_t index, const JobPlan& plan) override;
  void job_finished(size_t index, const JobOutcome& outcome) override;
  void run_finished(const RunOutcome& outcome) override;

  // Thread-safe (scrapes): refreshes the run duration, then collects.
  std::vector<metrics::MetricFamily> Collect() const override;

  // Writes the textfile now (no-op without a folder); false (message on stderr) if it failed.
  bool write_textfile();
  // Push-adds everything to the Pushgateway at `url`, grouped by job "xnn-lab", `instance` and
  // the experiment; false (message on stderr) if the gateway did not accept it.
  bool push(const std::string& url, const std::string& instance);

 private:
  void set_counts();
  Store& store_;
  std::string textfile_dir_;
  bool textfile_each_job_;
  std::shared_ptr<metrics::Registry> registry_ = std::make_shared<metrics::Registry>();
  metrics::ResultGauges results_;
  metrics::Family<metrics::Gauge>& jobs_;
  metrics::Family<metrics::Counter>& finished_;
  metrics::Family<metrics::Histogram>& job_duration_;
  metrics::Family<metrics::Gauge>& run_duration_;
  metrics::Family<metrics::Gauge>& in_progress_;

  mutable std::mutex mutex_;  // the fields below
  std::string experiment_;
  bool running_ = false;
  std::chrono::steady_clock::time_point run_start_, job_start_;
  size_t planned_ = 0, done_ = 0, failed_ = 0, skipped_ = 0;
};

// Host name for the Pushgateway's instance label.
std::string local_hostname();

}  // namespace xnn::cli
