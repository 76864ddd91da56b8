// SPOS path sampling: every decision uniform over its choices (counted over many draws), the
// supernet's width always, and a function of (seed, draw) only.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "nas/oneshot/supernet_training.h"

using namespace xnn;
using namespace xnn::nas;

namespace {
arch::SearchSpace tiny_space() {
  return arch::load_search_space(std::string(XNN_SOURCE_DIR) + "/configs/arch/mobilenet_space_tiny.yaml");
}

// |count - n p| within 5 standard deviations of a binomial(n, p).
void expect_uniform(const std::map<std::string, int>& counts, int n, size_t choices, const std::string& what) {
  ASSERT_EQ(counts.size(), choices) << what;
  const double p = 1.0 / static_cast<double>(choices);
  const double sd = std::sqrt(n * p * (1 - p));
  for (const auto& [choice, c] : counts) EXPECT_NEAR(c, n * p, 5 * sd) << what << " choice " << choice;
}
}  // namespace

TEST(PathSampling, EveryDecisionIsUniform) {
  SupernetWeights w(tiny_space(), 0.5, 0);
  const int n = 4000;
  std::map<std::string, int> resolution, depth1, kernel, expansion, se, activation, width;
  int block1_seen = 0;
  std::map<std::string, int> kernel_b1;
  for (int i = 0; i < n; ++i) {
    const arch::Arch a = sample_path(w, 11, i);
    ++resolution[std::to_string(a.resolution)];
    ++width[std::to_string(a.width)];
    ++depth1[std::to_string(a.stages[1].size())];
    const arch::BlockChoice& c = a.stages[0][0];
    ++kernel[std::to_string(c.kernel)];
    ++expansion[std::to_string(c.expansion)];
    ++se[c.se ? "on" : "off"];
    ++activation[c.activation];
    if (a.stages[2].size() > 1) {
      ++block1_seen;
      ++kernel_b1[std::to_string(a.stages[2][1].kernel)];
    }
  }
  ASSERT_EQ(width.size(), 1u);
  EXPECT_EQ(width.begin()->first, std::to_string(0.5));
  expect_uniform(resolution, n, 2, "resolution");
  expect_uniform(depth1, n, 2, "stage 1 depth");
  expect_uniform(kernel, n, 2, "kernel");
  expect_uniform(expansion, n, 2, "expansion");
  expect_uniform(se, n, 2, "se");
  expect_uniform(activation, n, 4, "activation");
  expect_uniform(kernel_b1, block1_seen, 2, "kernel of a second block");
}

TEST(PathSampling, DependsOnSeedAndDrawOnly) {
  SupernetWeights w(tiny_space(), 0.5, 0);
  EXPECT_EQ(sample_path(w, 3, 17), sample_path(w, 3, 17));
  int differ = 0;
  for (int i = 0; i < 20; ++i) differ += !(sample_path(w, 3, i) == sample_path(w, 4, i));
  EXPECT_GT(differ, 10);
}
