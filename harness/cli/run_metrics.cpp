#include "harness/cli/run_metrics.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "harness/metrics/push_gateway.h"
#include "harness/metrics/textfile.h"

namespace xnn::cli {

using namespace metrics;

namespace {
const Histogram::BucketBoundaries kJobBuckets{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

std::string local_hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == 0) return "localhost";
  return buf;
}

RunMetrics::RunMetrics(Store& store, std::string textfile_dir, bool textfile_each_job)
    : store_(store),
      textfile_dir_(std::move(textfile_dir)),
      textfile_each_job_(textfile_each_job),
      results_(*registry_),
      jobs_(BuildGauge()
                .Name("xnn_lab_run_jobs")
                .Help("Jobs of the current run by state: planned, done, failed, skipped (recorded earlier), remaining")
                .Register(*registry_)),
      finished_(BuildCounter()
                    .Name("xnn_lab_run_jobs_finished_total")
                    .Help("Jobs finished by this process, by outcome: done, failed, skipped (recorded earlier)")
                    .Register(*registry_)),
      job_duration_(BuildHistogram()
                        .Name("xnn_lab_run_job_duration_seconds")
                        .Help("Wall time of each executed job (steps, measurements, recording)")
                        .Register(*registry_)),
      run_duration_(BuildGauge().Name("xnn_lab_run_duration_seconds").Help("Time since the run started (final once it ended)").Register(*registry_)),
      in_progress_(BuildGauge().Name("xnn_lab_run_in_progress").Help("1 while the run executes jobs, 0 once it ended").Register(*registry_)) {}

void RunMetrics::set_counts() {
  auto state = [&](const char* s) -> Gauge& { return jobs_.Add({{"experiment", experiment_}, {"state", s}}); };
  state("planned").Set(static_cast<double>(planned_));
  state("done").Set(static_cast<double>(done_));
  state("failed").Set(static_cast<double>(failed_));
  state("skipped").Set(static_cast<double>(skipped_));
  state("remaining").Set(static_cast<double>(planned_ - done_ - failed_ - skipped_));
}

void RunMetrics::run_started(const std::string&, const std::string& experiment, size_t planned_jobs) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    experiment_ = experiment;
    planned_ = planned_jobs;
    running_ = true;
    run_start_ = std::chrono::steady_clock::now();
    set_counts();
    for (const char* outcome : {"done", "failed", "skipped"}) finished_.Add({{"experiment", experiment_}, {"outcome", outcome}});
    job_duration_.Add({{"experiment", experiment_}}, kJobBuckets);
    run_duration_.Add({{"experiment", experiment_}}).Set(0);
    in_progress_.Add({{"experiment", experiment_}}).Set(1);
  }
  if (textfile_each_job_) write_textfile();
}

void RunMetrics::job_started(size_t, const JobPlan&) {
  std::lock_guard<std::mutex> lock(mutex_);
  job_start_ = std::chrono::steady_clock::now();
}

void RunMetrics::job_finished(size_t, const JobOutcome& o) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const char* outcome = o.reused ? "skipped" : (o.status == job_status::kDone ? "done" : "failed");
    if (o.reused) ++skipped_;
    else if (o.status == job_status::kDone) ++done_;
    else ++failed_;
    finished_.Add({{"experiment", experiment_}, {"outcome", outcome}}).Increment();
    set_counts();
    if (!o.reused) job_duration_.Add({{"experiment", experiment_}}, kJobBuckets).Observe(seconds_since(job_start_));
    run_duration_.Add({{"experiment", experiment_}}).Set(seconds_since(run_start_));
    if (o.status == job_status::kDone) {
      // A skipped job's result was recorded by an earlier run: its own time, from the store.
      double when = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      if (o.reused) {
        const auto job = store_.get_job(o.plan.id);
        when = job ? ParseUtcIso(job->finished_at) : std::nan("");
      }
      results_.Set(ResultKey{experiment_, o.plan.model.name, o.plan.variant.name, o.plan.target.name}, o.metrics, when);
    }
  }
  if (textfile_each_job_) write_textfile();
}

void RunMetrics::run_finished(const RunOutcome& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_ = false;
  run_duration_.Add({{"experiment", experiment_}}).Set(seconds_since(run_start_));
  in_progress_.Add({{"experiment", experiment_}}).Set(0);
  if (out.status == run_status::kFinished) {
    // Registered only on success: a push-add after a failed run leaves the previous value.
    BuildGauge()
        .Name(kLastSuccessTimestampSeconds)
        .Help("When a run of the experiment last finished with every job done (Unix seconds)")
        .Register(*registry_)
        .Add({{"experiment", experiment_}})
        .SetToCurrentTime();
  }
}

std::vector<MetricFamily> RunMetrics::Collect() const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_) run_duration_.Add({{"experiment", experiment_}}).Set(seconds_since(run_start_));
  }
  return registry_->Collect();
}

bool RunMetrics::write_textfile() {
  if (textfile_dir_.empty()) return true;
  try {
    WriteTextfile(textfile_dir_, Collect());
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: %s\n", e.what());
    return false;
  }
}

bool RunMetrics::push(const std::string& url, const std::string& instance) {
  std::string experiment;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    experiment = experiment_;
  }
  try {
    Gateway gateway(url, kPushJobName, {{"instance", instance}, {"experiment", experiment}});
    gateway.RegisterCollectable(registry_);
    const int status = gateway.PushAdd();
    if (status >= 200 && status <= 299) {
      std::fprintf(stderr, "pushed metrics to %s\n", gateway.GroupUrl().c_str());
      return true;
    }
    std::fprintf(stderr, "error: push to the Pushgateway failed: %s\n", gateway.LastError().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: push to the Pushgateway failed: %s\n", e.what());
  }
  return false;
}

}  // namespace xnn::cli
