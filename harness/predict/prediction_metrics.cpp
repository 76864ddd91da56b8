#include "harness/predict/prediction_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/core/error.h"

namespace xnn::predict {

std::vector<double> average_ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    const double rank = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

double spearman_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw Error("spearman: sequences of different lengths");
  if (a.size() < 2) return std::nan("");
  const std::vector<double> ra = average_ranks(a), rb = average_ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n, mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (saa == 0 || sbb == 0) return std::nan("");
  return sab / std::sqrt(saa * sbb);
}

PredictionMetrics evaluate_predictions(const std::vector<double>& predicted, const std::vector<double>& measured) {
  if (predicted.size() != measured.size()) {
    throw Error("prediction metrics: " + std::to_string(predicted.size()) + " predictions for " +
                std::to_string(measured.size()) + " measurements");
  }
  if (measured.empty()) throw Error("prediction metrics: no measurements");
  PredictionMetrics m;
  m.count = static_cast<int>(measured.size());
  double within = 0, se = 0, se_rel = 0, ae_rel = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    if (!(measured[i] > 0)) throw Error("prediction metrics: measurement " + std::to_string(i) + " is not positive");
    const double err = predicted[i] - measured[i], rel = err / measured[i];
    // A hair of tolerance so a prediction exactly 10% off counts as within, despite rounding.
    if (std::fabs(rel) <= 0.10 + 1e-12) ++within;
    se += err * err;
    se_rel += rel * rel;
    ae_rel += std::fabs(rel);
  }
  const double n = static_cast<double>(measured.size());
  m.within_10 = within / n;
  m.rmse_ms = std::sqrt(se / n);
  m.rmse_percent = 100.0 * std::sqrt(se_rel / n);
  m.mape_percent = 100.0 * ae_rel / n;
  m.spearman = spearman_correlation(predicted, measured);
  return m;
}

}  // namespace xnn::predict
