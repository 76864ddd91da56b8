#include "harness/predict/random_forest.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"

namespace xnn::predict {
namespace {

// A nonlinear function of two of three features (the third is noise the forest should ignore).
double target_fn(float a, float b) { return std::sin(a) * 3.0 + (b > 0.5f ? b * b : -b); }

struct Data {
  std::vector<float> rows;
  std::vector<double> y;
};

Data grid(int n, uint32_t salt) {
  Data d;
  uint32_t s = 12345u + salt;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const float a = static_cast<float>(s % 10000) / 10000.0f * 6.0f;
    s = s * 1664525u + 1013904223u;
    const float b = static_cast<float>(s % 10000) / 10000.0f * 2.0f;
    s = s * 1664525u + 1013904223u;
    const float c = static_cast<float>(s % 10000) / 10000.0f;
    d.rows.insert(d.rows.end(), {a, b, c});
    d.y.push_back(target_fn(a, b));
  }
  return d;
}

TEST(RandomForest, FitsAKnownNonlinearFunction) {
  const Data train = grid(2000, 0), test = grid(300, 99);
  ForestParams p;
  p.trees = 24;
  p.min_leaf = 2;
  p.max_depth = 16;
  p.feature_fraction = 0.67;
  const RandomForest f = RandomForest::fit(train.rows, 3, train.y, p);
  double se = 0, var = 0, mean = 0;
  for (double v : test.y) mean += v / static_cast<double>(test.y.size());
  for (size_t i = 0; i < test.y.size(); ++i) {
    const double e = f.predict(&test.rows[i * 3]) - test.y[i];
    se += e * e;
    var += (test.y[i] - mean) * (test.y[i] - mean);
  }
  const double r2 = 1 - se / var;
  EXPECT_GT(r2, 0.97) << "held-out R^2";
  EXPECT_LT(std::sqrt(se / static_cast<double>(test.y.size())), 0.3) << "held-out RMSE";
}

TEST(RandomForest, OutOfBagPredictionsAreHonest) {
  const Data train = grid(600, 3);
  ForestParams p;
  std::vector<double> oob;
  const RandomForest f = RandomForest::fit(train.rows, 3, train.y, p, &oob);
  ASSERT_EQ(oob.size(), train.y.size());
  double se_oob = 0, se_in = 0;
  for (size_t i = 0; i < oob.size(); ++i) {
    se_oob += (oob[i] - train.y[i]) * (oob[i] - train.y[i]);
    const double in = f.predict(&train.rows[i * 3]);
    se_in += (in - train.y[i]) * (in - train.y[i]);
  }
  EXPECT_GT(se_oob, se_in);            // the in-sample fit is optimistic
  EXPECT_LT(se_oob / oob.size(), 0.5);  // yet out-of-bag still fits
}

TEST(RandomForest, DeterministicForASeed) {
  const Data d = grid(300, 5);
  ForestParams p;
  p.seed = 42;
  const RandomForest a = RandomForest::fit(d.rows, 3, d.y, p), b = RandomForest::fit(d.rows, 3, d.y, p);
  ASSERT_EQ(a.trees().size(), b.trees().size());
  for (size_t t = 0; t < a.trees().size(); ++t) {
    ASSERT_EQ(a.trees()[t].size(), b.trees()[t].size());
    for (size_t i = 0; i < a.trees()[t].size(); ++i) {
      EXPECT_EQ(a.trees()[t].nodes[i].feature, b.trees()[t].nodes[i].feature);
      EXPECT_EQ(a.trees()[t].nodes[i].value, b.trees()[t].nodes[i].value);
      EXPECT_EQ(a.trees()[t].nodes[i].right, b.trees()[t].nodes[i].right);
    }
  }
  p.seed = 43;
  const RandomForest c = RandomForest::fit(d.rows, 3, d.y, p);
  bool differs = false;
  for (size_t i = 0; i < 50 && !differs; ++i) differs = a.predict(&d.rows[i * 3]) != c.predict(&d.rows[i * 3]);
  EXPECT_TRUE(differs) << "another seed should grow other trees";
}

TEST(RandomForest, MinLeafAndSpread) {
  // Two clusters: a split separates them, min_leaf keeps leaves of >= 5 samples.
  std::vector<float> rows;
  std::vector<double> y;
  for (int i = 0; i < 40; ++i) {
    rows.push_back(static_cast<float>(i));
    y.push_back(i < 20 ? 1.0 : 5.0);
  }
  ForestParams p;
  p.trees = 16;
  p.min_leaf = 5;
  p.feature_fraction = 1.0;
  const RandomForest f = RandomForest::fit(rows, 1, y, p);
  const float lo = 3, hi = 35;
  EXPECT_NEAR(f.predict(&lo), 1.0, 1e-6);
  EXPECT_NEAR(f.predict(&hi), 5.0, 1e-6);
  double mean = 0, sd = -1;
  f.predict_with_spread(&lo, mean, sd);
  EXPECT_NEAR(mean, 1.0, 1e-6);
  EXPECT_NEAR(sd, 0.0, 1e-6);  // every tree agrees far from the boundary
}

TEST(RandomForest, RejectsBadInputAndBadTrees) {
  ForestParams p;
  EXPECT_THROW(RandomForest::fit({}, 1, {}, p), Error);
  EXPECT_THROW(RandomForest::fit({1, 2, 3}, 2, {1, 2}, p), Error);
  RegressionTree loop;
  loop.nodes = {TreeNode{0, 0.5f, 0}, TreeNode{-1, 1, -1}};  // right child points back at the root
  EXPECT_THROW(RandomForest::from_trees(1, {loop}), Error);
  RegressionTree bad_feature;
  bad_feature.nodes = {TreeNode{3, 0.5f, 2}, TreeNode{-1, 1, -1}, TreeNode{-1, 2, -1}};
  EXPECT_THROW(RandomForest::from_trees(2, {bad_feature}), Error);
  RegressionTree ok = bad_feature;
  ok.nodes[0].feature = 1;
  const RandomForest f = RandomForest::from_trees(2, {ok});
  const float row[2] = {0, 0.7f};
  EXPECT_EQ(f.predict(row), 2.0);
}

}  // namespace
}  // namespace xnn::predict
