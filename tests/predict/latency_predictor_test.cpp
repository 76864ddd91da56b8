#include "harness/predict/latency_predictor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "synthetic_ops.h"

namespace xnn::predict {
namespace {

using testing::features_of;
using testing::synthetic_models;

TEST(LatencyPredictor, RecoversModelTotalsFromPerOpData) {
  const std::vector<CalibrationModel> train = synthetic_models(80, 40, 1, 0.05, 1.1, 0.02);
  const LatencyPredictor p = LatencyPredictor::fit(train, PredictorFitOptions{});
  EXPECT_EQ(p.info().models, 80);
  EXPECT_EQ(p.info().op_samples, 80 * 40);
  EXPECT_EQ(p.info().kernel_models, 3);
  EXPECT_NEAR(p.scale(), 1.1, 0.05);
  EXPECT_NEAR(p.overhead_ms(), 0.05, 0.05);
  EXPECT_GT(p.info().calibration.within_10, 0.95);

  // Held-out models (another seed): predicted totals match the truth.
  const std::vector<CalibrationModel> test = synthetic_models(30, 40, 2, 0.05, 1.1, 0.0);
  std::vector<double> predicted, measured;
  for (const CalibrationModel& m : test) {
    const Prediction pr = p.predict(features_of(m));
    predicted.push_back(pr.latency_ms);
    measured.push_back(m.measured_ms);
    EXPECT_NEAR(pr.latency_ms, m.measured_ms, 0.05 * m.measured_ms) << m.name;
    EXPECT_GT(pr.uncertainty_ms, 0);
    EXPECT_DOUBLE_EQ(pr.latency_ms, p.predict_latency_ms(features_of(m)));
    double op_sum = 0;
    for (const OpPrediction& o : pr.ops) {
      EXPECT_EQ(o.level, OpModelLevel::kKernel);
      op_sum += o.time_ms;
    }
    EXPECT_NEAR(pr.overhead_ms + op_sum, pr.latency_ms, 1e-9);
  }
  const PredictionMetrics m = evaluate_predictions(predicted, measured);
  EXPECT_EQ(m.within_10, 1.0);
  EXPECT_GT(m.spearman, 0.95);
}

TEST(LatencyPredictor, FallsBackToOpKindThenRoofline) {
  std::vector<CalibrationModel> train = synthetic_models(40, 30, 3);
  // A second depthwise kernel with only three samples: too few for its own forest.
  for (int i = 0; i < 3; ++i) {
    OpFeatures f = featurize_op("rare", "FusedConv", "f32_dwconv5x5s2__avx2",
                                OpShapes{{{1, 32, 28, 28}, {32, 1, 5, 5}}, {{1, 32, 14, 14}}});
    train[static_cast<size_t>(i)].ops.push_back(OpSample{f, 0.01});
  }
  const LatencyPredictor p = LatencyPredictor::fit(train, PredictorFitOptions{});
  const std::vector<OpFeatures> ops = {
      featurize_op("dw5", "FusedConv", "f32_dwconv5x5s2__avx2", OpShapes{{{1, 32, 28, 28}, {32, 1, 5, 5}}, {{1, 32, 14, 14}}}),
      featurize_op("mul", "Mul", "f32_vmul__avx2", OpShapes{{{1, 32, 28, 28}, {1, 32, 28, 28}}, {{1, 32, 28, 28}}}),
      featurize_op("dw3", "FusedConv", "f32_dwconv3x3s1__avx2", OpShapes{{{1, 32, 28, 28}, {32, 1, 3, 3}}, {{1, 32, 28, 28}}})};
  const Prediction pr = p.predict(ops);
  EXPECT_EQ(pr.ops[0].level, OpModelLevel::kOpKind);    // FusedConv forest, not its own
  EXPECT_EQ(pr.ops[1].level, OpModelLevel::kRoofline);  // no Mul in the calibration data
  EXPECT_EQ(pr.ops[2].level, OpModelLevel::kKernel);
  for (const OpPrediction& o : pr.ops) EXPECT_GT(o.time_ms, 0);
  EXPECT_STREQ(level_name(OpModelLevel::kRoofline), "roofline");
}

TEST(LatencyPredictor, DeterministicForASeed) {
  const std::vector<CalibrationModel> train = synthetic_models(30, 20, 4, 0.05, 1.1, 0.05);
  const LatencyPredictor a = LatencyPredictor::fit(train, PredictorFitOptions{});
  const LatencyPredictor b = LatencyPredictor::fit(train, PredictorFitOptions{});
  EXPECT_EQ(a.to_json(), b.to_json());
}

TEST(LatencyPredictor, NothingToFitIsAnError) {
  EXPECT_THROW(LatencyPredictor::fit({}, PredictorFitOptions{}), Error);
  std::vector<CalibrationModel> no_times = synthetic_models(2, 3, 5);
  for (auto& m : no_times) {
    for (auto& s : m.ops) s.time_ms = 0;
  }
  EXPECT_THROW(LatencyPredictor::fit(no_times, PredictorFitOptions{}), Error);
}

TEST(RooflineFit, RecoversNonNegativeCoefficients) {
  std::vector<double> macs, bytes, t;
  for (int i = 1; i <= 50; ++i) {
    macs.push_back(1e5 * i);
    bytes.push_back(4e4 * ((i * 7) % 13 + 1));
    t.push_back(0.001 + 2e-9 * macs.back() + 5e-9 * bytes.back());
  }
  const RooflineFit f = RooflineFit::fit(macs, bytes, t);
  EXPECT_NEAR(f.c0, 0.001, 1e-6);
  EXPECT_NEAR(f.c_macs, 2e-9, 1e-12);
  EXPECT_NEAR(f.c_bytes, 5e-9, 1e-12);
  // Time falling with bytes would need a negative coefficient: it is dropped instead.
  std::vector<double> t2;
  for (size_t i = 0; i < macs.size(); ++i) t2.push_back(0.002 + 2e-9 * macs[i] - 1e-9 * bytes[i]);
  const RooflineFit g = RooflineFit::fit(macs, bytes, t2);
  EXPECT_EQ(g.c_bytes, 0);
  EXPECT_GE(g.c0, 0);
  EXPECT_GT(g.c_macs, 0);
  EXPECT_THROW(RooflineFit::fit({}, {}, {}), Error);
}

}  // namespace
}  // namespace xnn::predict
