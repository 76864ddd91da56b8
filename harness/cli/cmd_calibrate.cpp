// xnn-lab calibrate --target cpu [--threads N] [--db FILE] [--models N] [--space FILE] [--seed S]
//                   [-o PREDICTOR.json] [--warmup W] [--runs R] [--min-time S] [--passes P]
//                   [--refit-profile NAME [--profile-out FILE]] [--json]
//
// Fits the latency predictor for a target (harness/predict/calibration.h): generates --models
// architectures from the space, measures the ones the store does not hold yet (experiment
// "calibration:<target>-t<threads>", visible to list/show/report), fits on every calibration
// job the store holds for that target and saves the predictor (default: beside the store,
// predictors/<target>-t<threads>.json). Progress goes to stderr. --refit-profile NAME also
// refits that simulated device profile's efficiency curves to the same measurements.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "engine/core/error.h"
#include "harness/cli/commands.h"
#include "harness/cli/registries.h"
#include "harness/predict/calibration.h"
#include "harness/predict/profile_refit.h"
#include "harness/util/json.h"

namespace xnn::cli {
namespace {

struct CalibrateArgs {
  std::string target = "cpu", db = "xnn-lab.db", space, output, refit_profile, profile_out;
  int threads = 1, models = 100, warmup = 3, runs = 15, passes = 10;
  double min_time = 0.2;
  uint64_t seed = 1;
  bool json = false;
};

// The command as recorded with the run (defaults made explicit).
std::string command_line(const CalibrateArgs& a) {
  return "xnn-lab calibrate --target " + a.target + " --threads " + std::to_string(a.threads) + " --models " +
         std::to_string(a.models) + " --seed " + std::to_string(a.seed) + " --passes " + std::to_string(a.passes) +
         " --space " + a.space;
}

int run_calibrate(const CalibrateArgs& a) {
  if (a.target != "cpu") {
    const std::string known = target_registry().knows(a.target) ? "" : " (unknown target kind)";
    throw Error("calibrate --target " + a.target + known + ": only the local CPU ('cpu') is measured for calibration");
  }
  if (a.threads < 1) throw Error("--threads must be >= 1, got " + std::to_string(a.threads));
  const std::string key = predict::target_key(a.target, a.threads);
  Store store(std::filesystem::absolute(a.db).string());
  auto target = target_registry().create(TargetSettings{key, a.target, a.threads, {}});

  predict::ArchSetOptions o;
  o.space_path = a.space.empty() ? predict::default_space_path() : a.space;
  o.models = a.models;
  o.seed = a.seed;
  o.spec = LatencySpec{a.warmup, a.runs, a.min_time, 100000};
  o.passes = a.passes;
  o.git_commit = build_commit();
  CalibrateArgs shown = a;
  shown.space = o.space_path;
  o.command_line = command_line(shown);
  o.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const predict::CalibrationOutcome out = predict::calibrate(store, *target, o, predict::PredictorFitOptions{}, a.output);
  const predict::PredictorInfo& info = out.predictor.info();
  const predict::PredictionMetrics& c = info.calibration;

  // Optionally, the simulator learns from the same measurements: refit a device profile's curves.
  std::optional<sim::FitResult> refit;
  std::string profile_out = a.profile_out;
  if (!a.refit_profile.empty()) {
    if (profile_out.empty()) {
      profile_out = (std::filesystem::path(store.path()).parent_path() / "devices" / (a.refit_profile + "-" + key + ".yaml")).string();
    }
    refit = predict::refit_device_profile(
        predict::load_measured_set(store, predict::calibration_experiment(key), key), a.refit_profile, a.threads, profile_out);
  }

  if (a.json) {
    json::Writer w;
    w.begin_object().field("target", key).field("kind", a.target).field("threads", a.threads);
    w.field("db", store.path()).field("predictor", out.predictor_path).field("space", o.space_path);
    w.field("measured_now", out.measured_now).field("reused", out.reused).field("models", info.models);
    w.field("op_samples", info.op_samples).field("kernel_models", info.kernel_models);
    w.field("op_kind_models", info.op_kind_models).field("overhead_ms", out.predictor.overhead_ms());
    w.field("scale", out.predictor.scale()).field("residual_rel_std", out.predictor.residual_rel_std());
    w.key("calibration").begin_object().field("within_10", c.within_10).field("rmse_ms", c.rmse_ms);
    w.field("rmse_percent", c.rmse_percent).field("mape_percent", c.mape_percent).field("spearman", c.spearman);
    w.end_object();
    if (refit) {
      w.key("refit").begin_object().field("profile", a.refit_profile).field("path", profile_out);
      w.field("ops", refit->ops_used).field("rms_log_error_before", refit->rms_log_error_before);
      w.field("rms_log_error_after", refit->rms_log_error_after);
      w.field("median_abs_pct_error_before", refit->median_abs_pct_error_before);
      w.field("median_abs_pct_error_after", refit->median_abs_pct_error_after).end_object();
    }
    w.end_object();
    std::printf("%s\n", w.str().c_str());
    return 0;
  }
  std::printf("target %s: %d models measured now, %d recorded earlier; fitted on %d calibration models (%d ops)\n",
              key.c_str(), out.measured_now, out.reused, info.models, info.op_samples);
  std::printf("per-op models: %d kernel families, %d op kinds (roofline fit for the rest)\n", info.kernel_models,
              info.op_kind_models);
  std::printf("model level: latency = %.4f ms + %.4f x sum(op predictions), residual %.1f%%\n",
              out.predictor.overhead_ms(), out.predictor.scale(), 100 * out.predictor.residual_rel_std());
  std::printf("calibration set (out-of-bag op predictions): within +-10%% %.1f%%, RMSE %.3f ms (%.1f%%), MAPE %.1f%%, "
              "Spearman %.3f\n",
              100 * c.within_10, c.rmse_ms, c.rmse_percent, c.mape_percent, c.spearman);
  std::printf("saved predictor: %s\n", out.predictor_path.c_str());
  if (refit) {
    std::printf("refitted profile %s on %d ops: RMS log error %.3f -> %.3f, median |error| %.1f%% -> %.1f%%\n",
                a.refit_profile.c_str(), refit->ops_used, refit->rms_log_error_before, refit->rms_log_error_after,
                refit->median_abs_pct_error_before, refit->median_abs_pct_error_after);
    const std::filesystem::path p(profile_out);
    std::printf("saved profile: %s  (use: XNN_DEVICES_DIR=%s ... --target sim:%s)\n", profile_out.c_str(),
                p.parent_path().string().c_str(), p.stem().string().c_str());
  }
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("calibrate", "Fit the latency predictor for a target from measured generated "
                                              "architectures (measures the ones the store lacks)");
  static CalibrateArgs a;
  cmd->add_option("--target", a.target, "Target kind to calibrate (cpu: this machine)")->capture_default_str();
  cmd->add_option("--threads", a.threads, "Threads the target runs with")->capture_default_str();
  cmd->add_option("--db", a.db, "Results store (SQLite); models and predictors go beside it")->capture_default_str();
  cmd->add_option("--models", a.models, "Architectures in the calibration set")->capture_default_str();
  cmd->add_option("--space", a.space, "Architecture space (YAML; default configs/arch/mobilenet_space.yaml)");
  cmd->add_option("--seed", a.seed, "Seed of the calibration set")->capture_default_str();
  cmd->add_option("-o,--output", a.output, "Predictor file (default: <db folder>/predictors/<target>-t<threads>.json)");
  cmd->add_option("--warmup", a.warmup, "Untimed runs before measuring each model")->capture_default_str();
  cmd->add_option("--runs", a.runs, "Minimum timed runs per model (also profiled runs, up to 20)")->capture_default_str();
  cmd->add_option("--min-time", a.min_time, "Minimum timed seconds per model")->capture_default_str();
  cmd->add_option("--passes", a.passes, "Measurements of each model, spread over the set; the lowest median is kept")
      ->capture_default_str();
  cmd->add_option("--refit-profile", a.refit_profile,
                  "Also refit this simulated device profile's efficiency curves to the measurements (e.g. x86_xeon_host)");
  cmd->add_option("--profile-out", a.profile_out,
                  "Refitted profile file (default: <db folder>/devices/<profile>-<target>-t<threads>.yaml)");
  cmd->add_flag("--json", a.json, "Print the outcome as JSON (progress goes to stderr)");
  cmd->callback([&exit_code] { exit_code = run_calibrate(a); });
}

}  // namespace xnn::cli
