// Per-layer sensitivity and greedy mixed precision (sensitivity.h, mixed_precision.h).
#include <gtest/gtest.h>

#include <cmath>

#include "compress/quantize/float_model.h"
#include "compress/quantize/mixed_precision.h"
#include "compress/quantize/quantizer.h"
#include "tests/compress/test_graph.h"

namespace xnn::quantize {
namespace {

using test::random_tensor;

TEST(Sensitivity, SqnrAndTop1Helpers) {
  const Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  EXPECT_TRUE(std::isinf(sqnr_db(a, a)));
  const Tensor b = Tensor::from_vector<float>({1.1f, 2, 3, 4}, {2, 2});
  EXPECT_NEAR(sqnr_db(a, b), 10 * std::log10(30.0 / 0.01), 1e-3);
  EXPECT_THROW(sqnr_db(a, Tensor::from_vector<float>({1, 2}, {2})), Error);
  EXPECT_DOUBLE_EQ(top1_of(a, {1, 0}), 0.5);
  EXPECT_THROW(top1_of(a, {1}), Error);
}

// The small CNN with labels that are its own fp32 predictions: fp32 top-1 is 1 by construction.
struct Calibrated {
  std::shared_ptr<Model> float_model;
  std::map<std::string, Range> ranges;
  LabelledSamples labelled;
};

Calibrated calibrated_cnn(CalibrationMethod method) {
  Calibrated s;
  s.float_model = prepare_float_model(test::small_cnn());
  CalibrationSettings c;
  c.method = method;
  s.ranges = choose_ranges(collect_statistics(*s.float_model, random_tensor({32, 1, 10, 10}, -1, 1, 21), {}), c);
  s.labelled.inputs = random_tensor({200, 1, 10, 10}, -1, 1, 22);
  const Tensor y = run_first_output(*s.float_model, s.labelled.inputs, {});
  for (int64_t i = 0; i < 200; ++i) {
    const float* row = y.data<float>() + i * 4;
    s.labelled.labels.push_back(std::max_element(row, row + 4) - row);
  }
  return s;
}

TEST(Sensitivity, EveryLayerIsMeasuredAndRanked) {
  const Calibrated s = calibrated_cnn(CalibrationMethod::kMinMax);
  const SensitivityReport r = analyse_sensitivity(*s.float_model, s.ranges, {}, Tensor(), &s.labelled, {});
  ASSERT_TRUE(r.has_top1);
  EXPECT_DOUBLE_EQ(r.fp32_top1, 1.0);
  ASSERT_EQ(r.layers.size(), 5u);
  std::set<std::string> names;
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const LayerSensitivity& l = r.layers[i];
    names.insert(l.name);
    EXPECT_TRUE(l.has_top1);
    EXPECT_GT(l.sqnr_db, 10.0) << l.name;
    EXPECT_NEAR(l.top1_drop_points, (1.0 - l.top1) * 100, 1e-9);
    if (i > 0) {
      const LayerSensitivity& prev = r.layers[i - 1];
      EXPECT_TRUE(prev.top1_drop_points > l.top1_drop_points ||
                  (prev.top1_drop_points == l.top1_drop_points && prev.sqnr_db <= l.sqnr_db))
          << prev.name << " before " << l.name;
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"conv1", "conv2", "add", "gap", "fc"}));
  // Without labels: SQNR only, on the probe inputs.
  const SensitivityReport u = analyse_sensitivity(*s.float_model, s.ranges, {}, s.labelled.inputs, nullptr, {});
  EXPECT_FALSE(u.has_top1);
  for (size_t i = 1; i < u.layers.size(); ++i) EXPECT_LE(u.layers[i - 1].sqnr_db, u.layers[i].sqnr_db);
}

TEST(MixedPrecision, KeepsSensitiveLayersFp32UntilTheBudgetIsMet) {
  // Per-tensor weights and min-max ranges make the int8 model lose some of the 200 labels.
  const Calibrated s = calibrated_cnn(CalibrationMethod::kMinMax);
  QuantizeOptions base;
  base.per_channel = false;
  const SensitivityReport sens = analyse_sensitivity(*s.float_model, s.ranges, base, Tensor(), &s.labelled, {});
  const MixedPrecisionResult all_int8 = choose_mixed_precision(*s.float_model, s.ranges, base, sens, s.labelled, 100.0, {});
  ASSERT_EQ(all_int8.steps.size(), 1u);  // a 100-point budget is met by the all-int8 model
  EXPECT_TRUE(all_int8.fp32_layers.empty());
  const double drop = all_int8.steps[0].drop_points;

  // A zero budget: layers go fp32 in ranking order until the drop is 0 (at worst all fp32).
  const MixedPrecisionResult strict = choose_mixed_precision(*s.float_model, s.ranges, base, sens, s.labelled, 0.0, {});
  EXPECT_TRUE(strict.budget_met);
  EXPECT_LE(strict.steps.back().drop_points, 1e-9);
  ASSERT_EQ(strict.steps.size(), strict.fp32_layers.size() + 1);
  for (size_t i = 0; i < strict.fp32_layers.size(); ++i) EXPECT_EQ(strict.fp32_layers[i], sens.layers[i].name);
  if (drop > 0) {
    EXPECT_FALSE(strict.fp32_layers.empty());
  }
  EXPECT_THROW(choose_mixed_precision(*s.float_model, s.ranges, base, sens, s.labelled, -1.0, {}), Error);
}

}  // namespace
}  // namespace xnn::quantize
