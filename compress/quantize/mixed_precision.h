// Automatic mixed precision: starting from the all-int8 graph, keep the most sensitive layer in
// fp32 (sensitivity.h's ranking), then the next, until the top-1 drop against fp32 on labelled
// samples is within the budget (in points) or every layer is fp32. Greedy on a fixed ranking: one
// accuracy measurement per step, no search over subsets.
#pragma once
#include <string>
#include <vector>

#include "compress/quantize/sensitivity.h"

namespace xnn::quantize {

struct MixedPrecisionStep {
  std::vector<std::string> fp32_layers;  // kept fp32 at this step
  double top1 = 0;
  double drop_points = 0;
};

struct MixedPrecisionResult {
  double fp32_top1 = 0;
  std::vector<MixedPrecisionStep> steps;  // steps[0]: all layers int8
  std::vector<std::string> fp32_layers;   // of the chosen (last) step
  bool budget_met = false;
};

// `base` supplies per_channel and layers the user already excluded (they stay fp32 throughout).
MixedPrecisionResult choose_mixed_precision(const Model& float_model, const std::map<std::string, Range>& ranges,
                                            const QuantizeOptions& base, const SensitivityReport& sensitivity,
                                            const LabelledSamples& samples, double budget_points,
                                            const BatchOptions& options);

}  // namespace xnn::quantize
