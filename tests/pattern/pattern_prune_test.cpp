// Pattern pruning (compress/prune/pattern_prune.h): top-k patterns, library learning recovers
// planted patterns, projection keeps the max-energy library pattern, connectivity reaches the
// exact target, the sparsity mapping, which weights are pattern-prunable, and the gradual
// pruner's masks stay zero through SGD steps.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "compress/prune/pattern_prune.h"
#include "engine/train/optimizer.h"
#include "engine/train/training_session.h"
#include "../prune/prune_model_builder.h"

namespace xnn::prune {
namespace {

using test::random_tensor;

// The pattern tests draw their weights from seed 7.
struct Builder : test::Builder {
  Builder() : test::Builder(7) {}
};

std::map<std::string, Attribute> conv_attrs(int64_t k, int64_t group) {
  std::map<std::string, Attribute> a;
  a["kernel_shape"] = std::vector<int64_t>{k, k};
  a["pads"] = std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2};
  a["group"] = group;
  return a;
}

// first 3x3 conv (input-fed), 3x3 conv, depthwise 3x3, 1x1 conv, 3x3 conv, linear head.
std::shared_ptr<Model> cnn(Builder& b) {
  int y = b.input("x", {2, 3, 8, 8});
  y = b.node("Conv", "first", {y, b.weight("w_first", {16, 3, 3, 3})}, conv_attrs(3, 1));
  y = b.node("Conv", "c1", {y, b.weight("w_c1", {32, 16, 3, 3}), b.weight("b_c1", {32})}, conv_attrs(3, 1));
  y = b.node("Conv", "dw", {y, b.weight("w_dw", {32, 1, 3, 3})}, conv_attrs(3, 32));
  y = b.node("Conv", "pw", {y, b.weight("w_pw", {32, 32, 1, 1})}, conv_attrs(1, 1));
  y = b.node("Conv", "c2", {y, b.weight("w_c2", {24, 32, 3, 3})}, conv_attrs(3, 1));
  y = b.node("Flatten", "flat", {y}, {{"axis", Attribute(int64_t{1})}});
  y = b.node("Gemm", "fc", {y, b.weight("w_fc", {24 * 64, 10})});
  b.g().outputs.push_back(y);
  b.g().validate("pattern test cnn");
  return b.model;
}

const Tensor& weight_of(const Model& m, const std::string& value) { return *m.graph.value(m.graph.find_value(value)).data; }

TEST(PatternPrune, PrunableWeightsAre3x3Group1ConvsOnly) {
  Builder b;
  const auto model = cnn(b);
  std::vector<std::string> names;
  for (const PrunableWeight& w : pattern_prunable_weights(*model, PruneOptions{})) names.push_back(w.value);
  EXPECT_EQ(names, (std::vector<std::string>{"w_c1", "w_c2"}));
  PruneOptions first;
  first.prune_first_conv = true;
  first.min_elements = 0;
  names.clear();
  for (const PrunableWeight& w : pattern_prunable_weights(*model, first)) names.push_back(w.value);
  EXPECT_EQ(names, (std::vector<std::string>{"w_first", "w_c1", "w_c2"}));
}

TEST(PatternPrune, TopKPatternAndMaxEnergyProjection) {
  const float k[9] = {0.1f, -5.0f, 0.2f, 3.0f, 4.0f, -0.3f, 0.0f, 2.0f, 0.05f};
  EXPECT_EQ(top_k_pattern(k, 4), (1u << 1) | (1u << 3) | (1u << 4) | (1u << 7));
  EXPECT_EQ(top_k_pattern(k, 1), 1u << 1);
  const float zero[9] = {};
  EXPECT_EQ(top_k_pattern(zero, 4), 0u);
  // Energies: {0,1,3,4}: 0.01+25+9+16 = 50.01; {4,5,7,8}: 16+0.09+4+0.0025 = 20.09;
  // {1,4,7,2}: 25+16+4+0.04 = 45.04.
  const std::vector<uint16_t> library = {0x1B0, 0x096, 0x01B};
  EXPECT_EQ(best_pattern(k, library), 2);
  EXPECT_EQ(best_pattern(k, {0x1B0, 0x096}), 1);
}

TEST(PatternPrune, LibraryLearningRecoversPlantedPatterns) {
  // Weights whose kernels are planted 4-tap patterns (3 of them, with 50/30/20% frequency) plus
  // small noise everywhere: the learned library is the planted patterns, most frequent first.
  const uint16_t planted[3] = {0x03A, 0x01B, 0x1B0};
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.0f, 0.01f);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<float> a(200 * 9), bw(100 * 9);
  auto fill = [&](std::vector<float>& v) {
    for (size_t k = 0; k < v.size() / 9; ++k) {
      const double r = u(rng);
      const uint16_t m = r < 0.5 ? planted[0] : r < 0.8 ? planted[1] : planted[2];
      for (int t = 0; t < 9; ++t) v[k * 9 + t] = (m & (1u << t)) ? 1.0f + static_cast<float>(u(rng)) : noise(rng);
    }
  };
  fill(a);
  fill(bw);
  PatternOptions o;
  o.taps = 4;
  o.library_size = 8;
  const std::vector<uint16_t> lib = learn_pattern_library({std::span<const float>(a), std::span<const float>(bw)}, o);
  EXPECT_EQ(lib, (std::vector<uint16_t>{planted[0], planted[1], planted[2]}));
  o.library_size = 2;
  EXPECT_EQ(learn_pattern_library({std::span<const float>(a)}, o), (std::vector<uint16_t>{planted[0], planted[1]}));
}

