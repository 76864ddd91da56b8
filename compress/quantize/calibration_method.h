// Calibration methods: from a tensor's histograms (histogram.h) to the range [lo, hi] that its
// uint8 parameters cover. Values outside the range saturate; a narrower range buys a finer step
// for the values inside it.
//
//   minmax      the observed range (widened to contain 0).
//   percentile  keeps `percentile` % of the values: the tail mass 100 - p is cut from the top of a
//               non-negative tensor, from the bottom of a non-positive one, and half from each
//               side of a two-sided one (positions interpolated inside a bin).
//   kl          TensorRT's entropy calibration (Migacz, "8-bit Inference with TensorRT", GTC
//               2017) on the |x| histogram: for every candidate threshold bin i (from the number of
//               quantisation levels up to all 2048 bins), P = the first i bins with the clipped
//               tail added to the last one, Q = P's bins merged into `levels` groups and expanded
//               back uniformly over P's non-empty bins; both smoothed (MXNet's eps = 1e-4 moved
//               onto empty bins), the threshold with the smallest KL(P || Q) wins. levels = 256
//               for a non-negative (or non-positive) tensor, which uses all of uint8 on one side,
//               and 128 for a two-sided one (about half the codes per side). The range is
//               [max(lo, -t), min(hi, t)]. The first bin takes the second's count for the
//               search (as NVIDIA's pytorch-quantization does): a ReLU output's spike of exact
//               zeros would otherwise dominate the divergence and drag the threshold down.
//   mse         the symmetric threshold t (every bin edge of the |x| range) whose range
//               [max(lo, -t), min(hi, t)] minimises the expected squared error of uint8
//               quantisation on the signed histogram: step²/12 for a value inside the range, the
//               squared distance to the nearest representable end for one outside it.
#pragma once
#include <string>
#include <vector>

#include "compress/quantize/histogram.h"
#include "compress/quantize/quant_params.h"

namespace xnn::quantize {

enum class CalibrationMethod { kMinMax, kPercentile, kKl, kMse };

// "minmax", "percentile", "kl", "mse"; anything else is an Error listing the names.
CalibrationMethod calibration_method_from_name(const std::string& name);
std::string calibration_method_name(CalibrationMethod m);
std::vector<std::string> calibration_method_names();

struct CalibrationSettings {
  CalibrationMethod method = CalibrationMethod::kMinMax;
  double percentile = 99.99;  // percentile method: the share of values kept, in (0, 100]
};

Range minmax_range(const Histogram& h);
Range percentile_range(const Histogram& h, double percentile);
Range kl_range(const Histogram& h);
Range mse_range(const Histogram& h);
// Dispatches on settings.method; checks settings.percentile.
Range choose_range(const Histogram& h, const CalibrationSettings& settings);

// TensorRT's threshold search on a histogram of |x| (bins of `bin_width` from 0) for `levels`
// quantisation levels: the threshold (a bin edge) with the smallest KL divergence.
float kl_threshold(const std::vector<double>& abs_counts, float bin_width, int levels);
// The expected squared error per value of quantising the histogram's values to uint8 with the
// parameters of range r (the model mse_range minimises).
double expected_quantization_mse(const Histogram& h, Range r);

}  // namespace xnn::quantize
