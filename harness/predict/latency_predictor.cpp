#include "harness/predict/latency_predictor.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/core/error.h"

namespace xnn::predict {
namespace {

double log_efficiency(const OpSample& s) { return std::log(s.time_ms / s.features.work); }

// Fits one forest on the given samples; writes each sample's out-of-bag time (ms) to oob_ms.
RandomForest fit_forest(const std::vector<const OpSample*>& samples, const ForestParams& params,
                        std::vector<double>& oob_ms) {
  std::vector<float> rows;
  std::vector<double> y;
  rows.reserve(samples.size() * kOpFeatureCount);
  for (const OpSample* s : samples) {
    rows.insert(rows.end(), s->features.x.begin(), s->features.x.end());
    y.push_back(log_efficiency(*s));
  }
  std::vector<double> oob;
  RandomForest forest = RandomForest::fit(rows, kOpFeatureCount, y, params, &oob);
  oob_ms.resize(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) oob_ms[i] = std::exp(oob[i]) * samples[i]->features.work;
  return forest;
}

// A stable per-key seed, so adding one family does not change every other family's forest.
uint64_t key_seed(uint64_t seed, const std::string& key) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

const char* level_name(OpModelLevel level) {
  switch (level) {
    case OpModelLevel::kKernel: return "kernel";
    case OpModelLevel::kOpKind: return "op";
    case OpModelLevel::kRoofline: return "roofline";
  }
  return "?";
}

LatencyPredictor LatencyPredictor::fit(const std::vector<CalibrationModel>& models, const PredictorFitOptions& options) {
  // Samples with a usable time; per-op timer resolution makes a few read 0.
  std::vector<const OpSample*> all;
  std::map<std::string, std::vector<const OpSample*>> by_kernel, by_op;
  for (const CalibrationModel& m : models) {
    for (const OpSample& s : m.ops) {
      if (!(s.time_ms > 0)) continue;
      all.push_back(&s);
      by_kernel[s.features.family].push_back(&s);
      by_op[s.features.op_type].push_back(&s);
    }
  }
  if (all.empty()) throw Error("latency predictor: no per-op samples with a positive time to fit on");

  LatencyPredictor p;
  std::map<const OpSample*, double> oob_ms;       // kernel-level out-of-bag predictions
  std::map<const OpSample*, double> oob_op_ms;    // op-kind level
  for (const auto& [key, samples] : by_kernel) {
    if (static_cast<int>(samples.size()) < options.min_kernel_samples) continue;
    ForestParams fp = options.forest;
    fp.seed = key_seed(options.forest.seed, key);
    std::vector<double> oob;
    p.kernel_models_[key] = OpModel{fit_forest(samples, fp, oob), static_cast<int>(samples.size())};
    for (size_t i = 0; i < samples.size(); ++i) oob_ms[samples[i]] = oob[i];
  }
  for (const auto& [key, samples] : by_op) {
    if (static_cast<int>(samples.size()) < options.min_op_samples) continue;
    ForestParams fp = options.forest;
    fp.seed = key_seed(options.forest.seed, "op:" + key);
    std::vector<double> oob;
    p.op_models_[key] = OpModel{fit_forest(samples, fp, oob), static_cast<int>(samples.size())};
    for (size_t i = 0; i < samples.size(); ++i) oob_op_ms[samples[i]] = oob[i];
  }
  {
    std::vector<double> macs, bytes, t;
    for (const OpSample* s : all) {
      macs.push_back(s->features.macs);
      bytes.push_back(s->features.bytes);
      t.push_back(s->time_ms);
    }
    p.roofline_ = RooflineFit::fit(macs, bytes, t);
    double se = 0;
    for (const OpSample* s : all) {
      const double rel = p.roofline_.predict_ms(s->features.macs, s->features.bytes) / s->time_ms - 1;
      se += rel * rel;
    }
    p.roofline_rel_std_ = std::sqrt(se / static_cast<double>(all.size()));
  }

  // Model level: measured = a + b * sum(out-of-bag op predictions), least squares on relative
  // error (weights 1/measured^2), so the fit quality below is not an in-sample figure.
  std::vector<double> sums, measured;
  for (const CalibrationModel& m : models) {
    if (!(m.measured_ms > 0) || m.ops.empty()) continue;
    double sum = 0;
    for (const OpSample& s : m.ops) {
      if (auto it = oob_ms.find(&s); it != oob_ms.end()) {
        sum += it->second;
      } else if (auto jt = oob_op_ms.find(&s); jt != oob_op_ms.end()) {
        sum += jt->second;
      } else {
        sum += p.predict_op(s.features, nullptr, nullptr);
      }
    }
    sums.push_back(sum);
    measured.push_back(m.measured_ms);
  }
  if (sums.empty()) throw Error("latency predictor: no calibration model with a measured latency and a per-op profile");
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < sums.size(); ++i) {
    const double w = 1.0 / (measured[i] * measured[i]);
    sw += w;
    sx += w * sums[i];
    sy += w * measured[i];
    sxx += w * sums[i] * sums[i];
    sxy += w * sums[i] * measured[i];
  }
  const double det = sw * sxx - sx * sx;
  if (sums.size() >= 3 && det > 1e-12 * sw * sxx) {
    p.b_ = (sw * sxy - sx * sy) / det;
    p.a_ms_ = (sy - p.b_ * sx) / sw;
  }
  if (!(p.b_ > 0) || sums.size() < 3 || !(det > 1e-12 * sw * sxx)) {
    // Too few models (or a degenerate fit) for an intercept: a pure ratio.
    p.a_ms_ = 0;
    p.b_ = sxy / sxx;
  }
  std::vector<double> predicted;
  double se = 0;
  for (size_t i = 0; i < sums.size(); ++i) {
    predicted.push_back(p.a_ms_ + p.b_ * sums[i]);
    const double rel = predicted.back() / measured[i] - 1;
    se += rel * rel;
  }
  p.rel_std_ = std::sqrt(se / static_cast<double>(sums.size()));