TEST(PatternPrune, SparsityMapping) {
  EXPECT_NEAR(connectivity_for_sparsity(1.0 - 4.0 / 9.0, 4), 0.0, 1e-12);
  EXPECT_NEAR(connectivity_for_sparsity(1.0 - 0.3 * 4.0 / 9.0, 4), 0.7, 1e-12);
  EXPECT_NEAR(connectivity_for_sparsity(0.8, 5), 1.0 - 9.0 * 0.2 / 5.0, 1e-12);
  EXPECT_THROW(connectivity_for_sparsity(0.5, 4), Error);  // below 1 - 4/9
  EXPECT_THROW(connectivity_for_sparsity(1.0, 4), Error);
  try {
    connectivity_for_sparsity(0.3, 4);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not reachable with 4-of-9 patterns"), std::string::npos) << e.what();
  }
}

TEST(PatternPrune, ProjectsEveryKernelAndReachesExactConnectivity) {
  Builder b;
  const auto model = cnn(b);
  const auto ws = pattern_prunable_weights(*model, PruneOptions{});
  const Tensor before = weight_of(*model, "w_c1").clone();
  PatternOptions o;
  o.taps = 4;
  o.library_size = 6;
  const PatternPruneResult r = pattern_prune(*model, ws, o, 0.3);
  EXPECT_EQ(r.library.size(), 6u);
  EXPECT_EQ(r.kernels, 32 * 16 + 24 * 32);
  EXPECT_EQ(r.removed_kernels, std::llround(0.3 * 512) + std::llround(0.3 * 768));
  for (const std::string name : {"w_c1", "w_c2"}) {
    const Tensor& t = weight_of(*model, name);
    const std::vector<uint8_t>& keep = r.masks.at(name);
    int64_t removed = 0;
    for (int64_t k = 0; k < t.numel() / 9; ++k) {
      const float* v = t.data<float>() + k * 9;
      uint16_t mask = 0;
      for (int i = 0; i < 9; ++i) {
        if (v[i] != 0.0f) mask = static_cast<uint16_t>(mask | (1u << i));
        EXPECT_EQ(keep[static_cast<size_t>(k * 9 + i)], v[i] != 0.0f ? 1 : 0);
      }
      if (mask == 0) {
        ++removed;
        continue;
      }
      // A library pattern, the one keeping the most of the original kernel's energy (w_c1).
      EXPECT_NE(std::find(r.library.begin(), r.library.end(), mask), r.library.end()) << name << " kernel " << k;
      if (name == "w_c1") {
        EXPECT_EQ(r.library[static_cast<size_t>(best_pattern(before.data<float>() + k * 9, r.library))], mask);
      }
    }
    EXPECT_EQ(removed, std::llround(0.3 * static_cast<double>(t.numel() / 9))) << name;
  }
  // The removed kernels are the smallest after projection: every kept kernel's norm is >= every
  // removed kernel's projected norm (checked on w_c1 by re-projecting the original).
  const Tensor& t = weight_of(*model, "w_c1");
  double max_removed = 0, min_kept = 1e30;
  for (int64_t k = 0; k < t.numel() / 9; ++k) {
    const float* now = t.data<float>() + k * 9;
    const float* orig = before.data<float>() + k * 9;
    const uint16_t m = r.library[static_cast<size_t>(best_pattern(orig, r.library))];
    double e = 0;
    for (int i = 0; i < 9; ++i) e += (m & (1u << i)) ? double{orig[i]} * orig[i] : 0.0;
    const bool removed = std::all_of(now, now + 9, [](float v) { return v == 0.0f; });
    if (removed) max_removed = std::max(max_removed, e);
    else min_kept = std::min(min_kept, e);
  }
  EXPECT_LE(max_removed, min_kept);
  EXPECT_THROW(pattern_prune(*model, ws, o, 1.0), Error);
  o.taps = 0;
  EXPECT_THROW(pattern_prune(*model, ws, o, 0.1), Error);
}

