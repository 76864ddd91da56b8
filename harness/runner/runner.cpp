#include "harness/runner/runner.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "engine/core/error.h"
#include "engine/core/sha256.h"
#include "engine/runtime/graph_cost.h"
#include "engine/runtime/model_io.h"
#include "harness/data/fashion_mnist.h"
#include "harness/eval/evaluate.h"
#include "harness/util/json.h"

namespace xnn {
namespace fs = std::filesystem;

namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted = true; }

// Installs SIGINT/SIGTERM handlers for its lifetime.
class InterruptScope {
 public:
  InterruptScope() {
    g_interrupted = false;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~InterruptScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

std::string step_list_json(const std::vector<std::unique_ptr<Step>>& steps) {
  json::Writer w;
  w.begin_array();
  for (const auto& s : steps) w.value(s->describe());
  w.end_array();
  return w.str();
}

std::string metrics_json(const config::Metrics& m) {
  json::Writer w;
  w.begin_object();
  w.key("latency").begin_object().field("enabled", m.latency.enabled).field("warmup", m.latency.warmup);
  w.field("runs", m.latency.runs).field("min_time", m.latency.min_time).field("max_runs", m.latency.max_runs);
  w.field("profile", m.latency.profile).end_object();
  w.field("size", m.size.enabled).field("memory", m.memory.enabled);
  w.key("accuracy").begin_object().field("enabled", m.accuracy.enabled).field("dataset", m.accuracy.dataset);
  w.field("split", m.accuracy.split).field("limit", m.accuracy.limit).field("path", m.accuracy.path).end_object();
  w.end_object();
  return w.str();
}

data::Preprocess to_data_preprocess(const config::Preprocess& p) {
  data::Preprocess d;
  d.scale = static_cast<float>(p.scale);
  d.mean = p.mean;
  d.std = p.std;
  d.layout = p.layout;
  return d;
}

TargetSettings to_settings(const config::TargetSpec& t) { return TargetSettings{t.name, t.kind, t.threads, t.affinity}; }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

// Progress: a bar with ETA on a terminal, plain lines otherwise.
class Progress {
 public:
  Progress(size_t total, std::function<void(const std::string&)> log)
      : total_(total), log_(std::move(log)), tty_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}
  void job_started(size_t index, const JobPlan& p) {
    current_ = p.model.name + " / " + p.variant.name + " / " + p.target.name;
    if (tty_) draw(index);
  }
  void job_finished(size_t index, const std::string& status, const std::string& detail) {
    const std::string line = "[" + std::to_string(index + 1) + "/" + std::to_string(total_) + "] " + current_ + ": " +
                             status + (detail.empty() ? "" : " (" + detail + ")");
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s\n", line.c_str());
      draw(index + 1);
    } else if (log_) {
      log_(line);
    }
  }
  void done() {
    if (tty_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  void draw(size_t finished) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const int width = 30;
    const int filled = total_ ? static_cast<int>(width * finished / total_) : width;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(width, '.');
    std::string eta = finished ? fmt("%.0f s", elapsed / static_cast<double>(finished) * static_cast<double>(total_ - finished)) : "?";
    std::fprintf(stderr, "\r\033[K[%s] %zu/%zu ETA %s  %s", bar.c_str(), finished, total_, eta.c_str(), current_.c_str());
    std::fflush(stderr);
  }
  size_t total_;
  std::function<void(const std::string&)> log_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  std::string current_;
};

}  // namespace

bool interrupt_requested() { return g_interrupted; }

std::string file_sha256(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read file");
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return sha256_hex(bytes);
}

double metric_value(const std::vector<MetricValue>& metrics, const std::string& name) {
  for (const MetricValue& m : metrics) {
    if (m.name == name) return m.value;
  }
  return std::nan("");
}

