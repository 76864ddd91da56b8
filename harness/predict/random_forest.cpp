#include "harness/predict/random_forest.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/core/error.h"

namespace xnn::predict {
namespace {

// splitmix64: a fixed, portable generator (std distributions differ between libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }

 private:
  uint64_t s_;
};

class TreeBuilder {
 public:
  TreeBuilder(const std::vector<float>& rows, int dims, const std::vector<double>& targets, const ForestParams& p,
              Rng& rng)
      : rows_(rows), dims_(dims), y_(targets), p_(p), rng_(rng) {
    tries_ = std::clamp(static_cast<int>(std::ceil(p.feature_fraction * dims)), 1, dims);
  }

  RegressionTree build(std::vector<uint32_t> samples) {
    tree_ = RegressionTree{};
    grow(samples, 0, samples.size(), 0);
    return std::move(tree_);
  }

 private:
  float x(uint32_t s, int f) const { return rows_[static_cast<size_t>(s) * static_cast<size_t>(dims_) + f]; }

  int32_t add_leaf(double value) {
    tree_.nodes.push_back(TreeNode{-1, static_cast<float>(value), -1});
    return static_cast<int32_t>(tree_.nodes.size() - 1);
  }

  // Grows the subtree for samples[begin, end); returns its root index.
  int32_t grow(std::vector<uint32_t>& samples, size_t begin, size_t end, int depth) {
    const size_t n = end - begin;
    double sum = 0, sum2 = 0;
    for (size_t i = begin; i < end; ++i) {
      sum += y_[samples[i]];
      sum2 += y_[samples[i]] * y_[samples[i]];
    }
    const double mean = sum / static_cast<double>(n);
    const double sse = sum2 - sum * mean;
    const size_t min_leaf = static_cast<size_t>(std::max(p_.min_leaf, 1));
    if (depth >= p_.max_depth || n < 2 * min_leaf || sse <= 1e-12 * std::max(1.0, sum2)) return add_leaf(mean);

    // Random feature subset (partial Fisher-Yates over the feature ids).
    std::vector<int> features(static_cast<size_t>(dims_));
    std::iota(features.begin(), features.end(), 0);
    for (int k = 0; k < tries_; ++k) std::swap(features[static_cast<size_t>(k)], features[k + rng_.below(static_cast<size_t>(dims_ - k))]);

    int best_feature = -1;
    float best_threshold = 0;
    double best_sse = sse * (1 - 1e-9);
    std::vector<uint32_t> order(samples.begin() + static_cast<std::ptrdiff_t>(begin), samples.begin() + static_cast<std::ptrdiff_t>(end));
    for (int k = 0; k < tries_; ++k) {
      const int f = features[static_cast<size_t>(k)];
      std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return x(a, f) < x(b, f); });
      double left_sum = 0, left_sum2 = 0;
      for (size_t i = 0; i + 1 < n; ++i) {
        const double v = y_[order[i]];
        left_sum += v;
        left_sum2 += v * v;
        const size_t nl = i + 1, nr = n - nl;
        if (nl < min_leaf || nr < min_leaf) continue;
        const float a = x(order[i], f), b = x(order[i + 1], f);
        if (!(a < b)) continue;  // only split between distinct values
        const double right_sum = sum - left_sum, right_sum2 = sum2 - left_sum2;
        const double split_sse = (left_sum2 - left_sum * left_sum / double(nl)) + (right_sum2 - right_sum * right_sum / double(nr));
        if (split_sse < best_sse) {
          best_sse = split_sse;
          best_feature = f;
          best_threshold = a + (b - a) * 0.5f;
          if (!(best_threshold < b)) best_threshold = a;  // rounding: keep a on the left
        }
      }
    }
    if (best_feature < 0) return add_leaf(mean);

    const auto mid_it = std::partition(samples.begin() + static_cast<std::ptrdiff_t>(begin),
                                       samples.begin() + static_cast<std::ptrdiff_t>(end),
                                       [&](uint32_t s) { return x(s, best_feature) <= best_threshold; });
    const size_t mid = static_cast<size_t>(mid_it - samples.begin());
    const int32_t node = add_leaf(mean);
    grow(samples, begin, mid, depth + 1);  // pre-order: the left child is node + 1
    const int32_t r = grow(samples, mid, end, depth + 1);
    TreeNode& split = tree_.nodes[static_cast<size_t>(node)];
    split.feature = best_feature;
    split.value = best_threshold;
    split.right = r;
    return node;
  }

  const std::vector<float>& rows_;
  int dims_;
  const std::vector<double>& y_;
  const ForestParams& p_;
  Rng& rng_;
  int tries_ = 1;
  RegressionTree tree_;
};

}  // namespace

