// The `train` experiment step: trains the variant's model (its initialisers become trainable)
// with a training config, and hands the trained .xnn to the next step.
//
//   variants:
//     - name: finetuned
//       steps:
//         - {type: train, config: ../train/fmnist_small_cnn.yaml, epochs: 2, train_limit: 5000}
//
// Keys besides `config` are overrides of the training config (epochs, threads, seed, lr,
// batch_size, train_limit, test_limit); the model always comes from the variant.
#pragma once
#include "harness/steps/step.h"

namespace xnn::train {

void register_train_step(StepRegistry& registry);

}  // namespace xnn::train
