#include "compress/quantize/histogram.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace xnn::quantize {

void ObservedRange::add(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
  }
}

Histogram::Histogram(const ObservedRange& r, int bins)
    : observed_(r), counts_(static_cast<size_t>(bins), 0.0), abs_counts_(static_cast<size_t>(bins), 0.0) {
  if (bins < 1) throw Error("histogram: bins must be >= 1, got " + std::to_string(bins));
  if (!r.empty()) {
    lo_ = std::min(r.min, 0.0f);
    hi_ = std::max(r.max, 0.0f);
  }
}

namespace {

// Bin of v in [0, width * bins), clamped to the end bins.
inline size_t bin_of(float v, float origin, float extent, int bins) {
  if (extent <= 0) return 0;
  const float pos = (v - origin) / extent * static_cast<float>(bins);
  if (!(pos > 0)) return 0;
  return static_cast<size_t>(std::min(static_cast<int64_t>(pos), static_cast<int64_t>(bins - 1)));
}

}  // namespace

void Histogram::add(const float* x, int64_t n) {
  const int b = bins();
  const float extent = hi_ - lo_, abs_extent = abs_max();
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (!std::isfinite(v)) continue;
    counts_[bin_of(v, lo_, extent, b)] += 1.0;
    abs_counts_[bin_of(std::fabs(v), 0.0f, abs_extent, b)] += 1.0;
    total_ += 1.0;
  }
}

}  // namespace xnn::quantize
