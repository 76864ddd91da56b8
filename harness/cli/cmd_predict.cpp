// xnn-lab predict MODEL --target cpu [--threads N] [--predictor FILE | --db FILE] [--json]
// xnn-lab predict MODEL --target sim:<profile> [--threads N] [--on-unsupported error|fallback] [--json]
// xnn-lab predict --evaluate --target cpu [--models N] [--seed S] [--threads N] [--db FILE]
//                 [--space FILE] [--predictor FILE] [--warmup W] [--runs R] [--min-time S] [--passes P]
//                 [--json]
//
// Predicts a model's latency on a target without running it: the session's plan (kernels and
// shapes after fusion) is featurised and fed to the predictor `xnn-lab calibrate` fitted;
// prints latency +- one standard deviation and a per-op breakdown. --evaluate measures held-out
// generated architectures (experiment "holdout:<target>-t<threads>") and reports how well the
// predictor does on them: share within +-10%, RMSE, MAPE, Spearman rank correlation.
// A simulated target (sim:<profile>, configs/devices/) needs no predictor: its latency is the
// device model's (harness/sim/cost_model.h), with placement, fallbacks and their reasons per op.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "engine/core/error.h"
#include "harness/cli/commands.h"
#include "harness/cli/registries.h"
#include "harness/predict/calibration.h"
#include "harness/predict/model_features.h"
#include "harness/sim/cost_model.h"
#include "harness/sim/sim_report.h"
#include "engine/runtime/model_io.h"
#include "harness/util/json.h"

