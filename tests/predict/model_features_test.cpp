#include "harness/predict/model_features.h"

#include <gtest/gtest.h>

#include <random>

#include "harness/arch/mobilenet_space.h"
#include "harness/targets/target.h"

namespace xnn::predict {
namespace {

std::shared_ptr<const Model> tiny_model(uint64_t seed) {
  const arch::SearchSpace space = arch::load_search_space(XNN_SOURCE_DIR "/configs/arch/mobilenet_space_tiny.yaml");
  std::mt19937_64 rng(seed);
  return arch::build_arch_model(space, arch::sample_arch(space, rng), seed);
}

// The two featurisation paths -- a plan for prediction, a stored profile for calibration --
// must agree op for op, or the predictor would be fitted on other features than it is fed.
TEST(ModelFeatures, PlanAndStoredProfileFeaturiseIdentically) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    const auto model = tiny_model(seed);
    const std::vector<OpFeatures> planned = featurize_model(model, 1);
    ASSERT_FALSE(planned.empty());

    SessionOptions opts;
    opts.profile = true;
    Session session(model, opts);
    session.run(random_inputs(session));
    std::vector<OpProfileRow> rows;
    for (const NodeProfile& p : session.last_profile()) {
      rows.push_back(OpProfileRow{static_cast<int64_t>(p.node_index), p.name, p.op_type, p.kernel,
                                  shapes_text(p.input_shapes, p.output_shapes), 0, 0, p.time_ms});
    }
    const std::vector<OpFeatures> profiled = featurize_profile(rows, fused_activations(session.optimized_graph()));
    ASSERT_EQ(profiled.size(), planned.size());
    for (size_t i = 0; i < planned.size(); ++i) {
      EXPECT_EQ(profiled[i].name, planned[i].name);
      EXPECT_EQ(profiled[i].family, planned[i].family);
      EXPECT_EQ(profiled[i].x, planned[i].x) << planned[i].name;
      EXPECT_EQ(profiled[i].macs, planned[i].macs);
    }
  }
}

TEST(ModelFeatures, FusedActivationsComeFromTheOptimisedGraph) {
  const auto model = tiny_model(4);
  Session session(model, SessionOptions{});
  const auto acts = fused_activations(session.optimized_graph());
  ASSERT_FALSE(acts.empty());
  for (const auto& [node, act] : acts) {
    EXPECT_FALSE(act.empty()) << node;
    EXPECT_GT(activation_code(act), 0) << act;
  }
  const std::vector<OpFeatures> ops = featurize_model(model, 1);
  int with_activation = 0;
  for (const OpFeatures& o : ops) with_activation += acts.count(o.name) ? 1 : 0;
  EXPECT_EQ(with_activation, static_cast<int>(acts.size()));
}

TEST(ModelFeatures, MalformedStoredShapesNameTheNode) {
  std::vector<OpProfileRow> rows = {OpProfileRow{0, "conv7", "Conv", "reference", "[1,3,8", 0, 0, 1.0}};
  try {
    featurize_profile(rows, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv7"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xnn::predict