std::vector<JobPlan> plan_jobs(const config::ExperimentConfig& cfg, const StepRegistry& registry) {
  std::map<std::string, std::string> model_hashes;
  for (const auto& m : cfg.models) model_hashes[m.path] = file_sha256(m.path);
  std::vector<JobPlan> plans;
  for (const auto& model : cfg.models) {
    for (const auto& variant : cfg.variants) {
      std::vector<std::unique_ptr<Step>> steps;
      for (const auto& s : variant.steps) steps.push_back(registry.create(s.type, s.params, s.location));
      for (const auto& target : cfg.targets) {
        JobPlan p{"", model, variant, target, ""};
        json::Writer w;
        w.begin_object().field("experiment", cfg.name);
        w.key("model").begin_object().field("name", model.name).field("sha256", model_hashes[model.path]);
        w.field("scale", model.preprocess.scale).field("layout", model.preprocess.layout);
        w.key("mean").begin_array();
        for (float v : model.preprocess.mean) w.value(static_cast<double>(v));
        w.end_array().key("std").begin_array();
        for (float v : model.preprocess.std) w.value(static_cast<double>(v));
        w.end_array().end_object();
        w.key("variant").begin_object().field("name", variant.name).key("steps").raw(step_list_json(steps)).end_object();
        w.key("target").begin_object().field("name", target.name).field("kind", target.kind).field("threads", target.threads);
        w.key("affinity").begin_array();
        for (int c : target.affinity) w.value(c);
        w.end_array().end_object();
        w.key("metrics").raw(metrics_json(cfg.metrics));
        w.end_object();
        p.spec_json = w.str();
        p.id = sha256_hex(p.spec_json).substr(0, 20);
        plans.push_back(std::move(p));
      }
    }
  }
  return plans;
}

namespace {

// Executes one job; throws on failure (the caller records the error).
JobResult execute_job(const config::ExperimentConfig& cfg, const JobPlan& plan, const StepRegistry& steps,
                      const TargetRegistry& targets, const fs::path& artifact_dir,
                      std::map<std::string, data::Dataset>& dataset_cache) {
  JobResult r;
  fs::create_directories(artifact_dir);
  std::string model_path = plan.model.path;
  auto add = [&](const std::string& name, double v, const std::string& unit) { r.metrics.push_back({name, v, unit}); };
  for (const auto& s : plan.variant.steps) {
    auto step = steps.create(s.type, s.params, s.location);
    model_path = step->apply(model_path, StepContext{artifact_dir.string(), s.location, add});
  }
  auto target = targets.create(to_settings(plan.target));
  const config::Metrics& m = cfg.metrics;

  if (m.size.enabled) {
    auto model = load_model(model_path);
    const GraphCost cost = estimate_graph_cost(model->graph);
    add("size_bytes", static_cast<double>(fs::file_size(model_path)), "bytes");
    add("parameters", static_cast<double>(model->graph.parameter_count()), "count");
    add("macs", cost.total.macs, "count");
  }
  if (m.latency.enabled || m.memory.enabled) {
    LatencySpec spec{m.latency.warmup, m.latency.runs, m.latency.min_time, m.latency.max_runs};
    if (!m.latency.enabled) spec = LatencySpec{0, 1, 0.0, 1};  // one run to measure memory
    const LatencyMeasurement lm = target->measure_latency(model_path, spec, m.latency.enabled && m.latency.profile);
    if (m.latency.enabled) {
      const LatencyStats st = summarize(lm.run.samples_ms);
      r.samples["latency_ms"] = lm.run.samples_ms;
      for (const NamedMetric& lm_metric : latency_metrics(st)) add(lm_metric.name, lm_metric.value, lm_metric.unit);
      add("init_ms", lm.init_ms, "ms");
      add("first_run_ms", lm.run.first_run_ms, "ms");
      for (const OpTiming& o : lm.ops) {
        r.op_profiles.push_back(OpProfileRow{static_cast<int64_t>(o.node_index), o.node_name, o.op_type, o.kernel, o.shapes,
                                             static_cast<int64_t>(o.macs), static_cast<int64_t>(o.bytes), o.time_ms});
      }
    }
    if (m.memory.enabled) {
      // A simulated target has no process whose memory could be measured: it reports what its
      // model predicts for activations (if anything), never a peak RSS of this host.
      if (!target->simulated()) add("peak_rss_bytes", static_cast<double>(lm.peak_rss_bytes), "bytes");
      if (!target->simulated() || lm.activation_bytes > 0) {
        add("activation_bytes", static_cast<double>(lm.activation_bytes), "bytes");
      }
    }
  }
  if (m.accuracy.enabled) {
    const std::string key = m.accuracy.path + "|" + m.accuracy.split + "|" + std::to_string(m.accuracy.limit);
    auto it = dataset_cache.find(key);
    if (it == dataset_cache.end()) {
      it = dataset_cache.emplace(key, data::load_fashion_mnist(m.accuracy.path, m.accuracy.split, m.accuracy.limit)).first;
    }
    auto session = target->open_session(model_path);
    const eval::AccuracyResult acc = eval::evaluate_classifier(*session, it->second, to_data_preprocess(plan.model.preprocess));
    add("top1", acc.top1, "ratio");
    add("top5", acc.top5, "ratio");
    add("accuracy_samples", static_cast<double>(acc.samples), "count");
  }
  r.artifacts.push_back(ArtifactRecord{"model", fs::absolute(model_path).string(), file_sha256(model_path),
                                       static_cast<int64_t>(fs::file_size(model_path))});
  r.status = job_status::kDone;
  return r;
}

std::string short_detail(const std::vector<MetricValue>& metrics) {
  const double med = metric_value(metrics, "latency_ms_median");
  const double top1 = metric_value(metrics, "top1");
  std::string s;
  if (!std::isnan(med)) s += fmt("median %.3f ms", med);
  if (!std::isnan(top1)) s += (s.empty() ? "" : ", ") + fmt("top-1 %.2f%%", top1 * 100);
  return s;
}

}  // namespace

