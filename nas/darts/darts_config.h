// The `darts:` section of a NAS config (method: darts; schema in configs/nas/README.md):
// how the supernet is fixed (width, resolution, activation), the relaxation, the search
// schedule, the architecture optimiser and the latency weight(s).
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nas/nas_config.h"

namespace xnn::nas {

struct DartsOptions {
  double width = 0;                       // a width multiplier of the space; default its first
  int64_t resolution = 0;                 // a resolution of the space; default its first
  std::string activation;                 // every block's activation; default stage 0's first
  std::string relaxation = "softmax";     // softmax | gumbel
  double tau_start = 5.0, tau_end = 0.5;  // Gumbel-softmax temperature, annealed exponentially per step
  int epochs = 8;                         // search epochs (each a pass over the weight split)
  int warmup_epochs = 2;                  // first epochs train the weights only (alphas frozen)
  double val_fraction = 0.5;              // share of the search images that steers the alphas
  int64_t train_limit = 0;                // images of the train split the search uses; 0: the recipe's
  double alpha_lr = 3e-3;                 // Adam on the architecture weights (DARTS: beta1 0.5)
  double alpha_beta1 = 0.5;
  double alpha_weight_decay = 1e-3;
  std::vector<double> lambdas{0.0};  // latency weights: loss = CE + λ·E[latency ms]; one search each
  std::string location;              // FILE:LINE:COL of the section
};

// Parses config.method_options (strict keys; errors name FILE:LINE:COL and the key) and checks
// the choices against config.space. A config with `hyperparameters` is refused (darts
// retrains with the recipe's values; it searches no hyper-parameter).
DartsOptions parse_darts_options(const NasConfig& config);

}  // namespace xnn::nas