namespace xnn::cli {
namespace fs = std::filesystem;
namespace {

struct PredictArgs {
  std::string model, target = "cpu", db = "xnn-lab.db", predictor, space, on_unsupported;
  int threads = 1, models = 40, warmup = 3, runs = 15, passes = 10;
  double min_time = 0.2;
  uint64_t seed = 1;
  bool evaluate = false, json = false;
};

// The fitted predictor for a measured target: --predictor, else the calibrated one beside the
// store. It must have been fitted for this target and thread count.
predict::LatencyPredictor load_predictor(const PredictArgs& a, const std::string& key) {
  const std::string path = a.predictor.empty() ? predict::default_predictor_path(a.db, key) : a.predictor;
  if (!fs::exists(path)) {
    throw Error(path + ": no predictor for target " + key + " (run `xnn-lab calibrate --target " + a.target +
                " --threads " + std::to_string(a.threads) + (a.db == "xnn-lab.db" ? "" : " --db " + a.db) +
                "` first, or pass --predictor FILE)");
  }
  predict::LatencyPredictor p = predict::LatencyPredictor::load(path);
  if (p.info().target_name != key) {
    throw Error(path + ": this predictor was fitted for target " + p.info().target_name + ", not " + key +
                " (pass --threads to match, or calibrate " + key + ")");
  }
  return p;
}

void print_prediction(const PredictArgs& a, const std::string& key, const std::vector<predict::OpFeatures>& ops,
                      const predict::Prediction& p) {
  if (a.json) {
    json::Writer w;
    w.begin_object().field("model", a.model).field("target", key).field("latency_ms", p.latency_ms);
    w.field("uncertainty_ms", p.uncertainty_ms).field("overhead_ms", p.overhead_ms);
    w.key("ops").begin_array();
    for (size_t i = 0; i < ops.size(); ++i) {
      w.begin_object().field("name", ops[i].name).field("type", ops[i].op_type).field("kernel", ops[i].kernel);
      w.field("time_ms", p.ops[i].time_ms).field("spread_ms", p.ops[i].spread_ms);
      w.field("percent", p.latency_ms > 0 ? 100 * p.ops[i].time_ms / p.latency_ms : 0.0);
      w.field("model", predict::level_name(p.ops[i].level)).end_object();
    }
    w.end_array().end_object();
    std::printf("%s\n", w.str().c_str());
    return;
  }
  std::printf("%s on %s: predicted %.3f ms +- %.3f ms (%zu ops; graph overhead %.3f ms)\n", a.model.c_str(), key.c_str(),
              p.latency_ms, p.uncertainty_ms, ops.size(), p.overhead_ms);
  size_t name_w = 4, op_w = 2, kernel_w = 6;
  for (const auto& o : ops) {
    name_w = std::max(name_w, o.name.size());
    op_w = std::max(op_w, o.op_type.size());
    kernel_w = std::max(kernel_w, o.kernel.size());
  }
  const int nw = static_cast<int>(std::min<size_t>(name_w, 40)), ow = static_cast<int>(op_w),
            kw = static_cast<int>(std::min<size_t>(kernel_w, 44));
  std::printf("%-*s  %-*s  %-*s  %10s  %6s  %s\n", nw, "node", ow, "op", kw, "kernel", "ms", "%", "model");
  for (size_t i = 0; i < ops.size(); ++i) {
    std::printf("%-*.*s  %-*s  %-*.*s  %10.4f  %6.2f  %s\n", nw, nw, ops[i].name.c_str(), ow, ops[i].op_type.c_str(), kw,
                kw, ops[i].kernel.c_str(), p.ops[i].time_ms, p.latency_ms > 0 ? 100 * p.ops[i].time_ms / p.latency_ms : 0,
                predict::level_name(p.ops[i].level));
  }
}

int predict_model(const PredictArgs& a, const std::string& key) {
  if (a.model.empty()) throw Error("predict: give a MODEL file (or --evaluate)");
  if (!fs::exists(a.model)) throw Error(a.model + ": no such model file");
  const predict::LatencyPredictor predictor = load_predictor(a, key);
  const std::vector<predict::OpFeatures> ops = predict::featurize_model_file(a.model, a.threads);
  print_prediction(a, key, ops, predictor.predict(ops));
  return 0;
}

int evaluate(const PredictArgs& a, const std::string& key) {
  if (!a.model.empty()) throw Error("predict --evaluate generates its own held-out models; drop MODEL (" + a.model + ")");
  const predict::LatencyPredictor predictor = load_predictor(a, key);
  Store store(fs::absolute(a.db).string());
  auto target = target_registry().create(TargetSettings{key, a.target, a.threads, {}});
  predict::ArchSetOptions o;
  o.space_path = a.space.empty() ? predict::default_space_path() : a.space;
  o.models = a.models;
  o.seed = a.seed;
  o.spec = LatencySpec{a.warmup, a.runs, a.min_time, 100000};
  o.passes = a.passes;
  o.git_commit = build_commit();
  o.command_line = "xnn-lab predict --evaluate --target " + a.target + " --threads " + std::to_string(a.threads) +
                   " --models " + std::to_string(a.models) + " --seed " + std::to_string(a.seed) + " --passes " +
                   std::to_string(a.passes) + " --space " + o.space_path;
  o.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const predict::HoldoutOutcome out = predict::evaluate_holdout(store, *target, predictor, o);
  const predict::PredictionMetrics& m = out.metrics;
  if (a.json) {
    json::Writer w;
    w.begin_object().field("target", key).field("space", o.space_path).field("count", m.count);
    w.field("measured_now", out.measured_now).field("reused", out.reused);
    w.field("within_10", m.within_10).field("rmse_ms", m.rmse_ms).field("rmse_percent", m.rmse_percent);
    w.field("mape_percent", m.mape_percent).field("spearman", m.spearman);
    w.key("models").begin_array();
    for (const auto& h : out.models) {
      w.begin_object().field("encoding", h.encoding).field("measured_ms", h.measured_ms);
      w.field("predicted_ms", h.predicted_ms).field("uncertainty_ms", h.uncertainty_ms);
      w.field("error_percent", 100 * (h.predicted_ms / h.measured_ms - 1)).end_object();
    }
    w.end_array().end_object();
    std::printf("%s\n", w.str().c_str());
    return 0;
  }
  std::printf("%10s  %10s  %9s  %8s  %s\n", "measured", "predicted", "+-", "error", "architecture");
  for (const auto& h : out.models) {
    std::printf("%10.3f  %10.3f  %9.3f  %+7.1f%%  %s\n", h.measured_ms, h.predicted_ms, h.uncertainty_ms,
                100 * (h.predicted_ms / h.measured_ms - 1), h.encoding.c_str());
  }
  std::printf("\n%d held-out models on %s (%d measured now, %d recorded earlier):\n", m.count, key.c_str(),
              out.measured_now, out.reused);
  std::printf("within +-10%%: %.1f%%   RMSE: %.3f ms (%.1f%%)   MAPE: %.1f%%   Spearman: %.3f\n", 100 * m.within_10,
              m.rmse_ms, m.rmse_percent, m.mape_percent, m.spearman);
  return 0;
}

// sim:<profile>: the simulator is the predictor. The profile's host runs what the device refuses
// (or the simulation fails naming those nodes when on_unsupported is error).
int simulate_model(const PredictArgs& a, const std::string& profile_name) {
  if (a.evaluate) {
    throw Error("predict --evaluate --target " + a.target + ": a simulated target has no measurements to evaluate "
                "against (its latency is the device model's); refit its curves with `xnn-lab calibrate "
                "--refit-profile " + profile_name + "` instead");
  }
  if (!a.predictor.empty()) throw Error("predict --target " + a.target + ": --predictor applies to measured targets only");
  if (a.model.empty()) throw Error("predict: give a MODEL file");
  if (!fs::exists(a.model)) throw Error(a.model + ": no such model file");
  const sim::DeviceProfile device = sim::find_device_profile(profile_name);
  std::optional<sim::DeviceProfile> host;
  if (!device.is_cpu()) host = sim::find_device_profile(device.host);
  sim::SimOptions options;
  options.threads = a.threads;
  if (a.on_unsupported == "error") options.on_unsupported = sim::OnUnsupported::kError;
  else if (a.on_unsupported == "fallback") options.on_unsupported = sim::OnUnsupported::kFallback;
  else if (!a.on_unsupported.empty()) {
    throw Error("--on-unsupported: expected error or fallback, got '" + a.on_unsupported + "'");
  }
  const auto model = load_model(a.model);
  const sim::SimResult result = sim::simulate(model->graph, {}, device, host ? &*host : nullptr, options);
  if (a.json) {
    std::printf("{\"model\":%s,\"target\":%s,\"simulated\":true,\"result\":%s}\n", json::quote(a.model).c_str(),
                json::quote(a.target).c_str(), sim::sim_result_json(result).c_str());
  } else {
    std::printf("%s", sim::sim_result_table(result, a.model).c_str());
  }
  return 0;
}

int run_predict(const PredictArgs& a) {
  if (a.threads < 1) throw Error("--threads must be >= 1, got " + std::to_string(a.threads));
  // Target dispatch: measured targets use the predictor fitted by `calibrate`; simulated
  // devices are their own model.
  if (!a.on_unsupported.empty() && a.target.rfind("sim:", 0) != 0) {
    throw Error("--on-unsupported applies to simulated targets (sim:<profile>), not " + a.target);
  }
  if (a.target.rfind("sim:", 0) == 0 && a.target.size() > 4) return simulate_model(a, a.target.substr(4));
  if (a.target == "cpu") {
    const std::string key = predict::target_key(a.target, a.threads);
    return a.evaluate ? evaluate(a, key) : predict_model(a, key);
  }
  std::string known;
  for (const std::string& k : target_registry().kinds()) known += (known.empty() ? "" : ", ") + k;
  throw Error("predict --target " + a.target + ": no latency predictor for this target (predictable: cpu, sim:<profile>; targets: " +
              known + ")");
}

}  // namespace

void add_predict_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("predict", "Predict a model's latency on a target from the calibrated predictor "
                                            "(per-op breakdown, uncertainty); --evaluate on held-out models");
  static PredictArgs a;
  cmd->add_option("model", a.model, "Model file (.xnn or .onnx)");
  cmd->add_option("--target", a.target, "Target kind (cpu: this machine; sim:<profile>: a simulated device, "
                                        "see `xnn-lab targets`)")
      ->capture_default_str();
  cmd->add_option("--on-unsupported", a.on_unsupported, "sim targets: error or fallback (default: the profile's)");
  cmd->add_option("--threads", a.threads, "Threads the target runs with")->capture_default_str();
  cmd->add_option("--predictor", a.predictor, "Predictor file (default: <db folder>/predictors/<target>-t<threads>.json)");
  cmd->add_option("--db", a.db, "Results store beside which calibrate saved the predictor; --evaluate records "
                                "the held-out measurements in it")
      ->capture_default_str();
  cmd->add_flag("--evaluate", a.evaluate, "Measure held-out generated architectures and report prediction accuracy");
  cmd->add_option("--models", a.models, "--evaluate: held-out architectures")->capture_default_str();
  cmd->add_option("--seed", a.seed, "--evaluate: the calibration seed (the held-out seed is derived from it)")
      ->capture_default_str();
  cmd->add_option("--space", a.space, "--evaluate: architecture space (default configs/arch/mobilenet_space.yaml)");
  cmd->add_option("--warmup", a.warmup, "--evaluate: untimed runs per model")->capture_default_str();
  cmd->add_option("--runs", a.runs, "--evaluate: minimum timed runs per model")->capture_default_str();
  cmd->add_option("--min-time", a.min_time, "--evaluate: minimum timed seconds per model")->capture_default_str();
  cmd->add_option("--passes", a.passes, "--evaluate: measurements of each model, spread over the set; the lowest median is kept")
      ->capture_default_str();
  cmd->add_flag("--json", a.json, "Print JSON (progress goes to stderr)");
  cmd->callback([&exit_code] { exit_code = run_predict(a); });
}

}  // namespace xnn::cli
