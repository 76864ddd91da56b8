// The `quantize` experiment step: post-training int8 quantisation of the variant's model
// (harness/quantize/quantize_job.h), saved as .xnn for the next step or for measurement.
//
//   variants:
//     - name: int8
//       steps:
//         - convert
//         - {type: quantize, calib_dataset: fashion-mnist, mean: 0.2860, std: 0.3530, calib_samples: 100,
//            method: minmax}
//
// Keys mirror `xnn-lab quantize`'s flags (underscores for dashes): calib_dataset | calib_npy (one
// of them), data_dir, scale, mean, std, layout, calib_samples, method, percentile, per_tensor,
// bias_correction, reduce_range, exclude (a node name or a list), sensitivity, accuracy_budget,
// val_samples, eval_limit
// (default -1: no test evaluation; the experiment's accuracy metric measures the variant),
// threads. The preprocessing (scale/mean/std/layout) must match the model's, as for `eval`.
// A relative calib_npy / data_dir is relative to the experiment config's folder. Next to the
// model, quantize_report.json records the job's result (quantize --json's content).
#pragma once
#include "harness/steps/step.h"

namespace xnn::ptq {

void register_quantize_step(StepRegistry& registry);

}  // namespace xnn::ptq
