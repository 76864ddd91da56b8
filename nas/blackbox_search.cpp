#include "nas/format.h"
#include "nas/blackbox_search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "engine/core/error.h"
#include "engine/runtime/model_io.h"
#include "harness/predict/latency_predictor.h"
#include "harness/predict/model_features.h"
#include "harness/util/json.h"
#include "nas/search/nsga2.h"

namespace fs = std::filesystem;

namespace xnn::nas {
namespace {

double json_number(const std::map<std::string, std::string>& attrs, const std::string& key) {
  const auto it = attrs.find(key);
  if (it == attrs.end()) throw Error("nas: trial lacks user attribute '" + key + "'");
  return std::stod(it->second);
}
std::string json_string(const std::map<std::string, std::string>& attrs, const std::string& key) {
  const auto it = attrs.find(key);
  if (it == attrs.end() || it->second.size() < 2) throw Error("nas: trial lacks user attribute '" + key + "'");
  return it->second.substr(1, it->second.size() - 2);  // our own strings: paths and encodings, no escapes
}

std::string trial_dir(const NasConfig& config, int64_t number) {
  return (fs::path(config.output_dir) / "trials" / ("trial_" + std::to_string(number))).string();
}

std::string summary(const CandidateResult& r) {
  return r.name + " " + fmt("%.2f%%", 100 * r.top1) + " @ " + fmt("%.3f ms", r.latency_ms) + ", " +
         std::to_string(r.params) + " params";
}

// The stored trials as results (COMPLETE ones; their measurements are user attributes).
std::vector<CandidateResult> complete_results(const NasConfig& config, Study& study) {
  std::vector<CandidateResult> out;
  for (const TrialRecord& r : study.trial_records()) {
    if (r.state != TrialState::kComplete) continue;
    CandidateResult c;
    c.trial = r.number;
    c.name = "trial_" + std::to_string(r.number);
    c.top1 = r.values.at(0);
    c.latency_ms = json_number(r.user_attrs, "latency_ms");
    c.params = static_cast<int64_t>(json_number(r.user_attrs, "params"));
    c.size_bytes = static_cast<int64_t>(json_number(r.user_attrs, "size_bytes"));
    c.arch = json_string(r.user_attrs, "arch");
    c.xnn_path = (fs::path(trial_dir(config, r.number)) / "model.xnn").string();
    c.onnx_path = (fs::path(trial_dir(config, r.number)) / "model.onnx").string();
    out.push_back(std::move(c));
  }
  return out;
}

bool feasible(const NasConfig& config, const CandidateResult& r) {
  const TrialOutcome o = candidate_outcome(config, r);
  return std::all_of(o.constraints.begin(), o.constraints.end(), [](double v) { return v <= 0; });
}

// The feasible non-dominated results in (max top1, min latency_ms), by latency. With a single
// objective (top1), the best feasible one.
std::vector<CandidateResult> pareto(const NasConfig& config, const std::vector<CandidateResult>& all) {
  std::vector<CandidateResult> ok;
  for (const CandidateResult& r : all) {
    if (feasible(config, r)) ok.push_back(r);
  }
  std::vector<CandidateResult> front;
  if (config.objectives.size() == 1) {
    const auto best = std::max_element(ok.begin(), ok.end(), [](const auto& a, const auto& b) { return a.top1 < b.top1; });
    if (best != ok.end()) front.push_back(*best);
    return front;
  }
  std::vector<std::vector<double>> points;
  for (const CandidateResult& r : ok) points.push_back({r.top1, r.latency_ms});
  for (size_t i : pareto_front(points, {Direction::kMaximize, Direction::kMinimize})) front.push_back(ok[i]);
  std::sort(front.begin(), front.end(), [](const auto& a, const auto& b) { return a.latency_ms < b.latency_ms; });
  return front;
}

void copy_model(const std::string& from, const std::string& to) {
  fs::create_directories(fs::path(to).parent_path());
  const std::string tmp = to + ".tmp";
  fs::copy_file(from, tmp, fs::copy_options::overwrite_existing);
  fs::rename(tmp, to);
}

}  // namespace

LatencyFn make_latency_fn(const LatencySource& source, Target* target) {
  if (source.method == "predicted") {
    auto predictor = std::make_shared<predict::LatencyPredictor>(predict::LatencyPredictor::load(source.predictor));
    const int threads = source.threads;
    return [predictor, threads](const std::string& path) {
      return predictor->predict_latency_ms(predict::featurize_model_file(path, threads));
    };
  }
  if (!target) throw Error("nas: measured latency needs a target");
  LatencySpec spec;
  spec.warmup = source.warmup;
  spec.min_runs = source.runs;
  spec.min_time_s = source.min_time;
  return [target, spec](const std::string& path) {
    const LatencyMeasurement m = target->measure_latency(path, spec, false);
    return summarize(m.run.samples_ms).median;
  };
}

bool parse_epoch_line(const std::string& line, int* epoch, double* test_accuracy) {
  static const std::regex re(R"(^epoch (\d+)/\d+: .*test acc ([0-9.]+)%)");
  std::smatch m;
  if (!std::regex_search(line, m, re)) return false;
  *epoch = std::stoi(m[1].str());
  *test_accuracy = std::stod(m[2].str()) / 100.0;
  return true;
}

CandidateResult train_and_measure(std::shared_ptr<Model> model, train::TrainConfig recipe, const std::string& dir,
                                  const LatencyFn& latency, const train::ProgressFn& progress, const EpochFn& on_epoch) {
  recipe.output_dir = dir;
  recipe.checkpoint_dir = (fs::path(dir) / "checkpoint").string();
  recipe.export_onnx = true;
  // The trainer has no per-epoch hook: its epoch line is its per-epoch report, so the pruner
  // reads the test accuracy from it and stops training by throwing out of run_training.
  const train::ProgressFn forward = [&](const std::string& line) {
    if (progress) progress(line);
    int epoch = 0;
    double acc = 0;
    if (on_epoch && parse_epoch_line(line, &epoch, &acc) && on_epoch(epoch, acc)) throw TrialPruned();
  };
  const train::TrainResult t = train::run_training(recipe, forward, model);
  CandidateResult r;
  r.top1 = t.test_accuracy;
  r.params = model->graph.parameter_count();
  r.xnn_path = t.xnn_path;
  r.onnx_path = t.onnx_path;
  r.size_bytes = static_cast<int64_t>(fs::file_size(t.xnn_path));
  r.latency_ms = latency(t.xnn_path);
  return r;
}

TrialOutcome candidate_outcome(const NasConfig& config, const CandidateResult& r) {
  TrialOutcome o;
  o.values.push_back(r.top1);
  if (config.objectives.size() > 1) o.values.push_back(r.latency_ms);
  for (const ConstraintSpec& c : config.constraints) {
    const double v = c.metric == "latency_ms" ? r.latency_ms
                     : c.metric == "params"   ? static_cast<double>(r.params)
                                              : static_cast<double>(r.size_bytes);
    o.constraints.push_back(v - c.limit);
  }
  return o;
}

std::vector<CandidateResult> pareto_results(const NasConfig& config, const std::vector<CandidateResult>& results) {
  return pareto(config, results);
}

std::string front_text(const std::vector<CandidateResult>& front) {
  std::string s;
  for (const CandidateResult& r : front) {
    s += (s.empty() ? "" : "; ") + r.name + " " + fmt("%.2f%%", 100 * r.top1) + "@" + fmt("%.3fms", r.latency_ms);
  }
  return s.empty() ? "(none yet)" : s;
}

std::shared_ptr<Model> baseline_model(const NasConfig& config, const BaselineSpec& b, std::string* encoding) {
  if (b.builder) return train::build_model(*b.builder, config.seed);
  if (b.arch) {
    if (encoding) *encoding = b.arch->to_string();
    return arch::build_arch_model(config.space, *b.arch, config.seed, 0);
  }
  return load_model(b.model_file);
}

std::vector<CandidateResult> train_baselines(const NasConfig& config, const LatencyFn& latency,
                                             const train::ProgressFn& progress) {
  const auto log = [&](const std::string& line) {
    if (progress) progress(line);
  };
  // The same recipe (without the searched hyper-parameters), same measurement.
  std::vector<CandidateResult> out;
  for (const BaselineSpec& b : config.baselines) {
    std::string encoding;
    std::shared_ptr<Model> model = baseline_model(config, b, &encoding);
    train::TrainConfig r = config.recipe;
    r.name = config.name + "_" + b.name;
    r.resume = true;  // a resumed search re-uses a baseline trained to the end
    log("baseline " + b.name + ": training");
    CandidateResult c = train_and_measure(model, r, (fs::path(config.output_dir) / "baselines" / b.name).string(),
                                          latency, progress, nullptr);
    c.name = b.name;
    c.arch = encoding;
    log("baseline " + summary(c));
    out.push_back(std::move(c));
  }
  return out;
}

void export_front(const NasConfig& config, std::vector<CandidateResult>& front, const train::ProgressFn& progress) {
  const auto log = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const fs::path front_dir = fs::path(config.output_dir) / "front";
  fs::remove_all(front_dir);
  for (CandidateResult& c : front) {
    const std::string xnn = (front_dir / (c.name + ".xnn")).string();
    const std::string onnx = (front_dir / (c.name + ".onnx")).string();
    copy_model(c.xnn_path, xnn);
    copy_model(c.onnx_path, onnx);
    c.xnn_path = xnn;
    c.onnx_path = onnx;
    log("front " + summary(c) + " -> " + xnn);
  }
}

int count_finished_trials(Study& study, SearchResult& result) {
  result.complete = result.pruned = result.failed = 0;
  for (const TrialRecord& r : study.trial_records()) {
    if (r.state == TrialState::kComplete) ++result.complete;
    if (r.state == TrialState::kPruned) ++result.pruned;
    if (r.state == TrialState::kFail && !r.interrupted) ++result.failed;
  }
  return result.complete + result.pruned + result.failed;
}

SearchResult run_blackbox_search(const NasConfig& config, Store& store, const LatencyFn& latency,
                                 const train::ProgressFn& progress) {
  const auto log = [&](const std::string& line) {
    if (progress) progress(line);
  };
  StudyOptions options;
  options.objective_names = config.objectives;
  Study study(store, config.name, make_strategy(config), make_pruner(config), options);

  const Objective objective = [&](TrialContext& ctx) {
    const arch::Arch a = arch_from_params(config.space, ctx.params());
    const train::TrainConfig recipe = recipe_for(config, ctx.params());
    ctx.set_user_attr("arch", json::quote(a.to_string()));
    log("trial " + std::to_string(ctx.number()) + ": " + a.to_string() + ", lr " + fmt("%.4g", recipe.schedule.base_lr) +
        ", " + std::to_string(recipe.epochs) + " epochs");
    auto model = arch::build_arch_model(config.space, a, config.seed + static_cast<uint64_t>(ctx.number()), 0);
    train::TrainConfig r = recipe;
    r.resume = false;  // a trial is asked again under a new number after a crash: start clean
    r.name = config.name + "_trial_" + std::to_string(ctx.number());
    const CandidateResult c = train_and_measure(model, r, trial_dir(config, ctx.number()), latency, progress,
                                                [&](int epoch, double acc) { return ctx.report(epoch, acc); });
    ctx.set_user_attr("latency_ms", json::number(c.latency_ms));
    ctx.set_user_attr("params", std::to_string(c.params));
    ctx.set_user_attr("size_bytes", std::to_string(c.size_bytes));
    return candidate_outcome(config, c);
  };

  SearchResult result;
  result.study = config.name;
  const auto count = [&] { return count_finished_trials(study, result); };
  int finished = count();
  if (finished > 0) log("resuming study '" + config.name + "': " + std::to_string(finished) + " trial(s) already finished");
  while (finished < config.trials) {
    study.optimize(objective, 1);
    finished = count();
    const TrialRecord last = study.trial_records().back();
    std::string outcome = trial_state_name(last.state);
    if (last.state == TrialState::kComplete) {
      outcome += " top1 " + fmt("%.2f%%", 100 * last.values.at(0)) + ", latency " +
                 fmt("%.3f ms", json_number(last.user_attrs, "latency_ms"));
    } else if (!last.error.empty()) {
      outcome += ": " + last.error;
    }
    log("trial " + std::to_string(last.number) + " " + outcome + " [" + std::to_string(finished) + "/" +
        std::to_string(config.trials) + "]; front: " + front_text(pareto(config, complete_results(config, study))));
  }

  result.baselines = train_baselines(config, latency, progress);
  result.front = pareto_results(config, complete_results(config, study));
  export_front(config, result.front, progress);
  return result;
}

std::string write_measurement_experiment(const NasConfig& config, const SearchResult& result,
                                         const std::string& store_path) {
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << ("nas:" + config.name);
  y << YAML::Key << "description" << YAML::Value << ("Pareto front and baselines of NAS study " + config.name);
  y << YAML::Key << "models" << YAML::Value << YAML::BeginSeq;
  auto model = [&](const CandidateResult& c) {
    y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << c.name << YAML::Key << "path" << YAML::Value
      << c.xnn_path << YAML::Key << "preprocess" << YAML::Value << YAML::BeginMap << YAML::Key << "scale" << YAML::Value
      << "1/255" << YAML::Key << "mean" << YAML::Value << config.recipe.mean << YAML::Key << "std" << YAML::Value
      << config.recipe.std << YAML::Key << "layout" << YAML::Value << "NCHW" << YAML::EndMap << YAML::EndMap;
  };
  for (const CandidateResult& c : result.front) model(c);
  for (const CandidateResult& c : result.baselines) model(c);
  y << YAML::EndSeq;
  y << YAML::Key << "targets" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "kind" << YAML::Value
    << config.latency.target << YAML::Key << "threads" << YAML::Value << config.latency.threads << YAML::EndMap
    << YAML::EndSeq;
  y << YAML::Key << "metrics" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "latency" << YAML::Value << YAML::BeginMap << YAML::Key << "warmup" << YAML::Value
    << config.latency.warmup << YAML::Key << "runs" << YAML::Value << config.latency.runs << YAML::Key << "min_time"
    << YAML::Value << config.latency.min_time << YAML::EndMap;
  y << YAML::Key << "accuracy" << YAML::Value << YAML::BeginMap << YAML::Key << "dataset" << YAML::Value
    << "fashion-mnist" << YAML::Key << "split" << YAML::Value << "test" << YAML::Key << "limit" << YAML::Value
    << config.recipe.test_limit << YAML::Key << "path" << YAML::Value << config.recipe.data_path << YAML::EndMap;
  y << YAML::EndMap;
  y << YAML::Key << "store" << YAML::Value << store_path;
  y << YAML::EndMap;
  fs::create_directories(config.output_dir);
  const std::string path = (fs::path(config.output_dir) / "measure.yaml").string();
  std::ofstream out(path);
  out << "# Written by xnn-lab nas: measures the searched Pareto front and the baselines.\n" << y.c_str() << "\n";
  if (!out) throw Error(path + ": cannot write the measurement experiment");
  return path;
}

}  // namespace xnn::nas
