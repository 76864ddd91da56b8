#include "compress/quantize/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/error.h"

namespace xnn::quantize {

double top1_of(const Tensor& scores, const std::vector<int64_t>& labels) {
  if (scores.dtype() != DType::kF32 || scores.rank() == 0) {
    throw Error("top-1: expected f32 scores [N, classes], got " + std::string(dtype_name(scores.dtype())) + " " +
                shape_str(scores.shape()));
  }
  const int64_t n = scores.dim(0);
  if (n != static_cast<int64_t>(labels.size())) {
    throw Error("top-1: " + std::to_string(n) + " score rows but " + std::to_string(labels.size()) + " labels");
  }
  if (n == 0) return 0;
  const int64_t classes = scores.numel() / n;
  const float* p = scores.data<float>();
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = p + i * classes;
    const int64_t best = std::max_element(row, row + classes) - row;
    correct += best == labels[static_cast<size_t>(i)] ? 1 : 0;
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

double top1_accuracy(const Model& model, const LabelledSamples& samples, const BatchOptions& options) {
  return top1_of(run_first_output(model, samples.inputs, options), samples.labels);
}

double sqnr_db(const Tensor& reference, const Tensor& test) {
  if (reference.shape() != test.shape() || reference.dtype() != DType::kF32 || test.dtype() != DType::kF32) {
    throw Error("SQNR: tensors differ: " + std::string(dtype_name(reference.dtype())) + " " + shape_str(reference.shape()) +
                " and " + std::string(dtype_name(test.dtype())) + " " + shape_str(test.shape()));
  }
  double signal = 0, noise = 0;
  const float* r = reference.data<float>();
  const float* t = test.data<float>();
  for (int64_t i = 0; i < reference.numel(); ++i) {
    signal += static_cast<double>(r[i]) * r[i];
    const double d = static_cast<double>(r[i]) - t[i];
    noise += d * d;
  }
  if (noise == 0) return std::numeric_limits<double>::infinity();
  if (signal == 0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);
}

SensitivityReport analyse_sensitivity(const Model& float_model, const std::map<std::string, Range>& ranges,
                                      const QuantizeOptions& base, const Tensor& probe, const LabelledSamples* labelled,
                                      const BatchOptions& options) {
  const Tensor& inputs = labelled ? labelled->inputs : probe;
  SensitivityReport report;
  const Tensor reference = run_first_output(float_model, inputs, options);
  if (labelled) {
    report.has_top1 = true;
    report.fp32_top1 = top1_of(reference, labelled->labels);
  }
  const std::vector<QuantizableLayer> layers = quantizable_layers(float_model.graph);
  for (const QuantizableLayer& layer : layers) {
    QuantizeOptions only = base;
    only.exclude.clear();
    for (const QuantizableLayer& other : layers) {
      if (other.name != layer.name) only.exclude.insert(other.name);
    }
    const Model m = quantize_model_graph(float_model, ranges, only);
    const Tensor y = run_first_output(m, inputs, options);
    LayerSensitivity s;
    s.name = layer.name;
    s.op_type = layer.op_type;
    s.sqnr_db = sqnr_db(reference, y);
    if (labelled) {
      s.has_top1 = true;
      s.top1 = top1_of(y, labelled->labels);
      s.top1_drop_points = (report.fp32_top1 - s.top1) * 100.0;
    }
    report.layers.push_back(s);
  }
  std::stable_sort(report.layers.begin(), report.layers.end(), [](const LayerSensitivity& a, const LayerSensitivity& b) {
    if (a.has_top1 && b.has_top1 && a.top1_drop_points != b.top1_drop_points) return a.top1_drop_points > b.top1_drop_points;
    return a.sqnr_db < b.sqnr_db;
  });
  return report;
}

}  // namespace xnn::quantize
