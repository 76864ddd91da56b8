// Experiment steps over the compression pipeline (compress_pipeline.h):
//
//   variants:
//     - name: deep_compression
//       steps:
//         - {type: train, config: ../train/lenet_300_100.yaml}
//         - {type: compress, recipe: deep_compression_mlp.yaml, eval_limit: 1000}
//     - name: pruned
//       steps:
//         - {type: prune, target_sparsity: 0.9, schedule: gradual,
//            finetune: {config: ../train/lenet_300_100.yaml, epochs: 2}}
//
// `compress`: recipe (required, relative to the experiment config), eval_limit (test images
// for the per-stage top-1, default 1000; 0 = all), scale / mean / std (default: the
// normalisation of configs/train), threads. `prune`: the keys of a recipe's prune stage
// (recipe.h) plus eval_limit / scale / mean / std / threads. Both save the model (coded when the
// recipe ends with encode) for the next step and write compress_report.json (compress --json's
// content: every stage's size and top-1) next to it; the runner's own metrics measure the result.
#pragma once
#include "harness/steps/step.h"

namespace xnn::compress_recipe {

void register_compress_steps(StepRegistry& registry);

}  // namespace xnn::compress_recipe
