// Channel pruning (compress/channel) on small hand-built graphs: the dependency groups found
// (conv-bn-relu-conv, residual Add, Concat, depthwise chain, Flatten->Gemm, Squeeze-Excite),
// the pruned shapes, and the key correctness property: when the removed channels contribute
// exactly nothing (their filters, biases and BatchNorm shift zeroed first), the physically
// smaller model computes the same outputs as the original within 1e-6. Unprunable patterns are
// reported with a reason and refused. The ratio search meets its FLOPs/params target, and the
// analytic cost model agrees with the MACs of the pruned graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compress/channel/channel_cost.h"
#include "compress/channel/channel_groups.h"
#include "compress/channel/channel_importance.h"
#include "compress/channel/channel_prune.h"
#include "compress/channel/channel_taylor.h"
#include "compress/channel/ratio_search.h"
#include "engine/runtime/graph_cost.h"
#include "engine/runtime/session.h"
#include "engine/train/training_session.h"

namespace xnn::channel {
namespace {

using Attrs = std::map<std::string, Attribute>;

// Builds graphs by value name (outputs are created on first mention).
class Builder {
 public:
  Builder& input(const std::string& name, Shape shape) {
    Value v;
    v.name = name;
    v.dtype = DType::kF32;
    v.has_shape = true;
    for (int64_t d : shape) v.shape.push_back(Dim::fixed(d));
    m.graph.inputs.push_back(m.graph.add_value(std::move(v)));
    return *this;
  }
  Builder& random(const std::string& name, Shape shape, float lo = -1.0f, float hi = 1.0f) {
    Tensor t(DType::kF32, std::move(shape));
    std::uniform_real_distribution<float> dist(lo, hi);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng_);
    m.graph.add_constant(name, std::move(t));
    return *this;
  }
  Builder& node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                const std::vector<std::string>& outputs, Attrs attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = name;
    n.attrs = std::move(attrs);
    for (const std::string& i : inputs) n.inputs.push_back(value(i));
    for (const std::string& o : outputs) {
      int v = m.graph.find_value(o);
      if (v < 0) {
        Value val;
        val.name = o;
        v = m.graph.add_value(std::move(val));
      }
      n.outputs.push_back(v);
    }
    m.graph.nodes.push_back(std::move(n));
    return *this;
  }
  // Conv with weights name_w [cout, cin/group, k, k] and bias name_b.
  Builder& conv(const std::string& name, const std::string& x, const std::string& y, int64_t cin, int64_t cout,
                int64_t k = 3, int64_t group = 1) {
    random(name + "_w", {cout, cin / group, k, k});
    random(name + "_b", {cout});
    const int64_t p = k / 2;
    return node("Conv", name, {x, name + "_w", name + "_b"}, {y},
                {{"group", group}, {"pads", std::vector<int64_t>{p, p, p, p}}});
  }
  Builder& bn(const std::string& name, const std::string& x, const std::string& y, int64_t c) {
    random(name + "_scale", {c}, 0.5f, 1.5f);
    random(name + "_bias", {c});
    random(name + "_mean", {c});
    random(name + "_var", {c}, 0.2f, 2.0f);
    return node("BatchNormalization", name, {x, name + "_scale", name + "_bias", name + "_mean", name + "_var"}, {y},
                {{"epsilon", 1e-5f}});
  }
  Builder& output(const std::string& name) {
    m.graph.outputs.push_back(value(name));
    return *this;
  }
  int value(const std::string& name) const {
    const int v = m.graph.find_value(name);
    if (v < 0) throw Error("test graph has no value '" + name + "'");
    return v;
  }
  Tensor& data(const std::string& name) { return *m.graph.value(value(name)).data; }
  // Zeroes channel c of a constant along axis 0 (a filter, a bias, a BatchNorm parameter).
  void zero_row(const std::string& name, int64_t c) {
    Tensor& t = data(name);
    const int64_t row = t.numel() / t.dim(0);
    std::fill(t.data<float>() + c * row, t.data<float>() + (c + 1) * row, 0.0f);
  }
  // Makes channel c of conv `name` (and its BatchNorm, if any) output exactly zero.
  void silence(const std::string& conv_name, int64_t c, const std::string& bn_name = "") {
    zero_row(conv_name + "_w", c);
    zero_row(conv_name + "_b", c);
    if (!bn_name.empty()) {
      zero_row(bn_name + "_bias", c);
      zero_row(bn_name + "_mean", c);
    }
  }

