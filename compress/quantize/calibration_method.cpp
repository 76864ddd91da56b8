#include "compress/quantize/calibration_method.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/error.h"

namespace xnn::quantize {

CalibrationMethod calibration_method_from_name(const std::string& name) {
  if (name == "minmax") return CalibrationMethod::kMinMax;
  if (name == "percentile") return CalibrationMethod::kPercentile;
  if (name == "kl") return CalibrationMethod::kKl;
  if (name == "mse") return CalibrationMethod::kMse;
  throw Error("unknown calibration method '" + name + "'; expected one of: minmax, percentile, kl, mse");
}

std::string calibration_method_name(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::kMinMax: return "minmax";
    case CalibrationMethod::kPercentile: return "percentile";
    case CalibrationMethod::kKl: return "kl";
    case CalibrationMethod::kMse: return "mse";
  }
  return "?";
}

std::vector<std::string> calibration_method_names() { return {"minmax", "percentile", "kl", "mse"}; }

Range minmax_range(const Histogram& h) { return Range{h.lo(), h.hi()}; }

namespace {

// The position (a value in [lo, hi]) below which `mass` of the histogram's counts lie, scanning
// from the bottom; interpolated linearly inside the bin where the mass is reached.
float position_from_bottom(const Histogram& h, double mass) {
  const std::vector<double>& c = h.counts();
  double seen = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (seen + c[i] >= mass && c[i] > 0) {
      const double frac = (mass - seen) / c[i];
      return h.lo() + static_cast<float>((static_cast<double>(i) + frac) * h.bin_width());
    }
    seen += c[i];
  }
  return h.hi();
}

float position_from_top(const Histogram& h, double mass) {
  const std::vector<double>& c = h.counts();
  double seen = 0;
  for (size_t i = c.size(); i-- > 0;) {
    if (seen + c[i] >= mass && c[i] > 0) {
      const double frac = (mass - seen) / c[i];
      return h.lo() + static_cast<float>((static_cast<double>(i + 1) - frac) * h.bin_width());
    }
    seen += c[i];
  }
  return h.lo();
}

Range symmetric_clip(const Histogram& h, float t) { return Range{std::max(h.lo(), -t), std::min(h.hi(), t)}; }

// MXNet's smoothing: move eps of mass onto every empty bin, taken evenly from the others.
void smooth(std::vector<double>& p) {
  constexpr double kEps = 1e-4;
  size_t zeros = 0;
  for (double v : p) zeros += v == 0 ? 1 : 0;
  const size_t nonzeros = p.size() - zeros;
  if (zeros == 0 || nonzeros == 0) return;
  const double take = kEps * static_cast<double>(zeros) / static_cast<double>(nonzeros);
  for (double& v : p) v = v == 0 ? kEps : v - take;
}

// KL(P || Q) of two unnormalised distributions (both normalised here).
double kl_divergence(const std::vector<double>& p, const std::vector<double>& q) {
  double sp = 0, sq = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    sp += p[i];
    sq += q[i];
  }
  if (sp <= 0 || sq <= 0) return std::numeric_limits<double>::infinity();
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double pi = p[i] / sp, qi = q[i] / sq;
    if (pi <= 0) continue;
    if (qi <= 0) return std::numeric_limits<double>::infinity();
    kl += pi * std::log(pi / qi);
  }
  return kl;
}

}  // namespace

Range percentile_range(const Histogram& h, double percentile) {
  if (!(percentile > 0 && percentile <= 100)) {
    throw Error("percentile calibration: percentile must be in (0, 100], got " + std::to_string(percentile));
  }
  if (h.total() <= 0) return minmax_range(h);
  const double cut = h.total() * (100.0 - percentile) / 100.0;
  if (h.lo() >= 0) return Range{0.0f, std::max(0.0f, position_from_top(h, cut))};
  if (h.hi() <= 0) return Range{std::min(0.0f, position_from_bottom(h, cut)), 0.0f};
  return Range{std::min(0.0f, position_from_bottom(h, cut / 2)), std::max(0.0f, position_from_top(h, cut / 2))};
}

