// A random forest of CART regression trees (Breiman; what nn-Meter fits per kernel): each
// tree is grown on a bootstrap sample, each split considers a random subset of the features
// and minimises the squared error, leaves hold at least `min_leaf` samples. The prediction is
// the mean over trees; their spread is a per-sample uncertainty. Deterministic for a seed
// (its own generator and index mapping, so results do not depend on the standard library).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace xnn::predict {

struct ForestParams {
  int trees = 32;
  int min_leaf = 2;
  int max_depth = 14;
  double feature_fraction = 0.6;  // share of features tried at each split (at least one)
  bool bootstrap = true;
  uint64_t seed = 1;
};

// A tree in pre-order: a split node's left child is the next node, `right` indexes its right
// child; samples with x[feature] <= value go left. A leaf has feature < 0 and predicts `value`.
// Twelve bytes a node and no left index keep walks within few cache lines (prediction speed
// matters: the search loop calls the predictor ~10^4 times a second).
struct TreeNode {
  int32_t feature = -1;
  float value = 0;  // split threshold, or a leaf's prediction
  int32_t right = -1;
};

struct RegressionTree {
  std::vector<TreeNode> nodes;

  float predict(const float* row) const {
    const TreeNode* base = nodes.data();
    const TreeNode* n = base;
    while (n->feature >= 0) n = row[n->feature] <= n->value ? n + 1 : base + n->right;
    return n->value;
  }
  size_t size() const { return nodes.size(); }
};

class RandomForest {
 public:
  RandomForest() = default;
  // `rows`: n samples of `dims` features, row-major; `targets`: n values. With `oob`, also
  // returns each sample's out-of-bag prediction (mean of the trees that did not see it; the
  // full-forest prediction for a sample every tree saw).
  static RandomForest fit(const std::vector<float>& rows, int dims, const std::vector<double>& targets,
                          const ForestParams& params, std::vector<double>* oob = nullptr);
  // Builds a forest from trees read back from a file (validated: every child index in range).
  static RandomForest from_trees(int dims, std::vector<RegressionTree> trees);

  double predict(const float* row) const;
  // Mean and standard deviation over the trees.
  void predict_with_spread(const float* row, double& mean, double& stddev) const;

  int dims() const { return dims_; }
  const std::vector<RegressionTree>& trees() const { return trees_; }
  bool empty() const { return trees_.empty(); }

 private:
  int dims_ = 0;
  std::vector<RegressionTree> trees_;
};

}  // namespace xnn::predict
