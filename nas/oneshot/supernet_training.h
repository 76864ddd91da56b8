// Training the one-shot supernet with single-path uniform sampling (SPOS, Guo et al. 2020):
// every `steps_per_path` optimiser steps a new path is drawn uniformly (each decision
// independently: depth per stage, then kernel / expansion / SE / activation per block), realised
// from the weight store (nas/oneshot/supernet_weights.h) and trained on the next batches; only
// the path's tensors get gradients and updates.
//
// One optimiser serves every path: a realised path's tensors carry their store keys as names,
// so momentum (SGD) or the moments (AdamW) are kept per stored tensor and survive while other
// paths train (PyTorch SPOS: one optimiser over the supernet's parameters, unused ones skipped).
// The learning-rate schedule runs over all supernet steps.
//
// Cost of a path switch: building the path and constructing a TrainingSession, then on its
// first step planning the batch shape (shape inference, allocation); the epoch lines report
// the medians of the switch, of a path's first step and of later steps, so steps_per_path can
// be sized (configs/nas/fmnist_oneshot.yaml records the figures).
//
// A split store (SupernetSplit::kStemStride): every batch trains one path of each sub-supernet
// in turn (path draws numbered step x groups + group), so each sub-supernet gets every batch,
// as if trained alone for the same epochs; the epoch lines add each one's train accuracy.
//
// Checkpoint: after every epoch the store, the optimiser state and the epoch count are written
// to one tensor file; a rerun resumes after the last finished epoch (the data order and the
// paths depend only on the seed, epoch and step), and a finished supernet is loaded, not
// retrained. A checkpoint of another configuration (recipe, options, space) is refused.
#pragma once
#include <cstdint>
#include <string>

#include "harness/data/fashion_mnist.h"
#include "harness/train/trainer.h"
#include "nas/oneshot/oneshot_config.h"
#include "nas/oneshot/supernet_weights.h"

namespace xnn::nas {

// The supernet's data: the training images it trains on and the held-out validation images
// subnets are scored on. The validation images come from the training split, never the test
// split that reports final accuracy: with recipe.train_limit N > 0 the first N training images
// train and the next `validation_size` validate; with N = 0 the last `validation_size` of the
// 60,000 validate and the rest train.
struct SupernetData {
  data::Dataset train, validation;
};
SupernetData load_supernet_data(const train::TrainConfig& recipe, int64_t validation_size);

// Path number `draw`: uniform over the supernet's architectures (every resolution, its width),
// a function of (seed, draw) only. With `stem_stride` > 0 (a sub-supernet of a split store),
// uniform over the architectures with that stem stride.
arch::Arch sample_path(const SupernetWeights& weights, uint64_t seed, int64_t draw, int64_t stem_stride = 0);

struct SupernetTrainResult {
  int epochs_run = 0;          // by this process
  int resumed_from_epoch = 0;  // epochs read from the checkpoint
  int64_t steps = 0;           // optimiser steps in total
  int64_t paths = 0;           // paths trained by this process
  double seconds = 0;          // wall time of this process's epochs
  double switch_ms_median = 0;      // building a path + constructing its session
  double first_step_ms_median = 0;  // a path's first step (its session plans the batch shape)
  double step_ms_median = 0;        // later steps on the same path (0 with steps_per_path 1)
};

// Trains `weights` for options.epochs epochs over `train` with the recipe's optimiser, schedule,
// batch size, augmentation, threads and label smoothing; checkpoint at `checkpoint_path`.
SupernetTrainResult train_supernet(SupernetWeights& weights, const data::Dataset& train, const train::TrainConfig& recipe,
                                   const OneshotOptions& options, uint64_t seed, const std::string& checkpoint_path,
                                   const train::ProgressFn& progress);

}  // namespace xnn::nas
