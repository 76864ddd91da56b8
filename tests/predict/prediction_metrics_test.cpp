#include "harness/predict/prediction_metrics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"

namespace xnn::predict {
namespace {

TEST(PredictionMetrics, AverageRanksShareTies) {
  EXPECT_EQ(average_ranks({3, 1, 3, 2}), (std::vector<double>{3.5, 1, 3.5, 2}));
  EXPECT_EQ(average_ranks({5, 5, 5}), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(average_ranks({}), std::vector<double>{});
}

TEST(PredictionMetrics, HandComputedValuesWithTies) {
  // Relative errors 0, +10%, -10%, 0, +25%; the measurements hold a tie (4, 4).
  const std::vector<double> predicted = {1.0, 2.2, 2.7, 4.0, 5.0}, measured = {1.0, 2.0, 3.0, 4.0, 4.0};
  const PredictionMetrics m = evaluate_predictions(predicted, measured);
  EXPECT_EQ(m.count, 5);
  EXPECT_DOUBLE_EQ(m.within_10, 0.8);  // exactly 10% off counts as within
  EXPECT_NEAR(m.rmse_ms, std::sqrt(1.13 / 5), 1e-12);
  EXPECT_NEAR(m.rmse_percent, 100 * std::sqrt(0.0825 / 5), 1e-9);
  EXPECT_NEAR(m.mape_percent, 9.0, 1e-9);
  // Ranks 1..5 against 1, 2, 3, 4.5, 4.5: Pearson of the ranks = 9.5 / sqrt(10 * 9.5).
  EXPECT_NEAR(m.spearman, 9.5 / std::sqrt(95.0), 1e-12);
}

TEST(PredictionMetrics, SpearmanIsRankBased) {
  EXPECT_DOUBLE_EQ(spearman_correlation({1, 2, 3, 4}, {10, 100, 1000, 10000}), 1.0);
  EXPECT_DOUBLE_EQ(spearman_correlation({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_TRUE(std::isnan(spearman_correlation({1, 2, 3}, {7, 7, 7})));
  EXPECT_TRUE(std::isnan(spearman_correlation({1}, {1})));
}

TEST(PredictionMetrics, BadInputIsAnError) {
  EXPECT_THROW(evaluate_predictions({1, 2}, {1}), Error);
  EXPECT_THROW(evaluate_predictions({}, {}), Error);
  EXPECT_THROW(evaluate_predictions({1}, {0}), Error);
  EXPECT_THROW(spearman_correlation({1, 2}, {1}), Error);
}

}  // namespace
}  // namespace xnn::predict