RandomForest RandomForest::fit(const std::vector<float>& rows, int dims, const std::vector<double>& targets,
                               const ForestParams& params, std::vector<double>* oob) {
  if (dims <= 0) throw Error("random forest: the feature count must be positive");
  const size_t n = targets.size();
  if (n == 0) throw Error("random forest: no training samples");
  if (rows.size() != n * static_cast<size_t>(dims)) {
    throw Error("random forest: " + std::to_string(rows.size()) + " feature values for " + std::to_string(n) +
                " samples of " + std::to_string(dims) + " features");
  }
  if (params.trees < 1) throw Error("random forest: trees must be >= 1");
  RandomForest forest;
  forest.dims_ = dims;
  Rng rng(params.seed);
  TreeBuilder builder(rows, dims, targets, params, rng);
  std::vector<double> oob_sum(n, 0.0);
  std::vector<int> oob_count(n, 0);
  std::vector<char> in_bag(n);
  for (int t = 0; t < params.trees; ++t) {
    std::vector<uint32_t> samples(n);
    std::fill(in_bag.begin(), in_bag.end(), 0);
    for (size_t i = 0; i < n; ++i) {
      samples[i] = static_cast<uint32_t>(params.bootstrap ? rng.below(n) : i);
      in_bag[samples[i]] = 1;
    }
    forest.trees_.push_back(builder.build(std::move(samples)));
    if (oob) {
      for (size_t i = 0; i < n; ++i) {
        if (in_bag[i]) continue;
        oob_sum[i] += forest.trees_.back().predict(&rows[i * static_cast<size_t>(dims)]);
        ++oob_count[i];
      }
    }
  }
  if (oob) {
    oob->resize(n);
    for (size_t i = 0; i < n; ++i) {
      (*oob)[i] = oob_count[i] ? oob_sum[i] / oob_count[i] : forest.predict(&rows[i * static_cast<size_t>(dims)]);
    }
  }
  return forest;
}

RandomForest RandomForest::from_trees(int dims, std::vector<RegressionTree> trees) {
  if (trees.empty()) throw Error("random forest: no trees");
  for (size_t t = 0; t < trees.size(); ++t) {
    const std::vector<TreeNode>& nodes = trees[t].nodes;
    const int32_t m = static_cast<int32_t>(nodes.size());
    auto bad = [&](const std::string& what) { throw Error("random forest: tree " + std::to_string(t) + ": " + what); };
    if (m == 0) bad("no nodes");
    for (int32_t i = 0; i < m; ++i) {
      const TreeNode& n = nodes[static_cast<size_t>(i)];
      if (n.feature < 0) continue;
      if (n.feature >= dims) {
        bad("node " + std::to_string(i) + " splits on feature " + std::to_string(n.feature) + " of " + std::to_string(dims));
      }
      // Both children after their parent, so walking a tree always ends at a leaf.
      if (i + 1 >= m || n.right <= i + 1 || n.right >= m) {
        bad("node " + std::to_string(i) + " has a child out of range (right " + std::to_string(n.right) + " of " +
            std::to_string(m) + " nodes)");
      }
    }
  }
  RandomForest forest;
  forest.dims_ = dims;
  forest.trees_ = std::move(trees);
  return forest;
}

namespace {

// Sum (and sum of squares) of every tree's prediction. Trees are walked eight at a time, so
// eight independent chains of node loads are in flight together instead of one: a walk is a
// sequence of dependent loads, and interleaving hides most of their latency.
template <bool kSquares>
void sum_trees(const std::vector<RegressionTree>& trees, const float* row, double& sum, double& sum2) {
  constexpr size_t kLanes = 8;
  sum = 0;
  sum2 = 0;
  size_t t = 0;
  for (; t + kLanes <= trees.size(); t += kLanes) {
    const TreeNode* base[kLanes];
    const TreeNode* n[kLanes];
    for (size_t k = 0; k < kLanes; ++k) n[k] = base[k] = trees[t + k].nodes.data();
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t k = 0; k < kLanes; ++k) {
        const TreeNode* x = n[k];
        if (x->feature < 0) continue;
        n[k] = row[x->feature] <= x->value ? x + 1 : base[k] + x->right;
        moved = true;
      }
    }
    for (size_t k = 0; k < kLanes; ++k) {
      const double v = n[k]->value;
      sum += v;
      if (kSquares) sum2 += v * v;
    }
  }
  for (; t < trees.size(); ++t) {
    const double v = trees[t].predict(row);
    sum += v;
    if (kSquares) sum2 += v * v;
  }
}

}  // namespace

double RandomForest::predict(const float* row) const {
  double sum = 0, unused = 0;
  sum_trees<false>(trees_, row, sum, unused);
  return sum / static_cast<double>(trees_.size());
}

void RandomForest::predict_with_spread(const float* row, double& mean, double& stddev) const {
  double sum = 0, sum2 = 0;
  sum_trees<true>(trees_, row, sum, sum2);
  const double n = static_cast<double>(trees_.size());
  mean = sum / n;
  stddev = std::sqrt(std::max(0.0, sum2 / n - mean * mean));
}

}  // namespace xnn::predict