  p.info_.models = static_cast<int>(sums.size());
  p.info_.op_samples = static_cast<int>(all.size());
  p.info_.kernel_models = static_cast<int>(p.kernel_models_.size());
  p.info_.op_kind_models = static_cast<int>(p.op_models_.size());
  p.info_.calibration = evaluate_predictions(predicted, measured);
  return p;
}

const LatencyPredictor::OpModel* LatencyPredictor::model_for(const OpFeatures& op, OpModelLevel& level) const {
  if (auto it = kernel_models_.find(op.family); it != kernel_models_.end()) {
    level = OpModelLevel::kKernel;
    return &it->second;
  }
  if (auto it = op_models_.find(op.op_type); it != op_models_.end()) {
    level = OpModelLevel::kOpKind;
    return &it->second;
  }
  level = OpModelLevel::kRoofline;
  return nullptr;
}

double LatencyPredictor::predict_op(const OpFeatures& op, double* spread_ms, OpModelLevel* level) const {
  OpModelLevel lv;
  const OpModel* m = model_for(op, lv);
  if (level) *level = lv;
  if (!m) {
    const double t = std::max(0.0, roofline_.predict_ms(op.macs, op.bytes));
    if (spread_ms) *spread_ms = t * roofline_rel_std_;
    return t;
  }
  if (!spread_ms) return std::exp(m->forest.predict(op.x.data())) * op.work;
  double mean = 0, sd = 0;
  m->forest.predict_with_spread(op.x.data(), mean, sd);
  const double t = std::exp(mean) * op.work;
  *spread_ms = t * sd;  // log-space spread as a relative one
  return t;
}

double LatencyPredictor::predict_latency_ms(const std::vector<OpFeatures>& ops) const {
  double sum = 0;
  for (const OpFeatures& op : ops) sum += predict_op(op, nullptr, nullptr);
  return a_ms_ + b_ * sum;
}

Prediction LatencyPredictor::predict(const std::vector<OpFeatures>& ops) const {
  Prediction p;
  p.ops.resize(ops.size());
  double sum = 0, var = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    OpPrediction& o = p.ops[i];
    const double t = predict_op(ops[i], &o.spread_ms, &o.level);
    sum += t;
    o.time_ms = b_ * t;
    o.spread_ms *= b_;
    var += o.spread_ms * o.spread_ms;
  }
  p.overhead_ms = a_ms_;
  p.latency_ms = a_ms_ + b_ * sum;
  const double model_sd = rel_std_ * p.latency_ms;
  p.uncertainty_ms = std::sqrt(var + model_sd * model_sd);
  return p;
}

}  // namespace xnn::predict
