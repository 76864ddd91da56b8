// The mixed op computes the softmax-weighted sum of its branches, and the gradient on the
// architecture weights (the cross-entropy term through the graph, the latency term added
// analytically) matches finite differences.
#include "nas/darts/supernet.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/runtime/session.h"
#include "engine/train/training_session.h"
#include "test_space.h"

namespace xnn::nas {
namespace {

Tensor random_input(const Shape& shape, uint64_t seed) {
  Tensor t(DType::kF32, shape);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(rng);
  return t;
}

Tensor& initialiser(Model& m, const std::string& name) {
  for (Value& v : m.graph.values) {
    if (v.name == name && v.data) return *v.data;
  }
  throw std::runtime_error("no initialiser " + name);
}

TEST(MixedOp, ForwardIsTheWeightedSumOfTheBranches) {
  const arch::SearchSpace space = testing::micro_space();
  const auto positions = block_positions(space, 8, 1.0, "silu");
  const BlockPosition& pos = positions.at(2);  // stage 1 block 1: optional, so skip is an op
  ASSERT_TRUE(pos.optional);
  ASSERT_EQ(pos.op_count(), 5u);
  arch::GraphBuilder b(7);
  const int x = b.input(2, pos.in_channels, pos.in_resolution);
  const MixedOp m = add_mixed_op(b, space, pos, x);
  Graph& g = b.g();
  g.value(m.output).name = "mixed";
  g.outputs.push_back(m.output);
  std::vector<std::string> branch_names;
  for (size_t i = 0; i < m.branches.size(); ++i) {
    if (m.branches[i] == x) {
      branch_names.push_back("input");
      continue;
    }
    g.value(m.branches[i]).name = "branch" + std::to_string(i);
    g.outputs.push_back(m.branches[i]);
    branch_names.push_back("branch" + std::to_string(i));
  }
  auto model = b.model();
  model->opset = 14;
  const std::vector<float> alpha = {0.3f, -1.2f, 0.8f, 0.1f, -0.4f}, noise = {0.5f, 0.2f, -0.3f, 0.0f, 1.0f},
                           scale = {0.7f, 0.7f, 0.7f, 0.7f, 0.7f};
  std::copy(alpha.begin(), alpha.end(), initialiser(*model, m.alpha).data<float>());
  std::copy(noise.begin(), noise.end(), initialiser(*model, m.noise).data<float>());
  std::copy(scale.begin(), scale.end(), initialiser(*model, m.scale).data<float>());
  const std::vector<double> w = mixing_weights(alpha.data(), noise.data(), scale.data(), 5);
  double total = 0;
  for (double v : w) total += v;
  EXPECT_NEAR(total, 1.0, 1e-12);

  Session session(model);
  const Tensor in = random_input({2, pos.in_channels, pos.in_resolution, pos.in_resolution}, 3);
  std::map<std::string, Tensor> out = session.run_named({{"input", in}});
  out["input"] = in;
  const Tensor& mixed = out.at("mixed");
  ASSERT_EQ(mixed.numel(), in.numel());
  double max_err = 0, max_abs = 0;
  for (int64_t k = 0; k < mixed.numel(); ++k) {
    double expect = 0;
    for (size_t i = 0; i < w.size(); ++i) expect += w[i] * out.at(branch_names[i]).data<float>()[k];
    max_err = std::max(max_err, std::abs(expect - mixed.data<float>()[k]));
    max_abs = std::max(max_abs, std::abs(expect));
  }
  EXPECT_GT(max_abs, 0.1);
  EXPECT_LT(max_err, 1e-5 * std::max(1.0, max_abs));
}

TEST(MixedOp, AlphaGradientOfTheCrossEntropyMatchesFiniteDifferences) {
  const arch::SearchSpace space = testing::micro_space();
  const auto positions = block_positions(space, 8, 1.0, "silu");  // smooth: no kinks within ±eps
  Supernet net = build_supernet(space, positions, 8, 1.0, 11);
  train::TrainingSession session(net.model);
  std::mt19937_64 rng(5);
  std::normal_distribution<float> n(0.0f, 0.7f);
  std::vector<train::Parameter*> alphas;
  for (train::Parameter& p : session.parameters()) {
    for (const MixedOp& m : net.ops) {
      if (p.name == m.alpha) {
        for (int64_t i = 0; i < p.value.numel(); ++i) p.value.data<float>()[i] = n(rng);
        alphas.push_back(&p);
      }
    }
  }
  ASSERT_EQ(alphas.size(), net.ops.size());
  const Tensor input = random_input({8, 1, 8, 8}, 9);
  Tensor labels(DType::kI64, {8});
  for (int64_t i = 0; i < 8; ++i) labels.data<int64_t>()[i] = i % 3;
  session.train_step(input, labels);
  std::vector<std::vector<float>> grads;
  for (train::Parameter* p : alphas) grads.emplace_back(p->grad.data<float>(), p->grad.data<float>() + p->grad.numel());

  double largest = 0;
  for (size_t a = 0; a < alphas.size(); ++a) {
    float* v = alphas[a]->value.data<float>();
    for (int64_t i = 0; i < alphas[a]->value.numel(); ++i) {
      const float keep = v[i];
      const float eps = 1e-2f;
      v[i] = keep + eps;
      const double up = session.training_loss(input, labels);
      v[i] = keep - eps;
      const double down = session.training_loss(input, labels);
      v[i] = keep;
      const double fd = (up - down) / (2.0 * eps);
      const double g = grads[a][static_cast<size_t>(i)];
      largest = std::max(largest, std::abs(g));
      EXPECT_NEAR(g, fd, 2e-4 + 0.05 * std::abs(fd)) << net.ops[a].alpha << "[" << i << "]";
    }
  }
  EXPECT_GT(largest, 1e-4);  // the check is not vacuous
}

TEST(MixedOp, LatencyTermGradientMatchesFiniteDifferences) {
  const std::vector<double> lat = {0.5, 1.25, 0.0, 3.0};
  for (const float s : {1.0f, 0.4f}) {
    std::vector<float> alpha = {0.2f, -0.7f, 1.1f, 0.05f}, noise = {0.3f, -0.1f, 0.0f, 0.6f}, scale(4, s);
    std::vector<float> grad(4, 0.25f);  // the latency term adds to what the backward left
    const double lambda = 1.7;
    expected_latency(alpha.data(), noise.data(), scale.data(), lat, lambda, grad.data());
    for (size_t j = 0; j < 4; ++j) {
      const double eps = 1e-3;
      std::vector<float> up = alpha, down = alpha;
      up[j] += static_cast<float>(eps);
      down[j] -= static_cast<float>(eps);
      const double fd = lambda *
                        (expected_latency(up.data(), noise.data(), scale.data(), lat, 0, nullptr) -
                         expected_latency(down.data(), noise.data(), scale.data(), lat, 0, nullptr)) /
                        (2 * eps);
      EXPECT_NEAR(grad[j] - 0.25f, fd, 1e-3) << "scale " << s << " op " << j;
    }
  }
  // E is the probability-weighted latency.
  const std::vector<float> zero(4, 0.0f), one(4, 1.0f);
  EXPECT_NEAR(expected_latency(zero.data(), zero.data(), one.data(), lat, 0, nullptr), (0.5 + 1.25 + 0.0 + 3.0) / 4,
              1e-12);
}

TEST(Supernet, HasOneMixedOpPerPositionAndStartsUniform) {
  const arch::SearchSpace space = testing::micro_space();
  const auto positions = block_positions(space, 8, 1.0, "relu");
  ASSERT_EQ(positions.size(), 3u);
  EXPECT_FALSE(positions[0].optional);
  EXPECT_FALSE(positions[1].optional);
  EXPECT_TRUE(positions[2].optional);
  EXPECT_EQ(positions[0].stride, 2);
  EXPECT_EQ(positions[1].in_resolution, 4);
  Supernet net = build_supernet(space, positions, 8, 1.0, 1);
  ASSERT_EQ(net.ops.size(), 3u);
  Session session(net.model);
  const std::vector<Tensor> out = session.run({{"input", random_input({2, 1, 8, 8}, 1)}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(initialiser(*net.model, net.ops[2].alpha).numel(), 5);
}

}  // namespace
}  // namespace xnn::nas
