// The experiment runner: config -> job plan -> execute on targets -> store. Jobs are the
// cross product models x variants x targets; each has a deterministic id (hash of its resolved
// spec and its model file's content), so a job recorded as DONE is skipped on the next run of
// the same config (resume after Ctrl-C, kill -9 or a crash), unless forced.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/config/experiment_config.h"
#include "harness/steps/step.h"
#include "harness/store/store.h"
#include "harness/targets/target.h"

namespace xnn {

struct JobPlan {
  std::string id;
  config::ModelSpec model;
  config::VariantSpec variant;
  config::TargetSpec target;
  std::string spec_json;  // what the id hashes (with the model file's SHA-256)
};

// Validates every step against the registry (errors name the config location) and computes ids.
std::vector<JobPlan> plan_jobs(const config::ExperimentConfig& config, const StepRegistry& steps);

class RunObserver;

struct RunnerOptions {
  bool force = false;             // re-run jobs already recorded
  std::string git_commit;         // xnn-lab's commit, recorded with the run
  std::string command_line;       // recorded with the run
  std::string tag;                // optional run tag
  std::string config_text;        // the config file as written
  // Progress lines (plain) go here; on a TTY the runner draws a progress bar on stderr instead.
  std::function<void(const std::string&)> log;
  // Progress events (e.g. the CLI's Prometheus exporter); null: none. Not owned.
  RunObserver* observer = nullptr;
};

struct JobOutcome {
  JobPlan plan;
  bool reused = false;
  std::string status;  // DONE / FAILED
  std::string error;
  std::vector<MetricValue> metrics;
};

struct RunOutcome {
  std::string run_id;
  std::string status;  // FINISHED, FAILED (some job failed) or KILLED (interrupted)
  std::vector<JobOutcome> jobs;
  int executed = 0, reused = 0, failed = 0;
};

// Progress events of one run, called on the runner's thread in order: run_started, then per
// job job_started (executed jobs only) and job_finished (every job: executed, or recorded earlier
// and skipped, `outcome.reused`), then run_finished (also after an interrupt). Every method is a
// no-op by default; an exception from an observer propagates out of run_experiment.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void run_started(const std::string& run_id, const std::string& experiment, size_t planned_jobs) {}
  virtual void job_started(size_t index, const JobPlan& plan) {}
  virtual void job_finished(size_t index, const JobOutcome& outcome) {}
  virtual void run_finished(const RunOutcome& outcome) {}
};

RunOutcome run_experiment(const config::ExperimentConfig& config, Store& store, const StepRegistry& steps,
                          const TargetRegistry& targets, const RunnerOptions& options);

// Set by SIGINT/SIGTERM handlers installed for the duration of run_experiment: the runner stops
// after the current job and marks the run KILLED.
bool interrupt_requested();

// Hex SHA-256 of a file's content; throws naming the file if it cannot be read.
std::string file_sha256(const std::string& path);

// A metric by name from a list (NaN if absent).
double metric_value(const std::vector<MetricValue>& metrics, const std::string& name);

}  // namespace xnn