RunOutcome run_experiment(const config::ExperimentConfig& cfg, Store& store, const StepRegistry& steps,
                          const TargetRegistry& targets, const RunnerOptions& opt) {
  const std::vector<JobPlan> plans = plan_jobs(cfg, steps);
  InterruptScope interrupts;
  RunOutcome out;

  store.ensure_experiment(cfg.name, cfg.file);
  const int64_t env_id = store.ensure_environment(Environment::capture(opt.git_commit));
  for (const auto& t : cfg.targets) {
    auto target = targets.create(to_settings(t));
    store.ensure_target(TargetRecord{0, t.name, t.kind, target->simulated(), target->describe_json()});
  }
  RunRecord run;
  run.experiment = cfg.name;
  run.config_path = cfg.file;
  run.config_hash = config::config_hash(cfg);
  run.config_text = opt.config_text;
  run.git_commit = opt.git_commit;
  if (!opt.tag.empty()) run.tag = opt.tag;
  run.environment_id = env_id;
  run.command = opt.command_line;
  out.run_id = store.create_run(run);
  RunObserver no_observer;
  RunObserver& observer = opt.observer ? *opt.observer : no_observer;
  observer.run_started(out.run_id, cfg.name, plans.size());

  const fs::path artifacts_root = fs::path(store.path()).parent_path() / "artifacts";
  std::map<std::string, data::Dataset> dataset_cache;
  Progress progress(plans.size(), opt.log);
  for (size_t i = 0; i < plans.size(); ++i) {
    const JobPlan& p = plans[i];
    JobOutcome jo{p, false, job_status::kDone, "", {}};
    if (interrupt_requested()) break;
    if (!opt.force && store.is_job_done(p.id)) {
      store.link_job_to_run(out.run_id, p.id, true);
      jo.reused = true;
      jo.metrics = store.metrics_of_job(p.id);
      ++out.reused;
      progress.job_started(i, p);
      progress.job_finished(i, "recorded earlier, skipped", short_detail(jo.metrics));
      observer.job_finished(i, jo);
      out.jobs.push_back(std::move(jo));
      continue;
    }
    JobRecord rec;
    rec.id = p.id;
    rec.run_id = out.run_id;
    rec.experiment = cfg.name;
    rec.model = p.model.name;
    rec.variant = p.variant.name;
    rec.target = p.target.name;
    rec.spec_json = p.spec_json;
    store.start_job(rec);
    progress.job_started(i, p);
    observer.job_started(i, p);
    JobResult result;
    try {
      result = execute_job(cfg, p, steps, targets, artifacts_root / p.id, dataset_cache);
    } catch (const std::exception& e) {
      result = JobResult{};
      result.status = job_status::kFailed;
      result.error = e.what();
    }
    store.finish_job(p.id, result);
    ++out.executed;
    jo.status = result.status;
    jo.error = result.error;
    jo.metrics = result.metrics;
    if (result.status == job_status::kFailed) ++out.failed;
    progress.job_finished(i, result.status == job_status::kDone ? "done" : "FAILED",
                          result.status == job_status::kDone ? short_detail(result.metrics) : result.error);
    observer.job_finished(i, jo);
    out.jobs.push_back(std::move(jo));
  }
  progress.done();
  out.status = interrupt_requested() ? run_status::kKilled : (out.failed ? run_status::kFailed : run_status::kFinished);
  store.finish_run(out.run_id, out.status);
  observer.run_finished(out);
  return out;
}

}  // namespace xnn
