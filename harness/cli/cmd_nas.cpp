// xnn-lab nas CONFIG.yaml [KEY.PATH=VALUE...] [--db FILE] [--json]
// Black-box architecture search (nas/blackbox_search.h; schema configs/nas/README.md): runs or
// resumes the study, prints a line per trial with the current Pareto front, trains and measures
// the baselines, exports the front (.xnn, .onnx), then measures the front and the baselines
// through the harness (an `xnn-lab run` of <output>/measure.yaml into the same database), so
// list/show/report/gate see them. --json prints the front and the baselines, each with top1,
// latency_ms (the harness's measurements), params, model and preprocess; with
// latency.confirm_rounds, dominated_baselines comes from back-to-back rounds (nas/dominance.h),
// listed as dominance_checks.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "engine/core/error.h"
#include "harness/cli/commands.h"
#include "harness/cli/registries.h"
#include "harness/runner/runner.h"
#include "harness/util/json.h"
#include "harness/predict/calibration.h"
#include "nas/blackbox_search.h"
#include "nas/hardware_feedback.h"
#include "nas/darts/darts_search.h"
#include "nas/dominance.h"
#include "nas/oneshot/objective_server.h"
#include "nas/oneshot/oneshot_search.h"

namespace xnn::cli {
namespace fs = std::filesystem;
namespace {

// Replaces the search's numbers with the harness job's (what `bench`/`eval` re-measure).
void apply_job_metrics(const RunOutcome& out, std::vector<nas::CandidateResult>& results) {
  for (nas::CandidateResult& r : results) {
    for (const JobOutcome& j : out.jobs) {
      if (j.plan.model.name != r.name || j.status != job_status::kDone) continue;
      const double top1 = metric_value(j.metrics, "top1");
      const double latency = metric_value(j.metrics, "latency_ms_median");
      if (std::isfinite(top1)) r.top1 = top1;
      if (std::isfinite(latency)) r.latency_ms = latency;
    }
  }
}

void write_point(json::Writer& w, const nas::CandidateResult& r, const nas::NasConfig& cfg) {
  w.begin_object().field("name", r.name);
  if (r.trial >= 0) w.field("trial", r.trial);
  w.field("arch", r.arch).field("top1", r.top1).field("latency_ms", r.latency_ms).field("params", r.params);
  w.field("size_bytes", r.size_bytes).field("model", r.xnn_path).field("onnx", r.onnx_path);
  w.key("preprocess").begin_object().field("scale", 1.0 / 255.0).field("mean", static_cast<double>(cfg.recipe.mean));
  w.field("std", static_cast<double>(cfg.recipe.std)).field("layout", "NCHW").end_object();
  w.end_object();
}

std::string fmt_ratio(double r) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", r);
  return b;
}
std::string fmt_percent(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", 100 * v);
  return b;
}

void write_check(json::Writer& w, const nas::DominanceCheck& c) {
  w.begin_object().field("baseline", c.baseline).field("candidate", c.candidate);
  w.field("rounds", static_cast<int64_t>(c.ratios.size())).field("median_ratio", c.median_ratio);
  w.key("ratios").begin_array();
  for (double r : c.ratios) w.value(r);
  w.end_array().key("candidate_ms").begin_array();
  for (double v : c.candidate_ms) w.value(v);
  w.end_array().key("baseline_ms").begin_array();
  for (double v : c.baseline_ms) w.value(v);
  w.end_array().field("dominates", c.dominates).end_object();
}

// The search the config's `method` names. Each method returns the same SearchResult (front and
// baselines exported), so measuring, printing and --json below are shared.
nas::SearchResult run_search(const nas::NasConfig& cfg, Store& store, const nas::LatencyFn& latency,
                             const train::ProgressFn& log) {
  if (cfg.method == "blackbox") return nas::run_blackbox_search(cfg, store, latency, log);
  if (cfg.method == "oneshot") return nas::run_oneshot_search(cfg, store, latency, log);
  if (cfg.method == "darts") return nas::run_darts_search(cfg, store, latency, log);
  throw Error(cfg.file + ": method '" + cfg.method + "' is not available in this build of xnn-lab");
}

}  // namespace

