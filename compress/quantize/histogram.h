// Activation statistics gathered during calibration: the observed range of a tensor (first
// pass), then histograms over that range (second pass) from which the calibration methods
// (calibration_method.h) choose the clipping range that is quantised.
//
// Two histograms per tensor, both kHistogramBins bins:
//   counts      over [lo, hi] with lo = min(observed min, 0), hi = max(observed max, 0): the
//               signed distribution, used by percentile and MSE (asymmetric ranges);
//   abs_counts  over [0, max(-lo, hi)]: the distribution of |x|, used by KL divergence, which
//               like TensorRT's entropy calibration searches one threshold t and clips to [-t, t].
// The range always contains 0 because a quantised tensor must represent 0 exactly (padding,
// ReLU outputs).
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

namespace xnn::quantize {

constexpr int kHistogramBins = 2048;

// The observed extremes of a tensor (NaNs ignored).
struct ObservedRange {
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
  void add(const float* x, int64_t n);
  bool empty() const { return min > max; }
};

class Histogram {
 public:
  Histogram() = default;
  // An empty histogram over the range `r` widened to contain 0 (an empty range gives [0, 0]).
  explicit Histogram(const ObservedRange& r, int bins = kHistogramBins);

  // Counts every finite value of x; values outside [lo, hi] land in the end bins.
  void add(const float* x, int64_t n);

  float lo() const { return lo_; }
  float hi() const { return hi_; }
  float observed_min() const { return observed_.min; }
  float observed_max() const { return observed_.max; }
  float abs_max() const { return lo_ < 0 ? (-lo_ > hi_ ? -lo_ : hi_) : hi_; }
  int bins() const { return static_cast<int>(counts_.size()); }
  float bin_width() const { return (hi_ - lo_) / static_cast<float>(bins()); }
  float abs_bin_width() const { return abs_max() / static_cast<float>(bins()); }
  // Centre of signed bin i.
  float bin_centre(int i) const { return lo_ + (static_cast<float>(i) + 0.5f) * bin_width(); }
  const std::vector<double>& counts() const { return counts_; }
  const std::vector<double>& abs_counts() const { return abs_counts_; }
  double total() const { return total_; }

 private:
  ObservedRange observed_;
  float lo_ = 0, hi_ = 0;
  std::vector<double> counts_, abs_counts_;
  double total_ = 0;
};

}  // namespace xnn::quantize
