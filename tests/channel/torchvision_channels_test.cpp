// Channel analysis and pruning of the torchvision fixtures (exported by the torchvision_fixtures
// test into $XNN_TORCHVISION_FIXTURES; skipped when absent): ResNet-18's residual groups (one per
// stage) and MobileNetV2's depthwise chains and bottleneck residuals are found, and pruning every
// prunable group by half gives a model that validates, runs and still outputs [1, 1000].
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "compress/channel/channel_cost.h"
#include "compress/channel/channel_groups.h"
#include "compress/channel/channel_prune.h"
#include "engine/runtime/graph_cost.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/session.h"

namespace xnn::channel {
namespace {

std::shared_ptr<Model> fixture(const std::string& name) {
  const char* dir = std::getenv("XNN_TORCHVISION_FIXTURES");
  if (!dir) return nullptr;
  const std::string path = std::string(dir) + "/" + name + ".onnx";
  if (!std::filesystem::exists(path)) return nullptr;
  return load_model(path);
}

struct Counts {
  int prunable = 0, residual = 0, depthwise = 0;
};
Counts count(const ChannelAnalysis& a) {
  Counts c;
  for (const ChannelGroup& g : a.groups) {
    c.prunable += g.prunable;
    c.residual += g.residual;
    c.depthwise += !g.depthwise_nodes.empty();
  }
  return c;
}

void prune_half_and_run(const Model& m, const ChannelAnalysis& a) {
  KeepCounts keep = keep_all(a);
  for (const ChannelGroup& g : a.groups)
    if (g.prunable) keep[static_cast<size_t>(g.id)] = round_keep(g.channels, 0.5, 8);
  const Model pruned = prune_to_counts(m, a, weight_importance(m.graph, a, Importance::kL1), keep);
  const ChannelCostModel cost(m.graph, a);
  const double macs = estimate_graph_cost(pruned.graph).total.macs;
  EXPECT_NEAR(macs, cost.macs(keep), 1e-6 * macs);
  EXPECT_LT(macs, 0.6 * estimate_graph_cost(m.graph).total.macs);
  Session s(std::make_shared<const Model>(pruned));
  Tensor x(DType::kF32, {1, 3, 224, 224});
  const std::vector<Tensor> y = s.run({{pruned.graph.value(pruned.graph.inputs[0]).name, x}});
  EXPECT_EQ(y.at(0).shape(), (Shape{1, 1000}));
}

TEST(TorchvisionChannels, ResNet18) {
  const auto m = fixture("resnet18");
  if (!m) GTEST_SKIP() << "no torchvision fixtures (XNN_TORCHVISION_FIXTURES)";
  const ChannelAnalysis a = analyze_channels(m->graph);
  const Counts c = count(a);
  EXPECT_EQ(c.residual, 4);    // one residual group per stage
  EXPECT_EQ(c.prunable, 12);   // 8 block-internal + 4 residual; input and logits fixed
  EXPECT_EQ(c.depthwise, 0);
  prune_half_and_run(*m, a);
}

TEST(TorchvisionChannels, MobileNetV2) {
  const auto m = fixture("mobilenet_v2");
  if (!m) GTEST_SKIP() << "no torchvision fixtures (XNN_TORCHVISION_FIXTURES)";
  const ChannelAnalysis a = analyze_channels(m->graph);
  const Counts c = count(a);
  EXPECT_EQ(c.depthwise, 17);  // every inverted residual block's expand -> depthwise chain
  EXPECT_EQ(c.residual, 5);    // bottlenecks with skip connections (24, 32, 64, 96, 160)
  EXPECT_EQ(c.prunable, 25);
  prune_half_and_run(*m, a);
}

}  // namespace
}  // namespace xnn::channel