void add_nas_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("nas", "Architecture search over a MobileNet-like space (method: blackbox = random, evolution, "
                                        "TPE, NSGA-II; oneshot = SPOS supernet; darts = differentiable): train, "
                                        "measure, export the Pareto front");
  static std::string config_path, db_path = "xnn-lab.db";
  static std::vector<std::string> overrides;
  static bool as_json = false, objective_server = false;
  cmd->add_option("config", config_path, "NAS config (YAML), e.g. configs/nas/fmnist_evolution.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("overrides", overrides, "KEY.PATH=VALUE overrides, e.g. trials=5 train.epochs=1");
  cmd->add_option("--db", db_path, "Results store (SQLite): the study, its trials and the measurement jobs")
      ->capture_default_str();
  cmd->add_flag("--json", as_json, "Print the final front and the baselines as JSON (progress goes to stderr)");
  cmd->add_flag("--objective-server", objective_server,
                "method oneshot: train (or load) the supernet, then score subnets for requests on stdin "
                "(protocol: nas/oneshot/objective_server.h), so other search libraries drive the same objective");
  cmd->footer("An interrupted search resumes from the database: run the same command again.");
  cmd->callback([&exit_code] {
    const nas::NasConfig cfg = nas::load_nas_config(config_path, overrides);
    TargetSettings ts;
    ts.name = cfg.latency.target;
    ts.kind = cfg.latency.target;
    ts.threads = cfg.latency.threads;
    if (!target_registry().knows(ts.kind)) {
      throw Error(config_path + ": latency.target '" + ts.kind + "' is not a known target kind");
    }
    std::unique_ptr<Target> target = target_registry().create(ts);
    const nas::LatencyFn latency = nas::make_latency_fn(cfg.latency, target.get());
    const auto log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    if (objective_server) {
      if (cfg.method != "oneshot") {
        throw Error(config_path + ": --objective-server serves the one-shot subnet objective; method is '" + cfg.method +
                    "', not oneshot");
      }
      nas::serve_subnet_objective(cfg, latency, std::cin, std::cout, log);
      return;
    }
    Store store(db_path);
    if (cfg.method == "blackbox") {
      std::fprintf(stderr, "nas %s: %s search, %d trials, output %s, db %s\n", cfg.name.c_str(), cfg.strategy.c_str(),
                   cfg.trials, cfg.output_dir.c_str(), db_path.c_str());
    } else {
      std::fprintf(stderr, "nas %s: %s search, output %s, db %s\n", cfg.name.c_str(), cfg.method.c_str(),
                   cfg.output_dir.c_str(), db_path.c_str());
    }
    nas::SearchResult result = run_search(cfg, store, latency, log);

    // Measure the exported models through the harness.
    const std::string experiment = nas::write_measurement_experiment(cfg, result, fs::absolute(db_path).string());
    config::ExperimentConfig ecfg = config::load_experiment_config(experiment, {}, config_parse_options());
    RunnerOptions opt;
    opt.git_commit = build_commit();
    opt.command_line = "xnn-lab nas " + config_path;
    for (const auto& o : overrides) opt.command_line += " " + o;
    std::ifstream f(experiment);
    opt.config_text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    opt.log = log;
    const RunOutcome out = run_experiment(ecfg, store, step_registry(), target_registry(), opt);
    apply_job_metrics(out, result.front);
    apply_job_metrics(out, result.baselines);

    // Hardware feedback: the top predicted candidates measured on the target refit the predictor.
    std::optional<nas::FeedbackResult> feedback;
    if (cfg.latency.feedback > 0) {
      TargetSettings fts = ts;
      fts.name = predict::target_key(ts.kind, ts.threads);
      std::unique_ptr<Target> feedback_target = target_registry().create(fts);
      feedback = nas::hardware_feedback(cfg, result, store, *feedback_target, log);
    }

    // Dominance: from the harness's figures, or (latency.confirm_rounds) from back-to-back rounds.
    std::vector<std::string> dominated = nas::dominated_baselines(result.front, result.baselines);
    std::vector<nas::DominanceCheck> checks;
    if (cfg.latency.confirm_rounds > 0) {
      nas::LatencySource measured = cfg.latency;
      measured.method = "measured";  // a predictor cannot settle a measured comparison
      checks = nas::confirm_dominance(result.front, result.baselines, nas::make_latency_fn(measured, target.get()),
                                      cfg.latency.confirm_rounds);
      for (const nas::DominanceCheck& c : checks) {
        std::string ratios;
        for (double r : c.ratios) ratios += (ratios.empty() ? "" : " ") + fmt_ratio(r);
        log("dominance " + c.candidate + " vs " + c.baseline + ": top1 " + fmt_percent(c.candidate_top1) + " vs " +
            fmt_percent(c.baseline_top1) + ", latency ratio per round " + ratios + ", median " +
            fmt_ratio(c.median_ratio) + (c.dominates ? ": dominates" : ": does not dominate"));
      }
      dominated = nas::dominated_baselines(checks, result.baselines);
    }
    if (as_json) {
      json::Writer w;
      w.begin_object().field("study", result.study).field("method", cfg.method);
      if (cfg.method == "blackbox") w.field("strategy", cfg.strategy);
      w.field("db", db_path);
      w.field("run", out.run_id).field("complete", result.complete).field("pruned", result.pruned);
      w.field("failed", result.failed).key("front").begin_array();
      for (const auto& r : result.front) write_point(w, r, cfg);
      w.end_array().key("baselines").begin_array();
      for (const auto& r : result.baselines) write_point(w, r, cfg);
      w.end_array().key("dominated_baselines").begin_array();
      for (const auto& n : dominated) w.value(n);
      w.end_array();
      if (cfg.latency.confirm_rounds > 0) {
        w.key("dominance_checks").begin_array();
        for (const auto& c : checks) write_check(w, c);
        w.end_array();
      }
      if (feedback) {
        w.key("feedback").begin_object().field("predictor", feedback->predictor_path);
        w.field("experiment", feedback->experiment).field("calibration_models", feedback->calibration_models);
        w.key("points").begin_array();
        for (const auto& p : feedback->points) {
          w.begin_object().field("name", p.name).field("arch", p.arch).field("model", p.model);
          w.field("predicted_before_ms", p.predicted_before_ms).field("measured_ms", p.measured_ms);
          w.field("predicted_after_ms", p.predicted_after_ms).end_object();
        }
        w.end_array().end_object();
      }
      w.end_object();
      std::printf("%s\n", w.str().c_str());
    } else {
      std::printf("study %s: %d complete, %d pruned, %d failed; measured in run %s\n", result.study.c_str(),
                  result.complete, result.pruned, result.failed, out.run_id.c_str());
      std::printf("%-16s %8s %12s %10s  %s\n", "model", "top1", "latency_ms", "params", "file");
      for (const auto* list : {&result.front, &result.baselines}) {
        for (const auto& r : *list) {
          std::printf("%-16s %7.2f%% %12.4f %10lld  %s\n", r.name.c_str(), 100 * r.top1, r.latency_ms,
                      static_cast<long long>(r.params), r.xnn_path.c_str());
        }
      }
      std::printf("baselines dominated by the front: %zu of %zu%s\n", dominated.size(), result.baselines.size(),
                  cfg.latency.confirm_rounds > 0 ? " (latency judged by back-to-back rounds)" : "");
      if (feedback) {
        std::printf("hardware feedback: predictor refitted on %d calibration models -> %s\n",
                    feedback->calibration_models, feedback->predictor_path.c_str());
        std::printf("  %-16s %14s %12s %14s\n", "model", "predicted ms", "measured ms", "refitted ms");
        for (const auto& p : feedback->points) {
          std::printf("  %-16s %14.4f %12.4f %14.4f\n", p.name.c_str(), p.predicted_before_ms, p.measured_ms,
                      p.predicted_after_ms);
        }
      }
    }
    exit_code = out.failed ? 1 : 0;
  });
}

}  // namespace xnn::cli
