// Calibration and held-out evaluation of the latency predictor for a target:
//   calibrate: generate N architectures from a space into <db folder>/calibration/<key>/,
//     measure those the store lacks (experiment "calibration:<key>"), fit a predictor on every
//     calibration job the store holds for the target, save it (default
//     <db folder>/predictors/<key>.json);
//   evaluate: generate held-out architectures (another seed, calibration encodings excluded)
//     into <db folder>/holdout/<key>/, measure them (experiment "holdout:<key>"), predict each
//     from its file (Session::plan_summary, the path `xnn-lab predict` takes) and compare.
// <key> names target kind and threads, e.g. "cpu-t1".
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/predict/latency_predictor.h"
#include "harness/predict/measured_set.h"

namespace xnn::predict {

// "cpu-t1": the target name the jobs are recorded under and the predictor file's stem.
std::string target_key(const std::string& kind, int threads);
std::string calibration_experiment(const std::string& key);  // "calibration:<key>"
std::string holdout_experiment(const std::string& key);      // "holdout:<key>"
// <folder of db>/predictors/<key>.json
std::string default_predictor_path(const std::string& db_path, const std::string& key);
// configs/arch/mobilenet_space.yaml under the working directory when it is there, else in the
// source tree xnn-lab was built from.
std::string default_space_path();

// Calibration samples from measured models: featurises each stored profile with the fused
// activations of its model file. A model whose file is gone or changed is skipped (reported
// through `log`); one without a median or profile too.
std::vector<CalibrationModel> calibration_models(const std::vector<MeasuredModel>& measured,
                                                 const std::function<void(const std::string&)>& log);

struct ArchSetOptions {
  std::string space_path;  // YAML (harness/arch/mobilenet_space.h)
  int models = 100;
  uint64_t seed = 1;
  LatencySpec spec{3, 15, 0.2, 100000};
  int passes = 10;  // MeasureSetOptions::passes
  std::string git_commit, command_line;
  std::function<void(const std::string&)> log;
};

struct CalibrationOutcome {
  int measured_now = 0, reused = 0;  // of this invocation's set
  int models_in_store = 0;           // calibration jobs the fit used
  LatencyPredictor predictor;
  std::string predictor_path;
};

// `predictor_path` empty: the default beside the store.
CalibrationOutcome calibrate(Store& store, Target& target, const ArchSetOptions& options,
                             const PredictorFitOptions& fit, const std::string& predictor_path);

struct HoldoutModel {
  std::string encoding;
  double measured_ms = 0, predicted_ms = 0, uncertainty_ms = 0;
};

struct HoldoutOutcome {
  int measured_now = 0, reused = 0;
  std::vector<HoldoutModel> models;
  PredictionMetrics metrics;
};

// The held-out seed for a calibration seed (documented so results can be reproduced).
uint64_t holdout_seed(uint64_t seed);

HoldoutOutcome evaluate_holdout(Store& store, Target& target, const LatencyPredictor& predictor,
                                const ArchSetOptions& options);

}  // namespace xnn::predict
