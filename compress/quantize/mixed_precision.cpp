#include "compress/quantize/mixed_precision.h"

#include "engine/core/error.h"

namespace xnn::quantize {

MixedPrecisionResult choose_mixed_precision(const Model& float_model, const std::map<std::string, Range>& ranges,
                                            const QuantizeOptions& base, const SensitivityReport& sensitivity,
                                            const LabelledSamples& samples, double budget_points,
                                            const BatchOptions& options) {
  if (!(budget_points >= 0)) throw Error("accuracy budget must be >= 0 points, got " + std::to_string(budget_points));
  MixedPrecisionResult r;
  r.fp32_top1 = sensitivity.has_top1 ? sensitivity.fp32_top1 : top1_accuracy(float_model, samples, options);
  QuantizeOptions current = base;
  std::vector<std::string> kept;
  size_t next = 0;
  while (true) {
    const double top1 = top1_accuracy(quantize_model_graph(float_model, ranges, current), samples, options);
    const double drop = (r.fp32_top1 - top1) * 100.0;
    r.steps.push_back({kept, top1, drop});
    // A small epsilon: the drop is a difference of two fractions of the same sample count.
    if (drop <= budget_points + 1e-9) {
      r.budget_met = true;
      break;
    }
    while (next < sensitivity.layers.size() && current.exclude.count(sensitivity.layers[next].name)) ++next;
    if (next >= sensitivity.layers.size()) break;  // everything is fp32 already
    const std::string& layer = sensitivity.layers[next++].name;
    current.exclude.insert(layer);
    kept.push_back(layer);
  }
  r.fp32_layers = kept;
  return r;
}

}  // namespace xnn::quantize