float kl_threshold(const std::vector<double>& abs_counts, float bin_width, int levels) {
  const int bins = static_cast<int>(abs_counts.size());
  if (levels < 2) throw Error("KL calibration: levels must be >= 2, got " + std::to_string(levels));
  if (bins <= levels) return static_cast<float>(bins) * bin_width;  // too few bins to clip anything
  // Suffix sums give each candidate's clipped tail in O(1).
  std::vector<double> tail(static_cast<size_t>(bins) + 1, 0.0);
  for (int i = bins; i-- > 0;) tail[static_cast<size_t>(i)] = tail[static_cast<size_t>(i) + 1] + abs_counts[static_cast<size_t>(i)];
  if (tail[0] <= 0) return static_cast<float>(bins) * bin_width;

  double best = std::numeric_limits<double>::infinity();
  int best_i = bins;
  std::vector<double> p, q;
  for (int i = levels; i <= bins; ++i) {
    p.assign(abs_counts.begin(), abs_counts.begin() + i);
    p[static_cast<size_t>(i) - 1] += tail[static_cast<size_t>(i)];
    // Merge the first i bins (without the outliers) into `levels` groups; the remainder of the
    // integer division joins the last group.
    const int merged = i / levels;
    q.assign(static_cast<size_t>(i), 0.0);
    for (int j = 0; j < levels; ++j) {
      const int start = j * merged, stop = j == levels - 1 ? i : start + merged;
      double sum = 0;
      int nonzero = 0;
      for (int k = start; k < stop; ++k) {
        sum += abs_counts[static_cast<size_t>(k)];
        nonzero += abs_counts[static_cast<size_t>(k)] != 0 ? 1 : 0;
      }
      if (nonzero == 0) continue;
      for (int k = start; k < stop; ++k) {
        if (abs_counts[static_cast<size_t>(k)] != 0) q[static_cast<size_t>(k)] = sum / nonzero;
      }
    }
    smooth(p);
    smooth(q);
    const double kl = kl_divergence(p, q);
    if (kl < best) {
      best = kl;
      best_i = i;
    }
  }
  return static_cast<float>(best_i) * bin_width;
}

Range kl_range(const Histogram& h) {
  if (h.total() <= 0 || h.abs_max() <= 0) return minmax_range(h);
  const bool one_sided = h.lo() >= 0 || h.hi() <= 0;
  // The spike of exact zeros a ReLU leaves in the first bin would dominate the divergence and
  // pull the threshold down; like NVIDIA's pytorch-quantization entropy calibrator, the first
  // bin takes the second's count for the search.
  std::vector<double> counts = h.abs_counts();
  if (counts.size() > 1) counts[0] = counts[1];
  const float t = kl_threshold(counts, h.abs_bin_width(), one_sided ? 256 : 128);
  return symmetric_clip(h, t);
}

double expected_quantization_mse(const Histogram& h, Range r) {
  if (h.total() <= 0) return 0;
  const ActivationParams p = uint8_params(r);
  const double lo = p.min_real(), hi = p.max_real();
  const double in_range = static_cast<double>(p.scale) * p.scale / 12.0;
  const std::vector<double>& c = h.counts();
  double err = 0;
  for (int i = 0; i < h.bins(); ++i) {
    const double n = c[static_cast<size_t>(i)];
    if (n == 0) continue;
    const double x = h.bin_centre(i);
    if (x < lo) err += n * (lo - x) * (lo - x);
    else if (x > hi) err += n * (x - hi) * (x - hi);
    else err += n * in_range;
  }
  return err / h.total();
}

Range mse_range(const Histogram& h) {
  if (h.total() <= 0 || h.abs_max() <= 0) return minmax_range(h);
  Range best = minmax_range(h);
  double best_err = expected_quantization_mse(h, best);
  const int bins = h.bins();
  for (int i = 1; i < bins; ++i) {
    const Range r = symmetric_clip(h, static_cast<float>(i) * h.abs_bin_width());
    const double err = expected_quantization_mse(h, r);
    if (err < best_err) {
      best_err = err;
      best = r;
    }
  }
  return best;
}

Range choose_range(const Histogram& h, const CalibrationSettings& s) {
  switch (s.method) {
    case CalibrationMethod::kMinMax: return minmax_range(h);
    case CalibrationMethod::kPercentile: return percentile_range(h, s.percentile);
    case CalibrationMethod::kKl: return kl_range(h);
    case CalibrationMethod::kMse: return mse_range(h);
  }
  throw Error("unknown calibration method");
}

}  // namespace xnn::quantize
