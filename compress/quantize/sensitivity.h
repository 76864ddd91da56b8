// Which layers quantisation hurts: each quantisable layer is quantised on its own (every other
// layer kept fp32) and the model's first output compared with the fp32 model's on probe inputs:
//   SQNR = 10·log10(Σ y_fp32² / Σ (y_fp32 - y_int8)²) in dB (higher is better; infinite when equal),
//   and, with labelled samples, the top-1 drop in points (fp32 top-1 - top-1 with that layer int8).
// Layers are ranked most sensitive first: largest top-1 drop when labels are given, ties (and the
// unlabelled case) broken by the lower SQNR.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compress/quantize/batched_run.h"
#include "compress/quantize/quantize_graph.h"

namespace xnn::quantize {

struct LabelledSamples {
  Tensor inputs;                 // [N, ...] for the model's single input
  std::vector<int64_t> labels;   // N class indices
};

// Fraction of rows of `scores` ([N, classes] or any [N, ...]: N rows) whose argmax is the label.
double top1_of(const Tensor& scores, const std::vector<int64_t>& labels);
double top1_accuracy(const Model& model, const LabelledSamples& samples, const BatchOptions& options);
// SQNR in dB of `test` against `reference` (same shape, f32); +inf when they are identical.
double sqnr_db(const Tensor& reference, const Tensor& test);

struct LayerSensitivity {
  std::string name, op_type;
  double sqnr_db = 0;
  bool has_top1 = false;
  double top1 = 0;             // fraction, with only this layer int8
  double top1_drop_points = 0; // (fp32 top-1 - top1) · 100
};

struct SensitivityReport {
  std::vector<LayerSensitivity> layers;  // most sensitive first
  bool has_top1 = false;
  double fp32_top1 = 0;
};

// `probe` are the inputs SQNR is measured on (unused when `labelled` is given: its inputs are the
// probe then). `base` supplies per_channel; its exclusions are ignored here.
SensitivityReport analyse_sensitivity(const Model& float_model, const std::map<std::string, Range>& ranges,
                                      const QuantizeOptions& base, const Tensor& probe, const LabelledSamples* labelled,
                                      const BatchOptions& options);

}  // namespace xnn::quantize
