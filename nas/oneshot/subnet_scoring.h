// Scoring a subnet with the weights it inherits from the supernet: its BatchNorm running
// statistics are re-calibrated first (the supernet's running statistics mix every path that
// shared a layer, so they fit none; SPOS re-computes them per subnet), then its top-1 accuracy
// is measured on held-out validation images.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/graph.h"
#include "harness/data/batch_loader.h"

namespace xnn::nas {

// Up to `max_batches` batches of `ds` (0: all), normalised with (mean, std) at scale 1/255, in
// the order of a seeded shuffle (or in order without `shuffle`), without augmentation; the last
// batch may be partial. Built once and reused for every subnet, so all are scored alike.
std::vector<data::Batch> fixed_batches(const data::Dataset& ds, int64_t batch_size, int64_t max_batches, bool shuffle,
                                       uint64_t seed, float mean, float std);

// Re-estimates every BatchNormalization's running mean and variance in `model` (in place):
// the statistics are reset and each batch is run forward in training mode with no weight
// update; the result is the average over the batches of the batch mean and of the unbiased
// batch variance (PyTorch's cumulative moving average, momentum=None). The BN nodes' momentum
// attributes are left as they were.
void recalibrate_batchnorm(const std::shared_ptr<Model>& model, const std::vector<data::Batch>& batches, int threads);

// Top-1 accuracy (0..1) of `model` on `batches`, run by the inference engine (Session: running
// statistics, BatchNorm folded).
double top1_accuracy(const std::shared_ptr<Model>& model, const std::vector<data::Batch>& batches, int threads);

}  // namespace xnn::nas
