#include "harness/predict/calibration.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "engine/core/error.h"
#include "engine/core/sha256.h"
#include "harness/predict/model_features.h"

namespace xnn::predict {
namespace fs = std::filesystem;
namespace {

std::string space_name(const std::string& space_path) { return fs::path(space_path).stem().string(); }

std::string db_folder(const Store& store) {
  const fs::path parent = fs::absolute(store.path()).parent_path();
  return parent.string();
}

std::vector<arch::GeneratedArch> generate(const ArchSetOptions& o, uint64_t seed, const std::string& out_dir,
                                          const std::set<std::string>& exclude) {
  if (o.models < 1) throw Error("--models must be >= 1, got " + std::to_string(o.models));
  const arch::SearchSpace space = arch::load_search_space(o.space_path);
  if (o.log) o.log("generating " + std::to_string(o.models) + " architectures from " + o.space_path + " into " + out_dir);
  return arch::generate_arch_models(space, o.models, seed, out_dir, exclude);
}

MeasureSetOptions measure_options(const ArchSetOptions& o, const std::string& experiment) {
  MeasureSetOptions m;
  m.experiment = experiment;
  m.variant = space_name(o.space_path);
  m.spec = o.spec;
  m.passes = o.passes;
  m.git_commit = o.git_commit;
  m.command_line = o.command_line;
  m.log = o.log;
  return m;
}

}  // namespace

std::string target_key(const std::string& kind, int threads) { return kind + "-t" + std::to_string(threads); }
std::string calibration_experiment(const std::string& key) { return "calibration:" + key; }
std::string holdout_experiment(const std::string& key) { return "holdout:" + key; }

std::string default_predictor_path(const std::string& db_path, const std::string& key) {
  return (fs::absolute(db_path).parent_path() / "predictors" / (key + ".json")).string();
}

std::string default_space_path() {
  const std::string rel = "configs/arch/mobilenet_space.yaml";
  if (fs::exists(rel)) return rel;
#ifdef XNN_SOURCE_DIR
  const std::string built = std::string(XNN_SOURCE_DIR) + "/" + rel;
  if (fs::exists(built)) return built;
#endif
  return rel;  // the loader's error then names it
}

uint64_t holdout_seed(uint64_t seed) { return seed ^ 0x9E3779B97F4A7C15ull; }

std::vector<CalibrationModel> calibration_models(const std::vector<MeasuredModel>& measured,
                                                 const std::function<void(const std::string&)>& log) {
  std::vector<CalibrationModel> out;
  for (const MeasuredModel& m : measured) {
    auto skip = [&](const std::string& why) {
      if (log) log("skipping " + m.encoding + " (job " + m.job_id + "): " + why);
    };
    if (!(m.median_ms > 0) || m.ops.empty()) {
      skip("no median latency or per-op profile recorded");
      continue;
    }
    std::ifstream f(m.model_path, std::ios::binary);
    if (!f) {
      skip("its model file " + m.model_path + " is gone");
      continue;
    }
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!m.model_sha256.empty() && sha256_hex(bytes) != m.model_sha256) {
      skip("its model file " + m.model_path + " changed since it was measured");
      continue;
    }
    const std::vector<OpFeatures> ops = featurize_profile(m.ops, fused_activations_of_file(m.model_path));
    CalibrationModel cm;
    cm.name = m.encoding;
    cm.measured_ms = m.median_ms;
    for (size_t i = 0; i < ops.size(); ++i) cm.ops.push_back(OpSample{ops[i], m.ops[i].time_ms});
    out.push_back(std::move(cm));
  }
  return out;
}

CalibrationOutcome calibrate(Store& store, Target& target, const ArchSetOptions& o, const PredictorFitOptions& fit,
                             const std::string& predictor_path) {
  const TargetSettings& ts = target.settings();
  const std::string key = ts.name;
  const std::string dir = (fs::path(db_folder(store)) / "calibration" / key).string();
  const std::vector<arch::GeneratedArch> set = generate(o, o.seed, dir, {});
  const std::vector<MeasuredModel> now =
      measure_arch_set(store, target, set, (fs::path(dir) / "models").string(), measure_options(o, calibration_experiment(key)));

  CalibrationOutcome out;
  for (const MeasuredModel& m : now) (m.reused ? out.reused : out.measured_now)++;
  const std::vector<CalibrationModel> models =
      calibration_models(load_measured_set(store, calibration_experiment(key), key), o.log);
  out.models_in_store = static_cast<int>(models.size());
  if (o.log) o.log("fitting on " + std::to_string(models.size()) + " calibration models in " + store.path());
  out.predictor = LatencyPredictor::fit(models, fit);
  PredictorInfo& info = out.predictor.info();
  info.target_name = key;
  info.target_kind = ts.kind;
  info.threads = ts.threads;
  info.created_at = utc_now_iso();
  out.predictor_path = predictor_path.empty() ? default_predictor_path(store.path(), key) : predictor_path;
  out.predictor.save(out.predictor_path);
  return out;
}

HoldoutOutcome evaluate_holdout(Store& store, Target& target, const LatencyPredictor& predictor, const ArchSetOptions& o) {
  const TargetSettings& ts = target.settings();
  const std::string key = ts.name;
  std::set<std::string> calibration_set;
  for (const LatestResult& r : store.latest_results()) {
    if (r.job.experiment == calibration_experiment(key) && r.job.target == key) calibration_set.insert(r.job.model);
  }
  const std::string dir = (fs::path(db_folder(store)) / "holdout" / key).string();
  const std::vector<arch::GeneratedArch> set = generate(o, holdout_seed(o.seed), dir, calibration_set);
  const std::vector<MeasuredModel> measured =
      measure_arch_set(store, target, set, (fs::path(dir) / "models").string(), measure_options(o, holdout_experiment(key)));

  HoldoutOutcome out;
  std::vector<double> predicted, actual;
  for (const MeasuredModel& m : measured) {
    (m.reused ? out.reused : out.measured_now)++;
    const Prediction p = predictor.predict(featurize_model_file(m.model_path, ts.threads));
    out.models.push_back(HoldoutModel{m.encoding, m.median_ms, p.latency_ms, p.uncertainty_ms});
    predicted.push_back(p.latency_ms);
    actual.push_back(m.median_ms);
  }
  out.metrics = evaluate_predictions(predicted, actual);
  return out;
}

}  // namespace xnn::predict
