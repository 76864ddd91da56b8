// Accuracy evaluation of an image classifier on a dataset, through the same Session path as
// deployment (one Session, batches fed as the model's single input).
#pragma once
#include <cstdint>

#include "engine/runtime/session.h"
#include "harness/data/fashion_mnist.h"

namespace xnn::eval {

struct AccuracyResult {
  double top1 = 0;    // fraction in [0, 1]
  double top5 = 0;    // fraction in [0, 1]
  int64_t samples = 0;
  double seconds = 0;  // wall time of preprocessing + inference
};

// Runs `session` over every sample of `ds` and scores its first output (logits or
// probabilities, [N, classes] or [N, 1, classes]...: N rows of `classes` scores).
// batch_size 0: the model's batch dim when fixed (a batch-1 model runs per sample), else 64;
// a batch size given for a model with a fixed batch dim must equal it. The last batch may be
// partial (a symbolic batch dim takes any size). Throws an Error if the model does not have a
// single f32 image input or its output is not N x classes with classes >= num_classes.
AccuracyResult evaluate_classifier(Session& session, const data::Dataset& ds, const data::Preprocess& p,
                                   int64_t batch_size = 0);

}  // namespace xnn::eval
