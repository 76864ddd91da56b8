// The latency predictor (nn-Meter style): one regression model per kernel family -- op kind
// and kernel choice, after fusion, so a FusedConv with its BN/activation/residual is one
// kernel -- predicting each executed op's time from its features; the model's latency is
// a + b * (sum of op predictions), where a and b, fitted on the calibration models' measured
// end-to-end medians, absorb graph overhead and the per-op profiling overhead.
//
// Per-op models: a random forest on log(time / work) for every kernel family with enough
// samples; else a forest per op kind; else a roofline-like linear fit over all ops.
// Uncertainty: the spread of the trees (per op, combined in quadrature) together with the
// model-level relative residual of the calibration fit, as one standard deviation in ms.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "harness/predict/op_features.h"
#include "harness/predict/prediction_metrics.h"
#include "harness/predict/random_forest.h"
#include "harness/predict/roofline_fit.h"

namespace xnn::json {
class Value;
}

namespace xnn::predict {

struct OpSample {
  OpFeatures features;
  double time_ms = 0;  // measured (median over profiled runs)
};

// One calibration model: its measured end-to-end median and its per-op profile.
struct CalibrationModel {
  std::string name;
  double measured_ms = 0;
  std::vector<OpSample> ops;
};

struct PredictorFitOptions {
  ForestParams forest;
  int min_kernel_samples = 10;  // fewer samples of a kernel family: use the op-kind model
  int min_op_samples = 10;      // fewer of an op kind too: use the roofline fit
};

enum class OpModelLevel : uint8_t { kKernel, kOpKind, kRoofline };
const char* level_name(OpModelLevel level);

struct OpPrediction {
  double time_ms = 0;    // the op's share of the model prediction (scaled by b)
  double spread_ms = 0;  // its standard deviation over trees (scaled by b)
  OpModelLevel level = OpModelLevel::kKernel;
};

struct Prediction {
  double latency_ms = 0;
  double uncertainty_ms = 0;  // one standard deviation
  double overhead_ms = 0;     // a: the part of the latency no op accounts for (may be negative)
  std::vector<OpPrediction> ops;
};

// What the predictor was fitted on and how well (recorded in the predictor file).
struct PredictorInfo {
  std::string target_name, target_kind;
  int threads = 1;
  std::string created_at;
  int models = 0, op_samples = 0;
  int kernel_models = 0, op_kind_models = 0;
  // Calibration-set quality with out-of-bag per-op predictions (each op predicted by trees
  // that did not see it), so it is not an in-sample fit.
  PredictionMetrics calibration;
};

class LatencyPredictor {
 public:
  // Throws xnn::Error when there are no models with a positive measurement and ops.
  static LatencyPredictor fit(const std::vector<CalibrationModel>& models, const PredictorFitOptions& options);

  Prediction predict(const std::vector<OpFeatures>& ops) const;
  // Just the latency (no per-op breakdown, no allocation): the search loop's call.
  double predict_latency_ms(const std::vector<OpFeatures>& ops) const;

  // The predictor file (JSON; format "xnn-lab-latency-predictor", version 1). load() errors
  // name the file, line and key.
  std::string to_json() const;
  static LatencyPredictor from_json(const std::string& text, const std::string& source);
  void save(const std::string& path) const;  // creates parent folders
  static LatencyPredictor load(const std::string& path);

  PredictorInfo& info() { return info_; }
  const PredictorInfo& info() const { return info_; }
  double overhead_ms() const { return a_ms_; }
  double scale() const { return b_; }
  double residual_rel_std() const { return rel_std_; }

 private:
  // from_json after parsing; errors "LINE: what: expected ..." (from_json prefixes the source).
  static LatencyPredictor from_json_value(const json::Value& root);

  struct OpModel {
    RandomForest forest;
    int samples = 0;
  };
  // The model for an op and its level; nullptr: roofline.
  const OpModel* model_for(const OpFeatures& op, OpModelLevel& level) const;
  // Raw (unscaled) op time and its tree spread in ms.
  double predict_op(const OpFeatures& op, double* spread_ms, OpModelLevel* level) const;

  std::unordered_map<std::string, OpModel> kernel_models_;  // by op_family()
  std::unordered_map<std::string, OpModel> op_models_;      // by op type
  RooflineFit roofline_;
  double roofline_rel_std_ = 0.5;  // relative error of the roofline fit (its "spread")
  double a_ms_ = 0, b_ = 1, rel_std_ = 0;
  PredictorInfo info_;
};

}  // namespace xnn::predict
