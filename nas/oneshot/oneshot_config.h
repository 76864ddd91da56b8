// The `oneshot:` section of a NAS config (`method: oneshot`; schema in configs/nas/README.md):
// how the weight-sharing supernet is trained, how subnets are scored with inherited weights and
// how many winners are retrained from scratch. The rest of the NAS config keeps its meaning:
// `trials` is the number of subnets the search scores, `strategy` searches them (aging
// evolution by default), `train` is the recipe of the supernet (optimizer, schedule, data) and
// of the retrained winners and baselines.
#pragma once
#include <cstdint>

#include "nas/nas_config.h"
#include "nas/oneshot/supernet_weights.h"

namespace xnn::nas {

struct OneshotOptions {
  double width = 0;             // the supernet's width multiplier; default the space's largest
  int epochs = 0;               // supernet training epochs; default the recipe's
  int steps_per_path = 1;       // optimiser steps on one sampled path before the next is drawn
  // Which block tensors the choices share (supernet_weights.h): none (SPOS: one set per kernel x
  // expansion x SE), se (SE on/off share), pointwise (the 1x1 convolutions shared across
  // kernels and SE). Part of the checkpoint's fingerprint.
  WeightSharing sharing = WeightSharing::kNone;
  // none: one supernet; stem_stride: one sub-supernet per stem stride (few-shot NAS,
  // supernet_weights.h), each trained on every batch with a path of its own (so each gets the
  // epochs a supernet of its paths alone would; a step costs the sum of the paths). Needs a space
  // whose stem stride is a decision. Part of the checkpoint's fingerprint.
  SupernetSplit split = SupernetSplit::kNone;
  int64_t validation_size = 5000;  // training images held out to score subnets (never trained on)
  int bn_batches = 8;           // training batches that re-calibrate a subnet's BatchNorm statistics
  int retrain = 2;              // front candidates (best inherited top-1 first) retrained from scratch;
                                // 0 only with retrain_at_baselines
  // Also retrain, per baseline, the front subnet with the best inherited top-1 among those no
  // slower than the baseline (its untrained model measured with the search's latency source):
  // the subnet specialised to each baseline's latency, so "does the search dominate it" is
  // answered by a trained model rather than by whichever winners the accuracy ranking picked.
  bool retrain_at_baselines = false;
  // With retrain_at_baselines: how many subnets per baseline, the best inherited top-1 first
  // among every scored subnet within its latency (the first is always on the front). Inherited
  // accuracy ranks close subnets poorly, so a second or third pick can retrain better.
  int retrain_per_baseline = 1;
  // With retrain_at_baselines: picks only among subnets of at least retrain_band x the
  // baseline's latency (0..1; 0: any). A pick exists to be compared with its baseline, and
  // inherited accuracy favours small subnets (each of their weights got more of the supernet's
  // updates), so without a floor a slow baseline's picks can all be subnets far faster and
  // weaker than it.
  double retrain_band = 0;
  // With retrain_at_baselines: per baseline, a study of this many more subnets maximising
  // inherited top-1 under the baseline's latency (its own study "<name>.subnets.<baseline>"),
  // whose subnets join the picks' pool; 0: the picks come from the main search alone. With
  // retrain_band, the study's subnets must also be at least that fraction of the baseline's
  // latency (a second constraint): it searches the band the picks come from, rather than
  // gathering at the band's cheap end where inherited top-1 is highest.
  int trials_per_baseline = 0;
  // Screening by short training (multi-fidelity, as successive halving's first rung): with
  // screen_epochs > 0, each baseline's picks are first trained from scratch for screen_epochs
  // epochs with the recipe (its schedule compressed to them) and scored on the held-out
  // validation images; only the screen_keep best go on to the full retrain. Inherited accuracy
  // ranks subnets of similar cost poorly; a few epochs of real training rank them better, at a
  // fraction of a full retrain each. Never the test set: it reports, it does not choose.
  int screen_epochs = 0;
  int screen_keep = 1;
};

// Reads config.method_options (strict keys; errors name FILE:LINE:COL and the key) and checks
// the rest of the config fits a one-shot search (no pruner, no searched hyper-parameters).
OneshotOptions parse_oneshot_options(const NasConfig& config);

}  // namespace xnn::nas
