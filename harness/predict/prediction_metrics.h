// How well predicted latencies match measured ones (nn-Meter's evaluation): the share of
// predictions within +-10% of the measurement, RMSE in ms and in percent of the measurement,
// mean absolute percentage error, and Spearman's rank correlation (ties get average ranks).
#pragma once
#include <vector>

namespace xnn::predict {

struct PredictionMetrics {
  int count = 0;
  double within_10 = 0;      // share (0..1) with |predicted - measured| <= 10% of measured
  double rmse_ms = 0;
  double rmse_percent = 0;   // root mean square of the relative error, in percent
  double mape_percent = 0;
  double spearman = 0;       // NaN when either side is constant
};

// Throws xnn::Error when the vectors differ in length, are empty, or a measurement is not > 0.
PredictionMetrics evaluate_predictions(const std::vector<double>& predicted, const std::vector<double>& measured);

// 1-based ranks, ties sharing the average of the ranks they span.
std::vector<double> average_ranks(const std::vector<double>& values);
// Pearson correlation of the average ranks; NaN when a side is constant or has < 2 values.
double spearman_correlation(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace xnn::predict
