// Weight clustering (compress/encode/kmeans.h): exact zeros survive, few distinct values are
// reproduced exactly, well-separated groups are found, centroids are distinct and ascending.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "compress/encode/kmeans.h"
#include "engine/core/error.h"

namespace xnn::encode {
namespace {

TEST(KMeans, KeepsZerosExactAndClustersTheRest) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.1f);
  std::vector<float> w(5000);
  for (size_t i = 0; i < w.size(); ++i) w[i] = i % 3 == 0 ? 0.0f : dist(rng);
  const Clustering c = kmeans_1d(w, 16, /*keep_zero=*/true);
  ASSERT_LE(c.centroids.size(), 16u);
  EXPECT_EQ(c.centroids[0], 0.0f);
  uint32_t bits = 0;
  std::memcpy(&bits, &c.centroids[0], 4);
  EXPECT_EQ(bits, 0u);  // +0.0 exactly
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] == 0.0f) {
      EXPECT_EQ(c.assignment[i], 0);
    }
    if (w[i] != 0.0f) {
      EXPECT_NE(c.assignment[i], 0);
    }
  }
  for (size_t k = 2; k < c.centroids.size(); ++k) EXPECT_LT(c.centroids[k - 1], c.centroids[k]);
  // Every value is at its nearest centroid among the non-zero ones (Lloyd's fixed point).
  for (size_t i = 0; i < w.size(); i += 7) {
    if (w[i] == 0.0f) continue;
    const float mine = std::abs(w[i] - c.centroids[c.assignment[i]]);
    for (size_t k = 1; k < c.centroids.size(); ++k) EXPECT_LE(mine, std::abs(w[i] - c.centroids[k]) + 1e-6f);
  }
}

TEST(KMeans, FewDistinctValuesAreReproducedExactly) {
  const std::vector<float> w = {-1.5f, 0.25f, 3.0f, 0.25f, -1.5f, 3.0f, 3.0f};
  const Clustering c = kmeans_1d(w, 8, /*keep_zero=*/false);
  EXPECT_EQ(c.centroids.size(), 3u);
  for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(c.centroids[c.assignment[i]], w[i]);
}

TEST(KMeans, FindsSeparatedGroups) {
  std::vector<float> w;
  for (int i = 0; i < 100; ++i) w.push_back(-10.0f + 0.001f * static_cast<float>(i % 5));
  for (int i = 0; i < 100; ++i) w.push_back(5.0f + 0.001f * static_cast<float>(i % 5));
  const Clustering c = kmeans_1d(w, 2, false);
  ASSERT_EQ(c.centroids.size(), 2u);
  EXPECT_NEAR(c.centroids[0], -9.998f, 1e-4);
  EXPECT_NEAR(c.centroids[1], 5.002f, 1e-4);
  EXPECT_THROW(kmeans_1d(w, 0, false), Error);
  EXPECT_THROW(kmeans_1d(w, 5000, false), Error);
  const Clustering empty = kmeans_1d(std::vector<float>{}, 4, true);
  EXPECT_TRUE(empty.centroids.empty());
}

}  // namespace
}  // namespace xnn::encode