  Model m;

 private:
  std::mt19937 rng_{11};
};

// Reference kernels without graph optimisation sum in channel order, so removing channels that
// add exact zeros must not change a single bit; optimised kernels may reorder sums (Winograd,
// blocking by channel count), which only float rounding separates.
std::vector<Tensor> run(const Model& model, const Tensor& x, bool reference = false) {
  SessionOptions so;
  so.cpu_kernels = !reference;
  so.opt_level = reference ? 0 : 2;
  Session s(std::make_shared<const Model>(model), so);
  return s.run({{model.graph.value(model.graph.inputs[0]).name, x}});
}

Tensor random_input(Shape shape, unsigned seed = 3) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  Tensor t(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

void expect_same_outputs(const Model& a, const Model& b, const Tensor& x) {
  for (bool reference : {true, false}) {
    const std::vector<Tensor> ya = run(a, x, reference), yb = run(b, x, reference);
    ASSERT_EQ(ya.size(), yb.size());
    const double tolerance = reference ? 1e-6 : 1e-5;
    for (size_t i = 0; i < ya.size(); ++i) {
      ASSERT_EQ(ya[i].shape(), yb[i].shape());
      float scale = 1.0f;  // optimised sums round relative to the output's magnitude
      for (int64_t j = 0; j < ya[i].numel(); ++j) scale = std::max(scale, std::fabs(ya[i].data<float>()[j]));
      for (int64_t j = 0; j < ya[i].numel(); ++j)
        ASSERT_NEAR(ya[i].data<float>()[j], yb[i].data<float>()[j], tolerance * (reference ? 1.0f : scale))
            << (reference ? "reference" : "optimised") << " output " << i << " element " << j;
    }
  }
}

// The group carrying (the first channels of) value `name`.
const ChannelGroup& group_at(const Builder& b, const ChannelAnalysis& a, const std::string& name) {
  return a.groups.at(static_cast<size_t>(a.layout.at(static_cast<size_t>(b.value(name))).at(0).group));
}

// The group whose producers include node `name`.
const ChannelGroup& group_of(const Model& model, const ChannelAnalysis& a, const std::string& node_name) {
  for (const ChannelGroup& g : a.groups)
    for (const Member& m : g.members)
      if (m.role == MemberRole::kProducer && model.graph.nodes[static_cast<size_t>(m.node)].name == node_name) return g;
  throw Error("no group produced by " + node_name);
}

// Keeps every channel except `removed` in group `g`.
std::vector<std::vector<int64_t>> all_but(const ChannelAnalysis& a, const std::map<int, std::vector<int64_t>>& removed) {
  std::vector<std::vector<int64_t>> kept;
  for (const ChannelGroup& g : a.groups) {
    std::vector<int64_t> k;
    const std::vector<int64_t> drop = removed.count(g.id) ? removed.at(g.id) : std::vector<int64_t>{};
    for (int64_t c = 0; c < g.channels; ++c)
      if (std::find(drop.begin(), drop.end(), c) == drop.end()) k.push_back(c);
    kept.push_back(k);
  }
  return kept;
}

const Shape& const_shape(const Model& m, const std::string& name) {
  return m.graph.value(m.graph.find_value(name)).data->shape();
}

TEST(ChannelPrune, ConvBnReluConvIsExactWhenRemovedChannelsAreSilent) {
  Builder b;
  b.input("x", {2, 3, 8, 8});
  b.conv("conv1", "x", "c1", 3, 16).bn("bn1", "c1", "b1", 16).node("Relu", "relu1", {"b1"}, {"r1"});
  b.conv("conv2", "r1", "y", 16, 8).output("y");
  for (int64_t c : {1, 5, 6, 11}) b.silence("conv1", c, "bn1");
  const ChannelAnalysis a = analyze_channels(b.m.graph);
  EXPECT_EQ(a.prunable_count(), 1);  // the input's and the output's channels are fixed
  const ChannelGroup& g = group_of(b.m, a, "conv1");
  ASSERT_TRUE(g.prunable);
  EXPECT_EQ(g.channels, 16);
  EXPECT_FALSE(group_of(b.m, a, "conv2").prunable);

  const Model pruned = prune_channels(b.m, a, all_but(a, {{g.id, {1, 5, 6, 11}}}));
  EXPECT_EQ(const_shape(pruned, "conv1_w"), (Shape{12, 3, 3, 3}));
  EXPECT_EQ(const_shape(pruned, "conv1_b"), (Shape{12}));
  EXPECT_EQ(const_shape(pruned, "bn1_var"), (Shape{12}));
  EXPECT_EQ(const_shape(pruned, "conv2_w"), (Shape{8, 12, 3, 3}));
  EXPECT_LT(pruned.graph.parameter_count(), b.m.graph.parameter_count());
  expect_same_outputs(b.m, pruned, random_input({2, 3, 8, 8}));
}

TEST(ChannelPrune, ResidualAddSharesOneGroupAcrossProducers) {
  Builder b;
  b.input("x", {1, 4, 6, 6});
  b.conv("conv_a", "x", "a", 4, 8).bn("bn_a", "a", "an", 8).node("Relu", "ra", {"an"}, {"r"});
  b.conv("conv_b", "r", "bb", 8, 8).bn("bn_b", "bb", "bn", 8);
  b.node("Add", "add", {"bn", "r"}, {"s"}).node("Relu", "rs", {"s"}, {"t"});
  b.conv("conv_c", "t", "y", 8, 4).output("y");
  for (int64_t c : {0, 3}) {
    b.silence("conv_a", c, "bn_a");
    b.silence("conv_b", c, "bn_b");
  }
  const ChannelAnalysis a = analyze_channels(b.m.graph);
  const ChannelGroup& g = group_of(b.m, a, "conv_a");
  EXPECT_EQ(&g, &group_of(b.m, a, "conv_b"));
  EXPECT_TRUE(g.residual);
  EXPECT_EQ(g.producers(), 2);
  ASSERT_TRUE(g.prunable);
  const Model pruned = prune_channels(b.m, a, all_but(a, {{g.id, {0, 3}}}));
  EXPECT_EQ(const_shape(pruned, "conv_a_w"), (Shape{6, 4, 3, 3}));
  EXPECT_EQ(const_shape(pruned, "conv_b_w"), (Shape{6, 6, 3, 3}));
  EXPECT_EQ(const_shape(pruned, "conv_c_w"), (Shape{4, 6, 3, 3}));
  expect_same_outputs(b.m, pruned, random_input({1, 4, 6, 6}));
}

TEST(ChannelPrune, ConcatConsumerIsSlicedAtEachInputsOffset) {
  Builder b;
  b.input("x", {1, 3, 5, 5});
  b.conv("conv1", "x", "p", 3, 8).node("Relu", "r1", {"p"}, {"pr"});
  b.conv("conv2", "x", "q", 3, 6).node("Relu", "r2", {"q"}, {"qr"});
  b.node("Concat", "cat", {"pr", "qr"}, {"c"}, {{"axis", int64_t{1}}});
  b.conv("conv3", "c", "y", 14, 4).output("y");
  b.silence("conv1", 2);
  b.silence("conv2", 4);
  b.silence("conv2", 5);
  const ChannelAnalysis a = analyze_channels(b.m.graph);
  const ChannelGroup& g1 = group_of(b.m, a, "conv1");
  const ChannelGroup& g2 = group_of(b.m, a, "conv2");
  ASSERT_NE(g1.id, g2.id);
  ASSERT_TRUE(g1.prunable && g2.prunable);
  ASSERT_EQ(a.layout[static_cast<size_t>(b.value("c"))].size(), 2u);
  const Model pruned = prune_channels(b.m, a, all_but(a, {{g1.id, {2}}, {g2.id, {4, 5}}}));
  EXPECT_EQ(const_shape(pruned, "conv3_w"), (Shape{4, 11, 3, 3}));
  expect_same_outputs(b.m, pruned, random_input({1, 3, 5, 5}));
}

TEST(ChannelPrune, DepthwiseChainFollowsItsInputAndUpdatesGroup) {
  Builder b;
  b.input("x", {1, 3, 7, 7});
  b.conv("conv1", "x", "e", 3, 16, 1).bn("bn1", "e", "eb", 16).node("Relu", "r1", {"eb"}, {"er"});
  b.conv("dw", "er", "d", 16, 16, 3, 16).bn("bn2", "d", "db", 16).node("Clip", "r2", {"db"}, {"dr"});
  b.conv("conv2", "dr", "y", 16, 8, 1).output("y");
  for (int64_t c : {3, 7, 8, 9, 12, 13, 14, 15}) {
    b.silence("conv1", c, "bn1");
    b.zero_row("dw_b", c);
    b.zero_row("bn2_bias", c);
    b.zero_row("bn2_mean", c);
  }
  const ChannelAnalysis a = analyze_channels(b.m.graph);
  const ChannelGroup& g = group_of(b.m, a, "conv1");
  ASSERT_TRUE(g.prunable);
  ASSERT_EQ(g.depthwise_nodes.size(), 1u);
  const Model pruned = prune_channels(b.m, a, all_but(a, {{g.id, {3, 7, 8, 9, 12, 13, 14, 15}}}));
  EXPECT_EQ(const_shape(pruned, "dw_w"), (Shape{8, 1, 3, 3}));
  for (const Node& n : pruned.graph.nodes) {
    if (n.name == "dw") {
      EXPECT_EQ(n.attr_int("group"), 8);
    }
  }
  EXPECT_EQ(const_shape(pruned, "conv2_w"), (Shape{8, 8, 1, 1}));
  expect_same_outputs(b.m, pruned, random_input({1, 3, 7, 7}));
}

TEST(ChannelPrune, FlattenToGemmRemovesHWColumnsPerChannel) {
  Builder b;
  b.input("x", {2, 3, 4, 4});
  b.conv("conv1", "x", "c", 3, 8).node("Relu", "r", {"c"}, {"rr"});
  b.node("Flatten", "flat", {"rr"}, {"f"}, {{"axis", int64_t{1}}});
  b.random("fc_w", {10, 8 * 16}).random("fc_b", {10});
  b.node("Gemm", "fc", {"f", "fc_w", "fc_b"}, {"y"}, {{"transB", int64_t{1}}}).output("y");
  b.silence("conv1", 1);
  b.silence("conv1", 6);
  const ChannelAnalysis a = analyze_channels(b.m.graph);
  const ChannelGroup& g = group_of(b.m, a, "conv1");
  ASSERT_TRUE(g.prunable);
  const Model pruned = prune_channels(b.m, a, all_but(a, {{g.id, {1, 6}}}));
  EXPECT_EQ(const_shape(pruned, "fc_w"), (Shape{10, 6 * 16}));
  expect_same_outputs(b.m, pruned, random_input({2, 3, 4, 4}));
}

TEST(ChannelPrune, GemmChainAfterGlobalPoolAndReshape) {
  Builder b;
  b.input("x", {2, 3, 4, 4});
  b.conv("conv1", "x", "c", 3, 8).node("Relu", "r", {"c"}, {"rr"});
  b.node("GlobalAveragePool", "gap", {"rr"}, {"p"});
  b.m.graph.add_constant("shape", Tensor::from_vector<int64_t>({0, -1}, {2}));
  b.node("Reshape", "flat", {"p", "shape"}, {"f"});
  b.random("fc1_w", {8, 12}).random("fc1_b", {12});  // MatMul layout [in, out]
  b.node("MatMul", "fc1", {"f", "fc1_w"}, {"h"}).node("Add", "fc1_add", {"h", "fc1_b"}, {"hb"});
  b.node("Relu", "r2", {"hb"}, {"hr"});
  b.random("fc2_w", {5, 12}).random("fc2_b", {5});
  b.node("Gemm", "fc2", {"hr", "fc2_w", "fc2_b"}, {"y"}, {{"transB", int64_t{1}}}).output("y");
  b.silence("conv1", 0);
  // fc1 column 4: zero weights and bias -> relu output 0.
  for (int64_t i = 0; i < 8; ++i) b.data("fc1_w").data<float>()[i * 12 + 4] = 0;
  b.data("fc1_b").data<float>()[4] = 0;
  const ChannelAnalysis a = analyze_channels(b.m.graph);
  const ChannelGroup& g1 = group_of(b.m, a, "conv1");
  const ChannelGroup& g2 = group_of(b.m, a, "fc1");
  ASSERT_TRUE(g1.prunable && g2.prunable);
  const Model pruned = prune_channels(b.m, a, all_but(a, {{g1.id, {0}}, {g2.id, {4}}}));
  EXPECT_EQ(const_shape(pruned, "fc1_w"), (Shape{7, 11}));
  EXPECT_EQ(const_shape(pruned, "fc1_b"), (Shape{11}));
  EXPECT_EQ(const_shape(pruned, "fc2_w"), (Shape{5, 11}));
  expect_same_outputs(b.m, pruned, random_input({2, 3, 4, 4}));
}

TEST(ChannelPrune, SqueezeExciteTiesTheExpandConvToTheFeatures) {
  Builder b;
  b.input("x", {1, 3, 6, 6});
  b.conv("conv1", "x", "f", 3, 8).node("Relu", "r1", {"f"}, {"fr"});
  b.node("GlobalAveragePool", "gap", {"fr"}, {"p"});
  b.conv("se_reduce", "p", "s1", 8, 4, 1).node("Relu", "se_relu", {"s1"}, {"s1r"});
  b.conv("se_expand", "s1r", "s2", 4, 8, 1).node("Sigmoid", "se_sig", {"s2"}, {"s"});
  b.node("Mul", "scale", {"fr", "s"}, {"z"});
  b.conv("conv2", "z", "y", 8, 4).output("y");
  b.silence("conv1", 5);
  b.silence("se_reduce", 1);
  const ChannelAnalysis a = analyze_channels(b.m.graph);
  const ChannelGroup& g = group_of(b.m, a, "conv1");
  EXPECT_EQ(&g, &group_of(b.m, a, "se_expand"));
  const ChannelGroup& r = group_of(b.m, a, "se_reduce");
  ASSERT_TRUE(g.prunable && r.prunable);
  const Model pruned = prune_channels(b.m, a, all_but(a, {{g.id, {5}}, {r.id, {1}}}));
  EXPECT_EQ(const_shape(pruned, "se_reduce_w"), (Shape{3, 7, 1, 1}));
  EXPECT_EQ(const_shape(pruned, "se_expand_w"), (Shape{7, 3, 1, 1}));
  EXPECT_EQ(const_shape(pruned, "conv2_w"), (Shape{4, 7, 3, 3}));
  expect_same_outputs(b.m, pruned, random_input({1, 3, 6, 6}));
}

TEST(ChannelPrune, UnsupportedPatternsAreReportedAndRefused) {
  Builder b;
  b.input("x", {1, 4, 5, 5});
  b.conv("conv1", "x", "a", 4, 8).node("Softmax", "sm", {"a"}, {"as"}, {{"axis", int64_t{1}}});
  b.conv("grouped", "as", "g", 8, 8, 3, 2);  // grouped, not depthwise
  b.conv("conv3", "g", "c3", 8, 8).node("Shape", "shape", {"c3"}, {"s"});
  b.conv("conv4", "c3", "y", 8, 4).output("y").output("s");
  const ChannelAnalysis a = analyze_channels(b.m.graph);
  EXPECT_EQ(a.prunable_count(), 0);
  const auto has_reason = [&](const std::string& node, const std::string& text) {
    for (const std::string& r : group_of(b.m, a, node).reasons)
      if (r.find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has_reason("conv1", "Softmax"));
  const auto& grouped_reasons = group_at(b, a, "g").reasons;
  EXPECT_NE(grouped_reasons.at(0).find("grouped convolution"), std::string::npos);
  EXPECT_TRUE(has_reason("conv3", "Shape"));
  EXPECT_TRUE(has_reason("conv4", "graph output"));
  const std::string report = describe_groups(b.m.graph, a);
  EXPECT_NE(report.find("NOT prunable"), std::string::npos);
  EXPECT_THROW(prune_channels(b.m, a, all_but(a, {{group_of(b.m, a, "conv1").id, {0}}})), Error);
}

TEST(ChannelImportance, NormsAndBatchNormGammaRankChannels) {
  Builder b;
  b.input("x", {1, 2, 4, 4});
  b.conv("conv1", "x", "c", 2, 4, 1).bn("bn1", "c", "cb", 4).node("Relu", "r", {"cb"}, {"cr"});
  b.conv("conv2", "cr", "d", 4, 4, 1).node("Relu", "r2", {"d"}, {"dr"});  // no BatchNorm
  b.conv("conv3", "dr", "y", 4, 2, 1).output("y");
  float* w = b.data("conv1_w").data<float>();  // [4,2,1,1]: channel norms 0.1, 3, 1, 2
  const float rows[4][2] = {{0.1f, 0.0f}, {3.0f, 0.0f}, {0.0f, -1.0f}, {-2.0f, 0.0f}};
  for (int c = 0; c < 4; ++c) w[c * 2] = rows[c][0], w[c * 2 + 1] = rows[c][1];
  float* gamma = b.data("bn1_scale").data<float>();
  gamma[0] = 5, gamma[1] = 0.1f, gamma[2] = -4, gamma[3] = 1;
  const ChannelAnalysis a = analyze_channels(b.m.graph);
  const int g = group_of(b.m, a, "conv1").id;
  KeepCounts keep = keep_all(a);
  keep[static_cast<size_t>(g)] = 2;
  const ImportanceScores l1 = weight_importance(b.m.graph, a, Importance::kL1);
  EXPECT_EQ(select_channels(a, l1, keep)[static_cast<size_t>(g)], (std::vector<int64_t>{1, 3}));
  const ImportanceScores l2 = weight_importance(b.m.graph, a, Importance::kL2);
  EXPECT_EQ(select_channels(a, l2, keep)[static_cast<size_t>(g)], (std::vector<int64_t>{1, 3}));
  const ImportanceScores bn = weight_importance(b.m.graph, a, Importance::kBnGamma);
  EXPECT_EQ(select_channels(a, bn, keep)[static_cast<size_t>(g)], (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(bn.fallbacks, 1);  // conv2's group has no BatchNorm: scored by L1
  EXPECT_EQ(parse_importance("bn"), Importance::kBnGamma);
  EXPECT_THROW(parse_importance("l3"), Error);
}

TEST(ChannelPrune, RoundKeepHonoursTheMultiple) {
  EXPECT_EQ(round_keep(64, 0.5, 8), 32);
  EXPECT_EQ(round_keep(64, 0.45, 8), 32);  // 28.8 -> nearest multiple of 8
  EXPECT_EQ(round_keep(64, 0.05, 8), 8);   // at least one multiple
  EXPECT_EQ(round_keep(6, 0.1, 8), 6);     // fewer channels than the multiple: kept whole
  EXPECT_EQ(round_keep(10, 0.35, 1), 4);
  EXPECT_EQ(round_keep(10, 0.0, 1), 1);
}

// A plain CNN: three prunable groups of different sizes, a classifier head.
Model small_cnn() {
  Builder b;
  b.input("x", {4, 3, 12, 12});
  b.conv("conv1", "x", "c1", 3, 16).bn("bn1", "c1", "b1", 16).node("Relu", "r1", {"b1"}, {"a1"});
  b.conv("conv2", "a1", "c2", 16, 32).bn("bn2", "c2", "b2", 32).node("Relu", "r2", {"b2"}, {"a2"});
  b.node("MaxPool", "pool", {"a2"}, {"p2"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  b.conv("conv3", "p2", "c3", 32, 24).bn("bn3", "c3", "b3", 24).node("Relu", "r3", {"b3"}, {"a3"});
  b.node("GlobalAveragePool", "gap", {"a3"}, {"g"}).node("Flatten", "flat", {"g"}, {"f"}, {{"axis", int64_t{1}}});
  b.random("fc_w", {10, 24}).random("fc_b", {10});
  b.node("Gemm", "fc", {"f", "fc_w", "fc_b"}, {"y"}, {{"transB", int64_t{1}}}).output("y");
  return b.m;
}

CalibrationData random_batches(int n) {
  CalibrationData d;
  for (int i = 0; i < n; ++i) {
    d.batches.push_back({{"x", random_input({4, 3, 12, 12}, 100 + i)}});
    d.labels.push_back({0, 1, 2, 3});
  }
  return d;
}

TEST(RatioSearch, MeetsTheFlopsTargetAndTheCostModelIsExact) {
  const Model m = small_cnn();
  const ChannelAnalysis a = analyze_channels(m.graph);
  ASSERT_EQ(a.prunable_count(), 3);
  const ImportanceScores scores = weight_importance(m.graph, a, Importance::kL1);
  SensitivityOptions so;
  so.round_to = 4;
  const SensitivityResult sens = sensitivity_scan(m, a, scores, random_batches(2), so);
  ASSERT_EQ(sens.groups.size(), 3u);
  EXPECT_GE(sens.base_accuracy, 0.0);
  for (const GroupSensitivity& g : sens.groups) {
    ASSERT_EQ(g.damage.size(), so.fractions.size());
    ASSERT_EQ(g.accuracy.size(), so.fractions.size());
    EXPECT_GT(g.damage.back(), 0.0);  // pruning 90% of a group changes the logits
  }
  const ChannelCostModel cost(m.graph, a);
  const double base_macs = estimate_graph_cost(m.graph).total.macs;
  EXPECT_NEAR(cost.base_macs(), base_macs, 1e-6 * base_macs);

  for (double ratio : {0.5, 0.3}) {
    RatioSearchOptions ro;
    ro.ratio = ratio;
    ro.round_to = 4;
    const RatioSearchResult r = search_ratios(a, cost, sens, ro);
    ASSERT_TRUE(r.met) << ratio;
    const Model pruned = prune_to_counts(m, a, scores, r.keep);
    const double macs = estimate_graph_cost(pruned.graph).total.macs;
    EXPECT_NEAR(macs, cost.macs(r.keep), 1e-6 * base_macs);  // analytic == measured
    EXPECT_NEAR(static_cast<double>(pruned.graph.parameter_count()), cost.params(r.keep), 0.5);
    EXPECT_LE(macs, ratio * base_macs);
    EXPECT_GE(macs, (ratio - 0.07) * base_macs);  // refilled to within one round_to step
    for (size_t g = 0; g < r.keep.size(); ++g) EXPECT_EQ(r.keep[g] % 4 == 0 || r.keep[g] == a.groups[g].channels, true);
    EXPECT_EQ(run(pruned, random_input({4, 3, 12, 12})).at(0).shape(), (Shape{4, 10}));
  }
}

TEST(RatioSearch, ParamsTargetAndCustomCostFunction) {
  const Model m = small_cnn();
  const ChannelAnalysis a = analyze_channels(m.graph);
  const ImportanceScores scores = weight_importance(m.graph, a, Importance::kBnGamma);
  SensitivityOptions so;
  so.round_to = 1;
  so.fractions = {0.25, 0.5, 0.75};
  const SensitivityResult sens = sensitivity_scan(m, a, scores, random_batches(1), so);
  const ChannelCostModel cost(m.graph, a);
  RatioSearchOptions ro;
  ro.target = CostTarget::kParams;
  ro.ratio = 0.6;
  const RatioSearchResult r = search_ratios(a, cost, sens, ro);
  ASSERT_TRUE(r.met);
  const Model pruned = prune_to_counts(m, a, scores, r.keep);
  EXPECT_LE(static_cast<double>(pruned.graph.parameter_count()), 0.6 * static_cast<double>(m.graph.parameter_count()));

  // A custom cost (as a latency callable would be): total channels kept.
  RatioSearchOptions custom;
  custom.ratio = 0.5;
  int calls = 0;
  custom.cost = [&](const KeepCounts& k) {
    ++calls;
    double s = 0;
    for (size_t g = 0; g < k.size(); ++g) s += a.groups[g].prunable ? static_cast<double>(k[g]) : 0.0;
    return s;
  };
  const RatioSearchResult rc = search_ratios(a, cost, sens, custom);
  EXPECT_TRUE(rc.met);
  EXPECT_GT(calls, 1);
  EXPECT_LE(rc.cost, 0.5 * rc.base_cost);

  // Ranking by another cost (as a latency prediction would): a rank cost that only counts the
  // first group makes the search take the FLOPs from it first.
  RatioSearchOptions ranked;
  ranked.ratio = 0.8;
  ranked.round_to = 1;
  const int first = group_of(m, a, "conv1").id;
  ranked.rank_cost = [&](const KeepCounts& k) { return static_cast<double>(k[static_cast<size_t>(first)]); };
  const RatioSearchResult rr = search_ratios(a, cost, sens, ranked);
  EXPECT_TRUE(rr.met);
  EXPECT_LT(rr.keep[static_cast<size_t>(first)], a.groups[static_cast<size_t>(first)].channels);
  std::vector<double> per_node(m.graph.nodes.size(), 0.0);
  per_node[0] = 1.0;  // conv1 alone
  EXPECT_DOUBLE_EQ(cost.weighted(per_node, rr.keep),
                   static_cast<double>(rr.keep[static_cast<size_t>(first)]) / a.groups[static_cast<size_t>(first)].channels);

  // An unreachable target is reported, not faked.
  RatioSearchOptions tiny;
  tiny.ratio = 0.01;
  tiny.max_fraction = 0.5;
  EXPECT_FALSE(search_ratios(a, cost, sens, tiny).met);
  EXPECT_THROW(sensitivity_scan(m, a, scores, CalibrationData{}, so), Error);
}

// Taylor importance is |sum a * dL/da| per channel: check it against a central difference of the
// loss when channel c's output is scaled by (1 +- eps) (its filter and bias scaled).
TEST(ChannelImportance, TaylorMatchesAFiniteDifferenceOfTheLoss) {
  Builder b;
  b.input("x", {4, 3, 6, 6});
  b.conv("conv1", "x", "c1", 3, 6).node("Relu", "r1", {"c1"}, {"a1"});
  b.node("GlobalAveragePool", "gap", {"a1"}, {"g"}).node("Flatten", "flat", {"g"}, {"f"}, {{"axis", int64_t{1}}});
  b.random("fc_w", {5, 6}).random("fc_b", {5});
  b.node("Gemm", "fc", {"f", "fc_w", "fc_b"}, {"y"}, {{"transB", int64_t{1}}}).output("y");
  b.silence("conv1", 2);
  const Model m = b.m;
  const ChannelAnalysis a = analyze_channels(m.graph);
  CalibrationData data;
  data.batches.push_back({{"x", random_input({4, 3, 6, 6}, 5)}});
  data.labels.push_back({0, 1, 2, 4});
  const ImportanceScores t = taylor_importance(m, a, data);
  const int g = group_of(m, a, "conv1").id;
  const std::vector<double>& score = t.per_group[static_cast<size_t>(g)];
  ASSERT_EQ(score.size(), 6u);
  EXPECT_EQ(score[2], 0.0);  // a silent channel cannot matter
  const Tensor labels = Tensor::from_vector<int64_t>(data.labels[0], {4});
  const auto loss_scaled = [&](int64_t c, float factor) {
    auto copy = std::make_shared<Model>(m);
    for (Value& v : copy->graph.values)
      if (v.data) v.data = v.data->clone();
    for (const char* name : {"conv1_w", "conv1_b"}) {
      Tensor& w = *copy->graph.value(copy->graph.find_value(name)).data;
      const int64_t row = w.numel() / w.dim(0);
      for (int64_t i = c * row; i < (c + 1) * row; ++i) w.data<float>()[i] *= factor;
    }
    train::TrainingSession s(copy);
    return static_cast<double>(s.training_loss(data.batches[0].at("x"), labels));
  };
  const float eps = 1e-2f;
  for (int64_t c : {0, 1, 3, 4, 5}) {
    const double fd = (loss_scaled(c, 1 + eps) - loss_scaled(c, 1 - eps)) / (2 * eps);
    EXPECT_NEAR(score[static_cast<size_t>(c)], std::fabs(fd), 1e-5 + 0.01 * std::fabs(fd)) << "channel " << c << " fd " << fd;
    EXPECT_GT(std::fabs(fd), 1e-4);
  }
  // The model itself is untouched (training-mode statistics went to a copy).
  EXPECT_EQ(m.graph.value(m.graph.find_value("conv1_w")).data->data<float>()[0],
            b.m.graph.value(b.m.graph.find_value("conv1_w")).data->data<float>()[0]);
}

}  // namespace
}  // namespace xnn::channel
