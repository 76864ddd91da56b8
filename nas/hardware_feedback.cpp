#include "nas/hardware_feedback.h"

#include <algorithm>
#include <filesystem>

#include "engine/core/error.h"
#include "engine/runtime/graph_cost.h"
#include "engine/runtime/model_io.h"
#include "harness/predict/calibration.h"
#include "harness/predict/model_features.h"

namespace xnn::nas {
namespace fs = std::filesystem;

std::vector<CandidateResult> feedback_candidates(const NasConfig& config, const SearchResult& result) {
  std::vector<CandidateResult> out;
  for (const CandidateResult& r : result.front) {
    if (!r.arch.empty() && !r.xnn_path.empty()) out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(), [](const CandidateResult& a, const CandidateResult& b) { return a.top1 > b.top1; });
  if (out.size() > static_cast<size_t>(std::max(config.latency.feedback, 0))) out.resize(static_cast<size_t>(config.latency.feedback));
  return out;
}

FeedbackResult hardware_feedback(const NasConfig& config, const SearchResult& result, Store& store, Target& target,
                                 const std::function<void(const std::string&)>& log) {
  if (config.latency.feedback <= 0 || config.latency.method != "predicted") {
    throw Error(config.file + ": hardware feedback needs latency.method predicted and latency.feedback >= 1");
  }
  const TargetSettings& ts = target.settings();
  const std::string key = predict::target_key(ts.kind, ts.threads);
  if (ts.name != key) throw Error("hardware feedback: the target must be named '" + key + "', got '" + ts.name + "'");
  const std::vector<CandidateResult> picked = feedback_candidates(config, result);
  if (picked.empty()) throw Error(config.file + ": hardware feedback: no front point has an architecture of the space to measure");

  const predict::LatencyPredictor before = predict::LatencyPredictor::load(config.latency.predictor);
  std::vector<arch::GeneratedArch> set;
  for (const CandidateResult& r : picked) {
    arch::GeneratedArch g;
    g.arch = arch::parse_arch(r.arch);
    g.path = r.xnn_path;
    const std::shared_ptr<Model> m = load_model(r.xnn_path);
    g.macs = estimate_graph_cost(m->graph).total.macs;
    g.params = m->graph.parameter_count();
    set.push_back(g);
  }
  FeedbackResult out;
  out.experiment = predict::calibration_experiment(key);
  predict::MeasureSetOptions mo;
  mo.experiment = out.experiment;
  mo.variant = config.space.source.empty() ? config.name : fs::path(config.space.source).stem().string();
  mo.spec.warmup = config.latency.warmup;
  mo.spec.min_runs = config.latency.runs;
  mo.spec.min_time_s = config.latency.min_time;
  mo.passes = 3;  // the quietest of three attempts, as calibration does (with more passes)
  mo.command_line = "xnn-lab nas " + config.file + " (hardware feedback)";
  mo.log = log;
  if (log) log("hardware feedback: measuring " + std::to_string(set.size()) + " front candidates on " + key);
  const std::vector<predict::MeasuredModel> measured =
      predict::measure_arch_set(store, target, set, (fs::path(config.output_dir) / "feedback_models").string(), mo);

  const std::vector<predict::CalibrationModel> models =
      predict::calibration_models(predict::load_measured_set(store, out.experiment, key), log);
  out.calibration_models = static_cast<int>(models.size());
  if (log) log("hardware feedback: refitting the predictor on " + std::to_string(models.size()) + " calibration models");
  predict::LatencyPredictor after = predict::LatencyPredictor::fit(models, predict::PredictorFitOptions{});
  predict::PredictorInfo& info = after.info();
  info.target_name = key;
  info.target_kind = ts.kind;
  info.threads = ts.threads;
  info.created_at = utc_now_iso();
  out.predictor_path = (fs::path(config.output_dir) / "predictor_feedback.json").string();
  after.save(out.predictor_path);

  for (size_t i = 0; i < picked.size(); ++i) {
    const auto features = predict::featurize_model_file(measured[i].model_path, ts.threads);
    FeedbackPoint p;
    p.name = picked[i].name;
    p.arch = picked[i].arch;
    p.model = picked[i].xnn_path;
    p.predicted_before_ms = before.predict_latency_ms(features);
    p.measured_ms = measured[i].median_ms;
    p.predicted_after_ms = after.predict_latency_ms(features);
    out.points.push_back(p);
  }
  return out;
}

}  // namespace xnn::nas
