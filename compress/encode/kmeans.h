// Weight clustering (Deep Compression, Han et al. 2016): one tensor's values replaced by k
// shared centroids found with 1-D k-means (Lloyd), initialised linearly between the smallest
// and the largest value, which the paper found best because it keeps the rare large weights
// that matter most.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace xnn::encode {

struct Clustering {
  std::vector<float> centroids;     // distinct (bit for bit), ascending, except 0.0 first when kept
  std::vector<uint16_t> assignment; // per value: its centroid
  int iterations = 0;               // Lloyd iterations run
};

// k in 1..4096. With keep_zero, values equal to 0 (pruned weights) get their own centroid of
// exactly +0.0 and the other k - 1 centroids cluster the non-zero values, so pruning survives
// clustering exactly. Empty clusters are dropped, so fewer than k centroids may come back.
Clustering kmeans_1d(std::span<const float> values, int k, bool keep_zero, int max_iterations = 100);

}  // namespace xnn::encode
