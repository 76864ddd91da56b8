// Calibration: runs the float model (prepare_float_model) on sample inputs and records, for every
// float activation tensor (graph inputs and node outputs), its range and then its histograms
// (histogram.h). The graph is copied with every such tensor added as an extra graph output, so
// the session computes exactly what it always does and hands the intermediates back.
//
// Two passes over the samples: the first finds each tensor's range, the second fills histograms
// over that fixed range. Memory stays at one batch of activations plus the histograms, whatever
// the number of samples.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "compress/quantize/batched_run.h"
#include "compress/quantize/calibration_method.h"
#include "compress/quantize/histogram.h"

namespace xnn::quantize {

struct CalibrationStats {
  std::map<std::string, Histogram> histograms;  // by value name
  // By value name, for tensors of rank >= 2: the mean of each channel (axis 1) over the other
  // axes and all samples; bias correction reads its layers' input means here.
  std::map<std::string, std::vector<double>> channel_means;
  int64_t samples = 0;
};

// `samples` is [N, ...] for the model's single input (N >= 1).
CalibrationStats collect_statistics(const Model& float_model, const Tensor& samples, const BatchOptions& options);

// The clipping range of every observed tensor under one calibration method.
std::map<std::string, Range> choose_ranges(const CalibrationStats& stats, const CalibrationSettings& settings);

}  // namespace xnn::quantize