TEST(GradualPatternPruner, MasksStayZeroThroughSgdStepsAndReachFinalConnectivity) {
  Builder b;
  int y = b.input("x", {4, 8, 6, 6});
  y = b.node("Conv", "c1", {y, b.weight("w1", {16, 8, 3, 3}), b.weight("b1", {16})}, conv_attrs(3, 1));
  y = b.node("Relu", "relu", {y});
  y = b.node("GlobalAveragePool", "gap", {y});
  y = b.node("Flatten", "flat", {y}, {{"axis", Attribute(int64_t{1})}});
  y = b.node("Gemm", "fc", {y, b.weight("wf", {16, 4}), b.weight("bf", {4})});
  b.g().outputs.push_back(y);
  b.g().validate("tiny cnn");
  PruneOptions po;
  po.min_elements = 100;
  po.prune_first_conv = true;  // c1 is fed by the model input
  const auto ws = pattern_prunable_weights(*b.model, po);
  ASSERT_EQ(ws.size(), 1u);

  train::TrainingSession session(b.model, train::TrainingOptions{1, 0, 0.0f});
  train::OptimizerConfig oc;
  oc.momentum = 0.9;
  oc.weight_decay = 1e-3;
  auto opt = train::make_optimizer(oc);
  GradualSchedule sched;
  sched.final_sparsity = 0.5;  // connectivity
  sched.end_fraction = 0.5;
  sched.every = 2;
  GradualPatternPruner pruner(ws, PatternOptions{}, sched);
  const int64_t total = 20;
  Tensor input = random_tensor({4, 8, 6, 6}, b.rng);
  Tensor labels = Tensor::from_vector<int64_t>({0, 1, 2, 3}, {4});
  pruner.on_step(0, total, session.parameters());
  EXPECT_DOUBLE_EQ(pruner.current_connectivity(), 0.0);
  for (int64_t step = 1; step <= total; ++step) {
    session.train_step(input, labels);
    opt->step(session.parameters(), 0.05);
    pruner.on_step(step, total, session.parameters());
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
  EXPECT_DOUBLE_EQ(pruner.current_connectivity(), 0.5);
  EXPECT_GT(pruner.updates(), 2);
  // The model shares the parameters' storage: every kernel keeps <= 4 taps, half are removed.
  const Tensor& w = weight_of(*b.model, "w1");
  int64_t removed = 0;
  for (int64_t k = 0; k < w.numel() / 9; ++k) {
    int nz = 0;
    for (int i = 0; i < 9; ++i) nz += w.data<float>()[k * 9 + i] != 0.0f;
    EXPECT_LE(nz, 4);
    removed += nz == 0;
  }
  EXPECT_EQ(removed, 64);
}

}  // namespace
}  // namespace xnn::prune
