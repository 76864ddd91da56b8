// Trained quantisation (Deep Compression, Han et al. 2016, stage 2): every large weight tensor
// is clustered to a codebook of 2^bits shared values (1-D k-means, compress/encode/kmeans.h,
// with an exact zero centroid for pruned weights), then fine-tuning trains the shared values.
//
// What is implemented: the trainer's after-step hook (harness/train/trainer.h StepHook). After
// each optimiser step, every weight of a cluster has moved by its own update; each non-zero
// centroid becomes the mean of its members' updated values and all members are snapped to it.
// With plain SGD that is c - lr × mean(gradients of the members), i.e. the paper's summed
// gradient with the learning rate divided by the cluster's size (a per-cluster step the same
// size as one weight's, which keeps large clusters stable); with momentum, each weight's
// momentum buffer still follows its own gradient, so the centroid moves with the members'
// mean momentum. The zero centroid is never updated: pruned weights stay exactly 0.
// Assignments are fixed after the k-means (as in the paper), so after fine-tuning the tensor
// still holds at most 2^bits distinct values and the encoder can use them as its codebook.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/train/parameter.h"

namespace xnn::compress_recipe {

struct ClusteredTensor {
  std::string value;  // the weight value's name (= the training parameter's name)
  std::string node;
  int bits = 0;
  int64_t numel = 0;
  int centroids = 0;       // used (<= 2^bits)
  int zero_index = -1;     // the exact-zero centroid, -1 when the tensor has no zeros
  std::vector<uint16_t> assignment;
};

class SharedCentroids {
 public:
  // Clusters the weights (input 1) of Conv / Gemm / MatMul that are float32 constants of
  // >= min_elements elements — the tensors the encoder codes — in place: their data become
  // centroid values. bits_per_layer keys are weight value or node names; an unknown one is an
  // xnn::Error listing the candidates.
  static SharedCentroids cluster(Model& model, int bits, const std::map<std::string, int>& bits_per_layer,
                                 int64_t min_elements);

  // The step hook: centroid = mean of its members, members snapped to it (see above).
  // Parameters not clustered are left alone; a clustered one of another size is an error.
  void share(std::span<train::Parameter> params) const;
  // The same on the model's constants (idempotent on a model whose weights are centroids).
  void share(Model& model) const;

  const std::vector<ClusteredTensor>& tensors() const { return tensors_; }

 private:
  std::vector<ClusteredTensor> tensors_;
};

}  // namespace xnn::compress_recipe
