// The alternating search and the derivation: with a large latency weight and labels no
// architecture can learn (random), the search picks the cheapest op of every position; the
// derivation maps skips to shallower stages and always yields an architecture of the space.
#include <gtest/gtest.h>

#include "nas/darts/darts_search.h"
#include "test_space.h"

namespace xnn::nas {
namespace {

// A table whose latencies rise with the op index except for one cheapest op per position.
LatencyTable synthetic_table(const std::vector<BlockPosition>& positions, const std::vector<size_t>& cheapest) {
  LatencyTable t;
  t.positions = positions;
  t.stem_ms = 0.1;
  t.head_ms = 0.2;
  for (size_t p = 0; p < positions.size(); ++p) {
    std::vector<double> row;
    for (size_t op = 0; op < positions[p].op_count(); ++op) {
      row.push_back(positions[p].is_skip(op) ? 0.0 : op == cheapest[p] ? 0.05 : 1.0 + 0.5 * static_cast<double>(op));
    }
    t.latency_ms.push_back(row);
  }
  return t;
}

DartsOptions options_for_test() {
  DartsOptions o;
  o.width = 1.0;
  o.resolution = 8;
  o.activation = "relu";
  o.epochs = 3;
  o.warmup_epochs = 1;
  o.alpha_lr = 0.05;
  return o;
}

train::TrainConfig recipe_for_test() {
  train::TrainConfig r;
  r.batch_size = 16;
  r.prefetch = 0;
  r.mean = 0.5f;
  r.std = 0.25f;
  r.optimizer.type = "sgd";
  r.schedule.type = "constant";
  r.schedule.base_lr = 0.05;
  return r;
}

void expect_cheapest(const std::string& relaxation) {
  const arch::SearchSpace space = testing::micro_space();
  DartsOptions o = options_for_test();
  o.relaxation = relaxation;
  if (relaxation == "gumbel") {  // noisier: a cooler start and more alpha steps
    o.tau_start = 1.0;
    o.tau_end = 0.3;
    o.epochs = 6;
  }
  const auto positions = block_positions(space, 8, 1.0, "relu");
  // Cheapest: op 2 at positions 0 and 1 (0.05 ms, the others 1+ ms), skip (0 ms) at the
  // optional position 2 (no cheap candidate there).
  const LatencyTable table = synthetic_table(positions, {2, 2, 99});
  Supernet net = build_supernet(space, positions, 8, 1.0, 3);
  const data::Dataset weights = testing::random_dataset(64, 3, 1), alphas = testing::random_dataset(64, 3, 2);
  const DartsTrace trace = search_supernet(net, table, o, /*lambda=*/50.0, recipe_for_test(), weights, alphas, nullptr);
  ASSERT_EQ(trace.probs.size(), static_cast<size_t>(o.epochs));
  EXPECT_EQ(trace.ops, (std::vector<size_t>{2, 2, 4})) << relaxation;
  // The expected latency falls once the alphas move (after the warm-up epoch).
  EXPECT_LT(trace.expected_latency_ms.back(), trace.expected_latency_ms.front());
  std::vector<size_t> ops;
  const arch::Arch a = derive_arch(space, o, positions, trace.probs.back(), &ops);
  EXPECT_EQ(a.to_string(), "r8-w1|k5e1.relu|k5e1.relu") << relaxation;  // op 2 = kernel 5, expansion 1
  EXPECT_EQ(ops, trace.ops);
  EXPECT_NEAR(table.predict_ms(ops), 0.1 + 0.2 + 0.05 + 0.05, 1e-12);
}

TEST(DartsSearch, LargeLatencyWeightPicksTheCheapestOps) { expect_cheapest("softmax"); }
TEST(DartsSearch, LargeLatencyWeightPicksTheCheapestOpsWithGumbelSoftmax) { expect_cheapest("gumbel"); }

TEST(DartsSearch, WarmupEpochsLeaveTheAlphasUniform) {
  const arch::SearchSpace space = testing::micro_space();
  DartsOptions o = options_for_test();
  o.epochs = 2;
  const auto positions = block_positions(space, 8, 1.0, "relu");
  const LatencyTable table = synthetic_table(positions, {2, 2, 99});
  Supernet net = build_supernet(space, positions, 8, 1.0, 3);
  const data::Dataset weights = testing::random_dataset(32, 3, 1), alphas = testing::random_dataset(32, 3, 2);
  const DartsTrace trace = search_supernet(net, table, o, 50.0, recipe_for_test(), weights, alphas, nullptr);
  for (const auto& row : trace.probs[0]) {
    for (double p : row) EXPECT_NEAR(p, 1.0 / static_cast<double>(row.size()), 1e-9);
  }
  EXPECT_GT(trace.probs[1][0][2], 1.0 / 4);
}

TEST(DeriveArch, SkipsShortenTheStageAndNonSkipsAreKept) {
  const arch::SearchSpace space = testing::micro_space();
  const DartsOptions o = options_for_test();
  const auto positions = block_positions(space, 8, 1.0, "relu");
  // Candidates: 0 k3e1, 1 k3e2, 2 k5e1, 3 k5e2, (4 skip).
  std::vector<std::vector<double>> probs = {{0.1, 0.6, 0.2, 0.1}, {0.1, 0.1, 0.1, 0.7}, {0.1, 0.5, 0.1, 0.1, 0.2}};
  std::vector<size_t> ops;
  EXPECT_EQ(derive_arch(space, o, positions, probs, &ops).to_string(), "r8-w1|k3e2.relu|k5e2.relu-k3e2.relu");
  EXPECT_EQ(ops, (std::vector<size_t>{1, 3, 1}));
  probs[2] = {0.1, 0.1, 0.1, 0.1, 0.6};
  EXPECT_EQ(derive_arch(space, o, positions, probs, &ops).to_string(), "r8-w1|k3e2.relu|k5e2.relu");
  EXPECT_EQ(ops, (std::vector<size_t>{1, 3, 4}));
}

TEST(DeriveArch, ADepthOutsideTheChoicesFallsBackToTheMostLikelyAllowedDepth) {
  // Depths [1, 3]: keeping two blocks is not a choice.
  const arch::SearchSpace space = arch::parse_search_space(YAML::Load(R"(
input: [1, 8, 8]
classes: 3
stem: {channels: 8, stride: 1, activation: relu}
head: {channels: 16, activation: relu}
block_choices: {kernels: [3], expansions: [1, 2], se: [false], activations: [relu]}
stages:
  - {depths: [1, 3], channels: 8, stride: 1}
)"),
                                                           "gap_space");
  const DartsOptions o = options_for_test();
  const auto positions = block_positions(space, 8, 1.0, "relu");
  ASSERT_EQ(positions.size(), 3u);
  // Block 1 kept (P(skip) 0.3), block 2 skipped (P(skip) 0.4): depth 1 scores 1 + 0.3 + 0.4,
  // depth 3 scores 1 + 0.7 + 0.6, so depth 3 with block 2's best candidate (expansion 2).
  std::vector<std::vector<double>> probs = {{0.4, 0.6}, {0.5, 0.2, 0.3}, {0.25, 0.35, 0.4}};
  std::vector<size_t> ops;
  const arch::Arch a = derive_arch(space, o, positions, probs, &ops);
  EXPECT_EQ(a.to_string(), "r8-w1|k3e2.relu-k3e1.relu-k3e2.relu");
  EXPECT_EQ(ops, (std::vector<size_t>{1, 0, 1}));
  EXPECT_TRUE(arch::arch_in_space(space, a));
}

TEST(DartsData, SliceKeepsImagesAndLabelsTogether) {
  const data::Dataset ds = testing::random_dataset(10, 3, 4);
  const data::Dataset s = data::slice_dataset(ds, 6, 4);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.labels[0], ds.labels[6]);
  EXPECT_EQ(s.images[0], ds.images[6 * 64]);
  EXPECT_THROW(data::slice_dataset(ds, 8, 4), Error);
}

}  // namespace
}  // namespace xnn::nas
