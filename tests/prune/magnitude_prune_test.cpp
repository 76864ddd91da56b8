// Magnitude pruning and the Zhu & Gupta schedule (compress/prune): which weights are prunable,
// exact target sparsity per layer and globally, smallest magnitudes first, schedule values, and
// masks that keep pruned weights at exactly 0 through SGD steps (momentum + weight decay) on a
// tiny model.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compress/prune/magnitude_prune.h"
#include "compress/prune/prune_schedule.h"
#include "engine/train/optimizer.h"
#include "engine/train/training_session.h"
#include "prune_model_builder.h"

namespace xnn::prune {
namespace {

using test::Builder;
using test::random_tensor;

// A CNN with a first conv, a depthwise conv, a pointwise conv, and an MLP head with a tiny layer.
std::shared_ptr<Model> cnn() {
  Builder b;
  const int x = b.input("x", {2, 3, 8, 8});
  const auto conv_attrs = [](int64_t k, int64_t group) {
    std::map<std::string, Attribute> a;
    a["kernel_shape"] = std::vector<int64_t>{k, k};
    a["pads"] = std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2};
    a["group"] = group;
    return a;
  };
  int y = b.node("Conv", "first", {x, b.weight("w_first", {32, 3, 3, 3})}, conv_attrs(3, 1));
  y = b.node("Conv", "dw", {y, b.weight("w_dw", {32, 1, 3, 3})}, conv_attrs(3, 32));
  y = b.node("Conv", "pw", {y, b.weight("w_pw", {64, 32, 1, 1})}, conv_attrs(1, 1));
  y = b.node("Flatten", "flat", {y}, {{"axis", Attribute(int64_t{1})}});
  y = b.node("Gemm", "fc1", {y, b.weight("w_fc1", {64 * 64, 40}), b.weight("b_fc1", {40})});
  y = b.node("Gemm", "fc2", {y, b.weight("w_fc2", {40, 5})});  // 200 weights: below min_elements
  b.g().outputs.push_back(y);
  b.g().validate("test cnn");
  return b.model;
}

std::vector<std::string> value_names(const std::vector<PrunableWeight>& ws) {
  std::vector<std::string> v;
  for (const PrunableWeight& w : ws) v.push_back(w.value);
  return v;
}

int64_t zeros_of(const Model& m, const std::string& value) {
  const Tensor& t = *m.graph.value(m.graph.find_value(value)).data;
  int64_t z = 0;
  for (int64_t i = 0; i < t.numel(); ++i) z += t.data<float>()[i] == 0.0f;
  return z;
}

TEST(PrunableWeights, SkipsFirstConvDepthwiseAndTinyTensorsByDefault) {
  auto m = cnn();
  const std::vector<PrunableWeight> ws = prunable_weights(*m, PruneOptions{});
  EXPECT_EQ(value_names(ws), (std::vector<std::string>{"w_pw", "w_fc1"}));
  EXPECT_EQ(ws[0].node, "pw");
  EXPECT_EQ(ws[0].elements, 64 * 32);
  EXPECT_DOUBLE_EQ(ws[0].macs, 2.0 * 64 * 32 * 8 * 8);  // batch 2, 8x8 output
  PruneOptions all;
  all.prune_first_conv = all.prune_depthwise = true;
  all.min_elements = 1;
  EXPECT_EQ(value_names(prunable_weights(*m, all)),
            (std::vector<std::string>{"w_first", "w_dw", "w_pw", "w_fc1", "w_fc2"}));
}

TEST(MagnitudePrune, PerLayerReachesExactTargetSmallestFirst) {
  auto m = cnn();
  const Model before = *m;
  const auto ws = prunable_weights(*m, PruneOptions{});
  for (double s : {0.5, 0.8, 0.9, 0.973}) {
    auto model = std::make_shared<Model>(before);
    for (Value& v : model->graph.values) {
      if (v.data) v.data = v.data->clone();  // the copy must not share weights with `before`
    }
    const PruneMasks masks = magnitude_prune(*model, ws, s, false);
    for (const PrunableWeight& w : ws) {
      EXPECT_EQ(zeros_of(*model, w.value), std::llround(s * static_cast<double>(w.elements))) << w.value << " " << s;
      // Every kept weight is at least as large as every pruned one.
      const Tensor& orig = *before.graph.value(before.graph.find_value(w.value)).data;
      float max_pruned = 0, min_kept = 1e30f;
      const std::vector<uint8_t>& keep = masks.at(w.value);
      for (int64_t i = 0; i < orig.numel(); ++i) {
        const float a = std::fabs(orig.data<float>()[i]);
        if (keep[i]) {
          min_kept = std::min(min_kept, a);
        } else {
          max_pruned = std::max(max_pruned, a);
        }
      }
      EXPECT_LE(max_pruned, min_kept);
    }
    const SparsityReport r = sparsity_report(*model, ws);
    EXPECT_NEAR(r.sparsity(), s, 1e-3);
    EXPECT_LT(r.effective_macs, r.model_macs);
    EXPECT_NEAR(r.layers[0].effective_macs, r.layers[0].macs * (1.0 - r.layers[0].sparsity()), 1e-6);
  }
  // Untouched: biases and the skipped weights.
  EXPECT_EQ(zeros_of(*m, "w_first"), 0);
}

TEST(MagnitudePrune, GlobalReachesExactTotalAndRejectsBadTargets) {
  auto m = cnn();
  const auto ws = prunable_weights(*m, PruneOptions{});
  magnitude_prune(*m, ws, 0.9, true);
  const SparsityReport r = sparsity_report(*m, ws);
  EXPECT_EQ(r.zeros, std::llround(0.9 * static_cast<double>(r.elements)));
  EXPECT_THROW(magnitude_prune(*m, ws, 1.0, true), Error);
  EXPECT_THROW(magnitude_prune(*m, ws, -0.1, false), Error);
}

TEST(PruneSchedule, ZhuGuptaCubic) {
  EXPECT_DOUBLE_EQ(zhu_gupta_sparsity(0.0, 0.9, 0, 0, 100), 0.0);
  EXPECT_DOUBLE_EQ(zhu_gupta_sparsity(0.0, 0.9, 100, 0, 100), 0.9);
  EXPECT_DOUBLE_EQ(zhu_gupta_sparsity(0.0, 0.9, 50, 0, 100), 0.9 - 0.9 * 0.125);
  EXPECT_DOUBLE_EQ(zhu_gupta_sparsity(0.2, 0.8, 25, 10, 40), 0.8 + (0.2 - 0.8) * 0.125);
  EXPECT_DOUBLE_EQ(zhu_gupta_sparsity(0.2, 0.8, 5, 10, 40), 0.2);    // before t0
  EXPECT_DOUBLE_EQ(zhu_gupta_sparsity(0.2, 0.8, 400, 10, 40), 0.8);  // after t1
  EXPECT_DOUBLE_EQ(zhu_gupta_sparsity(0.0, 0.5, 3, 3, 3), 0.5);      // t1 == t0: one-shot
  // Monotone: fast first, slow at the end.
  double prev = -1;
  for (int t = 0; t <= 100; t += 10) {
    const double s = zhu_gupta_sparsity(0.0, 0.9, t, 0, 100);
    EXPECT_GT(s, prev);
    prev = s;
  }
  EXPECT_GT(zhu_gupta_sparsity(0, 0.9, 10, 0, 100) - zhu_gupta_sparsity(0, 0.9, 0, 0, 100),
            zhu_gupta_sparsity(0, 0.9, 100, 0, 100) - zhu_gupta_sparsity(0, 0.9, 90, 0, 100));
}

// x [8, 20] -> Gemm 20x64 -> Relu -> Gemm 64x10: trained with SGD (momentum, weight decay)
// under the gradual pruner as the trainer's step hook would call it.
TEST(GradualPruner, MasksStayZeroThroughSgdStepsAndReachFinalSparsity) {
  Builder b;
  const int x = b.input("x", {8, 20});
  int y = b.node("Gemm", "fc1", {x, b.weight("w1", {20, 64}), b.weight("b1", {64})});
  y = b.node("Relu", "relu", {y});
  y = b.node("Gemm", "fc2", {y, b.weight("w2", {64, 10}), b.weight("b2", {10})});
  b.g().outputs.push_back(y);
  b.g().validate("tiny mlp");
  PruneOptions po;
  po.min_elements = 100;
  const auto ws = prunable_weights(*b.model, po);
  ASSERT_EQ(value_names(ws), (std::vector<std::string>{"w1", "w2"}));

  train::TrainingSession session(b.model, train::TrainingOptions{1, 0, 0.0f});
  train::OptimizerConfig oc;
  oc.momentum = 0.9;
  oc.weight_decay = 1e-3;
  auto opt = train::make_optimizer(oc);
  GradualSchedule sched;
  sched.final_sparsity = 0.8;
  sched.end_fraction = 0.5;
  sched.every = 3;
  GradualPruner pruner(ws, sched, false);
  const int64_t total = 40;
  Tensor input = random_tensor({8, 20}, b.rng);
  Tensor labels = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {8});
  pruner.on_step(0, total, session.parameters());
  EXPECT_EQ(pruner.end_step(), 20);
  EXPECT_EQ(pruner.every(), 3);
  EXPECT_DOUBLE_EQ(pruner.current_sparsity(), 0.0);
  double last = 0;
  for (int64_t step = 1; step <= total; ++step) {
    session.train_step(input, labels);
    opt->step(session.parameters(), 0.05);
    pruner.on_step(step, total, session.parameters());
    EXPECT_GE(pruner.current_sparsity(), last);
    last = pruner.current_sparsity();
    for (const train::Parameter& p : session.parameters()) {
      auto it = pruner.masks().find(p.name);
      if (it == pruner.masks().end()) continue;
      for (size_t i = 0; i < it->second.size(); ++i) {
        if (!it->second[i]) {
          ASSERT_EQ(p.value.data<float>()[i], 0.0f) << p.name << " step " << step;
        }
      }
    }
  }
  EXPECT_DOUBLE_EQ(pruner.current_sparsity(), 0.8);
  // The model shares the parameters' storage: it holds the pruned weights.
  EXPECT_EQ(zeros_of(*b.model, "w1"), 1024);  // round(0.8 * 1280)
  EXPECT_EQ(zeros_of(*b.model, "w2"), 512);
  EXPECT_GT(pruner.updates(), 3);
}

TEST(GradualPruner, RejectsBadSchedules) {
  GradualSchedule s;
  s.final_sparsity = 1.0;
  EXPECT_THROW(GradualPruner({}, s, false), Error);
  s.final_sparsity = 0.5;
  s.begin_step = 10;
  s.end_step = 5;
  EXPECT_THROW(GradualPruner({}, s, false), Error);
}

}  // namespace
}  // namespace xnn::prune
