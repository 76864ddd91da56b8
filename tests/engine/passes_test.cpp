// Tests for the graph passes (engine/passes/) on small hand-built graphs: what each pass
// rewrites and, as important, what it must leave alone (multi-consumer outputs, graph outputs,
// non-constant parameters, broadcasting Adds, convs that already have an activation). Every
// rewrite is checked for numeric equivalence: the graph before and after, both run through
// xnn::Session without further optimisation, agree to 1e-5 relative. The torchvision fixtures,
// when present, are optimised at level 2 and checked the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/format/xnn_format.h"
#include "engine/onnx/onnx_import.h"
#include "engine/passes/eliminate_dead_code.h"
#include "engine/passes/fold_batchnorm.h"
#include "engine/passes/fuse_activation.h"
#include "engine/passes/fuse_residual_add.h"
#include "engine/passes/optimize.h"
#include "engine/passes/remove_identity.h"
#include "engine/runtime/fold_constants.h"
#include "engine/runtime/npy.h"
#include "engine/runtime/session.h"

namespace xnn {
namespace {

using Attrs = std::map<std::string, Attribute>;

Tensor random_tensor(std::mt19937& rng, Shape shape, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(DType::kF32, std::move(shape));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Builds graphs by value name: inputs, constants, nodes (their outputs are created on first
// mention), outputs.
class Builder {
 public:
  Builder() : rng_(7) {}

  Builder& input(const std::string& name, Shape shape, DType dtype = DType::kF32) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    v.has_shape = true;
    for (int64_t d : shape) v.shape.push_back(Dim::fixed(d));
    g.inputs.push_back(g.add_value(std::move(v)));
    return *this;
  }
  Builder& constant(const std::string& name, Tensor t) {
    g.add_constant(name, std::move(t));
    return *this;
  }
  Builder& random(const std::string& name, Shape shape, float lo = -1.0f, float hi = 1.0f) {
    return constant(name, random_tensor(rng_, std::move(shape), lo, hi));
  }
  // BatchNormalization parameters name_{scale,bias,mean,var} for `c` channels.
  Builder& bn_params(const std::string& name, int64_t c) {
    random(name + "_scale", {c}, 0.5f, 1.5f);
    random(name + "_bias", {c});
    random(name + "_mean", {c});
    return random(name + "_var", {c}, 0.2f, 2.0f);
  }
  Builder& node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                const std::vector<std::string>& outputs, Attrs attrs = {}, const std::string& domain = "") {
    Node n;
    n.op_type = op;
    n.name = name;
    n.domain = domain;
    n.attrs = std::move(attrs);
    for (const std::string& i : inputs) n.inputs.push_back(i.empty() ? -1 : value(i));
    for (const std::string& o : outputs) {
      if (o.empty()) {
        n.outputs.push_back(-1);
        continue;
      }
      int v = g.find_value(o);
      if (v < 0) {
        Value val;
        val.name = o;
        v = g.add_value(std::move(val));
      }
      n.outputs.push_back(v);
    }
    g.nodes.push_back(std::move(n));
    return *this;
  }
  Builder& bn(const std::string& name, const std::string& x, const std::string& y, int64_t c) {
    bn_params(name, c);
    return node("BatchNormalization", name, {x, name + "_scale", name + "_bias", name + "_mean", name + "_var"}, {y},
                {{"epsilon", 1e-3f}});
  }
  Builder& output(const std::string& name) {
    g.outputs.push_back(value(name));
    return *this;
  }
  int value(const std::string& name) const {
    const int v = g.find_value(name);
    if (v < 0) throw Error("test graph has no value '" + name + "'");
    return v;
  }
  // Valid, sorted, with static shapes recorded on intermediates (as the pipeline's constant
  // folding does before the pattern passes).
  Graph prepared() {
    Graph copy = g;
    copy.validate("test graph");
    fold_constants(copy);
    return copy;
  }

  Graph g;

 private:
  std::mt19937 rng_;
};

int count_ops(const Graph& g, const std::string& op) {
  return static_cast<int>(
      std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op_type == op; }));
}

const Node* find_node(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

std::vector<std::string> output_names(const Graph& g) {
  std::vector<std::string> names;
  for (int o : g.outputs) names.push_back(g.value(o).name);
  return names;
}

// Runs `g` as it is (no optimisation, reference kernels).
std::vector<Tensor> run_graph(const Graph& g, const std::map<std::string, Tensor>& inputs) {
  auto model = std::make_shared<Model>();
  model->graph = g;
  SessionOptions opt;
  opt.opt_level = 0;
  opt.cpu_kernels = false;
  Session s(model, opt);
  return s.run(inputs);
}

std::map<std::string, Tensor> random_inputs(const Graph& g, uint32_t seed = 11) {
  std::mt19937 rng(seed);
  std::map<std::string, Tensor> in;
  for (int i : g.inputs) in[g.value(i).name] = random_tensor(rng, g.value(i).static_shape(), -2.0f, 2.0f);
  return in;
}

// Max |after - before| over max |before|, over all outputs.
double relative_difference(const std::vector<Tensor>& before, const std::vector<Tensor>& after) {
  double max_abs = 0, max_diff = 0;
  for (size_t k = 0; k < before.size(); ++k) {
    EXPECT_EQ(shape_str(before[k].shape()), shape_str(after[k].shape())) << "output " << k;
    if (before[k].shape() != after[k].shape()) return 1e30;
    for (int64_t i = 0; i < before[k].numel(); ++i) {
      const double b = before[k].data<float>()[i], a = after[k].data<float>()[i];
      max_abs = std::max(max_abs, std::fabs(b));
      max_diff = std::max(max_diff, std::fabs(a - b));
    }
  }
  return max_diff / std::max(max_abs, 1e-30);
}

// The optimised graph is valid, sorted, keeps the output names and computes the same outputs.
void expect_equivalent(const Graph& before, const Graph& after, uint32_t seed = 11) {
  ASSERT_NO_THROW(after.validate("optimised"));
  EXPECT_EQ(output_names(before), output_names(after));
  const std::map<std::string, Tensor> in = random_inputs(before, seed);
  EXPECT_LE(relative_difference(run_graph(before, in), run_graph(after, in)), 1e-5);
}

Attrs pads1() { return {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}; }

// ---- remove_identity -------------------------------------------------------------------------

TEST(PassRemoveIdentity, RewiresConsumersAndDropsIdentityAndDropout) {
  Builder b;
  b.input("x", {1, 4}).random("w", {4, 3});
  b.node("Identity", "id1", {"x"}, {"x1"});
  b.node("Dropout", "drop", {"x1"}, {"x2"}, {{"ratio", 0.5f}});
  b.node("Gemm", "fc", {"x2", "w"}, {"y"});
  b.node("Identity", "id2", {"y"}, {"y1"});
  b.node("Relu", "relu", {"y1"}, {"out"}).output("out");
  Graph g = b.prepared();
  EXPECT_EQ(remove_identity(g), 3);
  EXPECT_EQ(count_ops(g, "Identity") + count_ops(g, "Dropout"), 0);
  EXPECT_EQ(g.value(find_node(g, "fc")->inputs[0]).name, "x");
  EXPECT_EQ(g.value(find_node(g, "relu")->inputs[0]).name, "y");
  expect_equivalent(b.g, g);
}

TEST(PassRemoveIdentity, KeepsGraphOutputNames) {
  Builder b;
  b.input("x", {2, 3});
  b.node("Relu", "relu", {"x"}, {"r"});
  b.node("Identity", "id", {"r"}, {"out"});
  b.node("Neg", "neg", {"r"}, {"other"}).output("out").output("other");
  Graph g = b.prepared();
  EXPECT_EQ(remove_identity(g), 1);
  // The Relu now produces the graph output itself; its other reader follows.
  EXPECT_EQ(g.value(find_node(g, "relu")->outputs[0]).name, "out");
  EXPECT_EQ(g.value(find_node(g, "neg")->inputs[0]).name, "out");
  expect_equivalent(b.g, g);
}

TEST(PassRemoveIdentity, KeepsWhatItMustNotRemove) {
  Builder b;
  b.input("x", {2, 3}).constant("train", Tensor::scalar<bool>(true)).input("mode", {}, DType::kBool);
  b.node("Identity", "in_to_out", {"x"}, {"out0"});                          // graph input -> graph output
  b.node("Relu", "relu", {"x"}, {"r"});
  b.node("Identity", "dup", {"r"}, {"out1"});                                // r is itself a graph output
  b.node("Dropout", "mask_used", {"r"}, {"d1", "mask"});                      // its mask is read
  b.node("Not", "use_mask", {"mask"}, {"out2"});
  b.node("Dropout", "training", {"r", "", "train"}, {"d2"});                 // training_mode true
  b.node("Dropout", "dynamic_mode", {"r", "", "mode"}, {"d3"});              // training_mode not constant
  b.node("Sum", "sum", {"d1", "d2", "d3"}, {"out3"});
  b.output("out0").output("out1").output("r").output("out2").output("out3");
  Graph g = b.g;
  g.validate("test");
  EXPECT_EQ(remove_identity(g), 0);
  EXPECT_EQ(g.nodes.size(), b.g.nodes.size());
}

TEST(PassRemoveIdentity, DropoutWithConstantFalseTrainingModeAndUnusedMask) {
  Builder b;
  b.input("x", {2, 3}).constant("ratio", Tensor::scalar<float>(0.3f)).constant("off", Tensor::scalar<bool>(false));
  b.node("Dropout", "drop", {"x", "ratio", "off"}, {"d", "mask"});
  b.node("Relu", "relu", {"d"}, {"out"}).output("out");
  Graph g = b.prepared();
  EXPECT_EQ(remove_identity(g), 1);
  EXPECT_EQ(count_ops(g, "Dropout"), 0);
  eliminate_dead_code(g);
  EXPECT_EQ(g.find_value("mask"), -1);
  expect_equivalent(b.g, g);
}

// ---- fold_batchnorm --------------------------------------------------------------------------

TEST(PassFoldBatchNorm, FoldsIntoConvWithAndWithoutBias) {
  for (bool bias : {true, false}) {
    Builder b;
    b.input("x", {1, 3, 6, 6}).random("w", {4, 3, 3, 3}).random("b", {4});
    b.node("Conv", "conv", bias ? std::vector<std::string>{"x", "w", "b"} : std::vector<std::string>{"x", "w"}, {"c"},
           pads1());
    b.bn("bn", "c", "y", 4).output("y");
    Graph g = b.prepared();
    const Tensor w_before = g.value(g.find_value("w")).data->clone();
    g.values.shrink_to_fit();  // the new constants reallocate the value list: nothing may dangle
    EXPECT_EQ(fold_batchnorm(g), 1) << "bias " << bias;
    EXPECT_EQ(count_ops(g, "BatchNormalization"), 0);
    const Node* conv = find_node(g, "conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(g.value(conv->outputs[0]).name, "y");  // the BN's output (a graph output) survives
    EXPECT_NE(g.value(conv->inputs[1]).name, "w");   // new constants, the old one untouched
    const Tensor& w_after = *g.value(g.find_value("w")).data;
    EXPECT_EQ(std::memcmp(w_after.raw(), w_before.raw(), w_before.nbytes()), 0);
    expect_equivalent(b.g, g);
    const DeadCodeStats dead = eliminate_dead_code(g);
    EXPECT_GE(dead.values, 6);  // w (and b), BN parameters, the conv's old output
    expect_equivalent(b.g, g);
  }
}

TEST(PassFoldBatchNorm, SharedWeightsAreNotMutated) {
  Builder b;
  b.input("x", {1, 2, 5, 5}).random("w", {2, 2, 3, 3});
  b.node("Conv", "conv_a", {"x", "w"}, {"a"}, pads1());
  b.bn("bn", "a", "a_bn", 2);
  b.node("Conv", "conv_b", {"a_bn", "w"}, {"y"}, pads1()).output("y");
  Graph g = b.prepared();
  EXPECT_EQ(fold_batchnorm(g), 1);
  EXPECT_EQ(g.value(find_node(g, "conv_b")->inputs[1]).name, "w");
  expect_equivalent(b.g, g);
}

TEST(PassFoldBatchNorm, FoldsIntoGemm) {
  struct Case {
    bool trans_b;
    Shape c;  // empty: no C
    float alpha, beta;
  };
  for (const Case& c : {Case{false, {}, 1.0f, 1.0f}, Case{true, {5}, 0.5f, 2.0f}, Case{false, {3, 5}, 1.0f, 0.5f},
                        Case{true, {1, 5}, 1.5f, 0.0f}, Case{false, {3, 1}, 1.0f, 1.0f}}) {
    Builder b;
    b.input("x", {3, 4}).random("w", c.trans_b ? Shape{5, 4} : Shape{4, 5});
    std::vector<std::string> ins = {"x", "w"};
    if (!c.c.empty()) {
      b.random("c", c.c);
      ins.push_back("c");
    }
    b.node("Gemm", "fc", ins, {"f"}, {{"transB", int64_t{c.trans_b}}, {"alpha", c.alpha}, {"beta", c.beta}});
    b.bn("bn", "f", "y", 5).output("y");
    Graph g = b.prepared();
    g.values.shrink_to_fit();
    EXPECT_EQ(fold_batchnorm(g), 1) << "transB " << c.trans_b << " C " << shape_str(c.c);
    EXPECT_EQ(count_ops(g, "BatchNormalization"), 0);
    expect_equivalent(b.g, g);
  }
}

TEST(PassFoldBatchNorm, DoesNotFoldWhatItMustNot) {
  Builder b;
  b.input("x", {1, 2, 4, 4}).input("mean", {2}).random("w", {2, 2, 1, 1});
  // 1: the conv output has a second reader.
  b.node("Conv", "conv1", {"x", "w"}, {"c1"});
  b.bn("bn1", "c1", "y1", 2);
  b.node("Relu", "other_reader", {"c1"}, {"y1b"});
  // 2: the conv output is a graph output.
  b.node("Conv", "conv2", {"x", "w"}, {"c2"});
  b.bn("bn2", "c2", "y2", 2);
  // 3: a BN parameter is not constant.
  b.node("Conv", "conv3", {"x", "w"}, {"c3"});
  b.bn_params("bn3", 2);
  b.node("BatchNormalization", "bn3", {"c3", "bn3_scale", "bn3_bias", "mean", "bn3_var"}, {"y3"});
  // 4: the conv already has an activation.
  b.node("FusedConv", "conv4", {"x", "w"}, {"c4"}, {{"activation", std::string("Relu")}}, "ai.xnn");
  b.bn("bn4", "c4", "y4", 2);
  // 5: training mode.
  b.node("Conv", "conv5", {"x", "w"}, {"c5"});
  b.bn("bn5", "c5", "y5", 2);
  b.g.nodes.back().attrs["training_mode"] = int64_t{1};
  Value running_mean;
  running_mean.name = "running_mean";
  b.g.nodes.back().outputs.push_back(b.g.add_value(running_mean));
  // 6: the producer is not a conv / gemm.
  b.node("Relu", "relu6", {"x"}, {"c6"});
  b.bn("bn6", "c6", "y6", 2);
  // 7: a FusedConv with Z.
  b.node("FusedConv", "conv7", {"x", "w", "", "x"}, {"c7"}, {}, "ai.xnn");
  b.bn("bn7", "c7", "y7", 2);
  for (const char* o : {"y1", "y1b", "c2", "y2", "y3", "y4", "y5", "y6", "y7"}) b.output(o);
  Graph g = b.prepared();
  EXPECT_EQ(fold_batchnorm(g), 0);
  EXPECT_EQ(count_ops(g, "BatchNormalization"), 7);
}

TEST(PassFoldBatchNorm, FusedConvWithoutActivationOrZFolds) {
  Builder b;
  b.input("x", {1, 3, 5, 5}).random("w", {4, 3, 3, 3}).random("b", {4});
  b.node("FusedConv", "conv", {"x", "w", "b"}, {"c"}, {{"activation", std::string("")}}, "ai.xnn");
  b.bn("bn", "c", "y", 4).output("y");
  Graph g = b.prepared();
  EXPECT_EQ(fold_batchnorm(g), 1);
  expect_equivalent(b.g, g);
}

// ---- fuse_activation -------------------------------------------------------------------------

struct ActivationPattern {
  std::string op;
  Attrs attrs;
  std::vector<float> clip;  // Clip: min, max constants (NaN: absent)
  std::string fused;        // expected `activation`
};

TEST(PassFuseActivation, FusesEachActivationIntoConvAndGemm) {
  const float none = std::nanf("");
  const std::vector<ActivationPattern> patterns = {
      {"Relu", {}, {}, "Relu"},
      {"Clip", {}, {0.0f, 6.0f}, "Clip"},
      {"Clip", {}, {-0.25f, none}, "Clip"},
      {"Clip", {}, {none, none}, "Clip"},
      {"LeakyRelu", {{"alpha", 0.2f}}, {}, "LeakyRelu"},
      {"LeakyRelu", {}, {}, "LeakyRelu"},
      {"HardSwish", {}, {}, "HardSwish"},
      {"HardSigmoid", {{"alpha", 0.25f}, {"beta", 0.4f}}, {}, "HardSigmoid"},
      {"Sigmoid", {}, {}, "Sigmoid"},
  };
  for (const ActivationPattern& p : patterns) {
    for (bool gemm : {false, true}) {
      Builder b;
      if (gemm) {
        b.input("x", {2, 6}).random("w", {3, 6}).random("b", {3});
        b.node("Gemm", "producer", {"x", "w", "b"}, {"c"}, {{"transB", int64_t{1}}});
      } else {
        b.input("x", {1, 2, 5, 5}).random("w", {3, 2, 3, 3}).random("b", {3});
        b.node("Conv", "producer", {"x", "w", "b"}, {"c"}, pads1());
      }
      std::vector<std::string> ins = {"c"};
      if (!p.clip.empty()) {
        for (size_t i = 0; i < 2; ++i) {
          if (std::isnan(p.clip[i])) {
            ins.push_back("");
            continue;
          }
          b.constant(i == 0 ? "lo" : "hi", Tensor::scalar<float>(p.clip[i]));
          ins.push_back(i == 0 ? "lo" : "hi");
        }
        while (!ins.empty() && ins.back().empty()) ins.pop_back();
      }
      b.node(p.op, "act", ins, {"y"}, p.attrs).output("y");
      Graph g = b.prepared();
      const std::string what = p.op + (gemm ? " after Gemm" : " after Conv");
      EXPECT_EQ(fuse_activation(g), 1) << what;
      ASSERT_EQ(g.nodes.size(), 1u) << what;
      const Node& n = g.nodes[0];
      EXPECT_EQ(n.name, "producer");
      EXPECT_EQ(n.op_type, gemm ? "FusedGemm" : "FusedConv");
      EXPECT_EQ(n.domain, "ai.xnn");
      EXPECT_EQ(n.attr_string("activation", "?"), p.fused) << what;
      EXPECT_EQ(g.value(n.outputs[0]).name, "y");
      expect_equivalent(b.g, g);
    }
  }
}

TEST(PassFuseActivation, SiluAndHardSwishWrittenOut) {
  struct Gate {
    std::string op;
    Attrs attrs;
    std::string fused;
  };
  for (const Gate& gate : {Gate{"Sigmoid", {}, "Silu"},
                           Gate{"HardSigmoid", {{"alpha", 1.0f / 6.0f}, {"beta", 0.5f}}, "HardSwish"}}) {
    for (bool gate_first : {false, true}) {
      Builder b;
      b.input("x", {1, 2, 5, 5}).random("w", {3, 2, 3, 3});
      b.node("Conv", "conv", {"x", "w"}, {"c"}, pads1());
      b.node(gate.op, "gate", {"c"}, {"s"}, gate.attrs);
      b.node("Mul", "mul", gate_first ? std::vector<std::string>{"s", "c"} : std::vector<std::string>{"c", "s"},
             {"y"});
      b.output("y");
      Graph g = b.prepared();
      EXPECT_EQ(fuse_activation(g), 1) << gate.op;
      ASSERT_EQ(g.nodes.size(), 1u);
      EXPECT_EQ(g.nodes[0].attr_string("activation", "?"), gate.fused);
      expect_equivalent(b.g, g);
    }
  }
}

TEST(PassFuseActivation, DoesNotFuseWhatItMustNot) {
  Builder b;
  b.input("x", {1, 2, 4, 4}).input("lo", {}).random("w", {2, 2, 1, 1});
  b.constant("min", Tensor::scalar<float>(1.0f)).constant("max", Tensor::scalar<float>(-1.0f));
  // Conv output read twice.
  b.node("Conv", "conv1", {"x", "w"}, {"c1"});
  b.node("Relu", "relu1", {"c1"}, {"y1"});
  b.node("Neg", "neg1", {"c1"}, {"y1b"});
  // Conv output is a graph output.
  b.node("Conv", "conv2", {"x", "w"}, {"c2"});
  b.node("Relu", "relu2", {"c2"}, {"y2"});
  // Clip with a dynamic min, and Clip with min > max.
  b.node("Conv", "conv3", {"x", "w"}, {"c3"});
  b.node("Clip", "clip3", {"c3", "lo"}, {"y3"});
  b.node("Conv", "conv4", {"x", "w"}, {"c4"});
  b.node("Clip", "clip4", {"c4", "min", "max"}, {"y4"});
  // A conv that already has an activation: the second one stays.
  b.node("FusedConv", "conv5", {"x", "w"}, {"c5"}, {{"activation", std::string("Relu")}}, "ai.xnn");
  b.node("Sigmoid", "sig5", {"c5"}, {"y5"});
  // SiLU whose Sigmoid has another reader; a Mul of x by another value's sigmoid.
  b.node("Conv", "conv6", {"x", "w"}, {"c6"});
  b.node("Sigmoid", "sig6", {"c6"}, {"s6"});
  b.node("Mul", "mul6", {"c6", "s6"}, {"y6"});
  b.node("Conv", "conv7", {"x", "w"}, {"c7"});
  b.node("Sigmoid", "sig7", {"x"}, {"s7"});
  b.node("Mul", "mul7", {"c7", "s7"}, {"y7"});
  // HardSigmoid gate with other parameters than HardSwish's.
  b.node("Conv", "conv8", {"x", "w"}, {"c8"});
  b.node("HardSigmoid", "hs8", {"c8"}, {"s8"});
  b.node("Mul", "mul8", {"c8", "s8"}, {"y8"});
  // An activation of something that is not a conv or gemm.
  b.node("MaxPool", "pool9", {"x"}, {"c9"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}});
  b.node("Relu", "relu9", {"c9"}, {"y9"});
  for (const char* o : {"y1", "y1b", "c2", "y2", "y3", "y4", "y5", "s6", "y6", "y7", "y8", "y9"}) b.output(o);
  Graph g = b.prepared();
  const size_t nodes = g.nodes.size();
  EXPECT_EQ(fuse_activation(g), 0);
  EXPECT_EQ(g.nodes.size(), nodes);
  EXPECT_EQ(count_ops(g, "FusedConv"), 1);
}

TEST(PassFuseActivation, SkipsNonF32) {
  Builder b;
  b.input("x", {1, 2, 3, 3}, DType::kF64);
  Tensor w(DType::kF64, {2, 2, 1, 1});
  b.constant("w", w);
  b.node("Conv", "conv", {"x", "w"}, {"c"});
  b.node("Relu", "relu", {"c"}, {"y"}).output("y");
  Graph g = b.prepared();
  EXPECT_EQ(fuse_activation(g), 0);
}

// ---- fuse_residual_add -----------------------------------------------------------------------

TEST(PassFuseResidualAdd, ResNetBlockBecomesOneFusedConv) {
  // relu(bn(conv(relu(bn(conv(x))))) + x): the basic ResNet block.
  Builder b;
  b.input("x", {1, 4, 6, 6}).random("w1", {4, 4, 3, 3}).random("w2", {4, 4, 3, 3});
  b.node("Conv", "conv1", {"x", "w1"}, {"c1"}, pads1());
  b.bn("bn1", "c1", "n1", 4);
  b.node("Relu", "relu1", {"n1"}, {"r1"});
  b.node("Conv", "conv2", {"r1", "w2"}, {"c2"}, pads1());
  b.bn("bn2", "c2", "n2", 4);
  b.node("Add", "add", {"n2", "x"}, {"s"});
  b.node("Relu", "relu2", {"s"}, {"y"}).output("y");
  Graph g = b.prepared();
  EXPECT_EQ(fold_batchnorm(g), 2);
  EXPECT_EQ(fuse_residual_add(g), 1);
  EXPECT_EQ(fuse_activation(g), 2);
  eliminate_dead_code(g);
  ASSERT_EQ(g.nodes.size(), 2u);
  const Node* conv2 = find_node(g, "conv2");
  ASSERT_NE(conv2, nullptr);
  EXPECT_EQ(conv2->op_type, "FusedConv");
  EXPECT_EQ(conv2->attr_string("activation", ""), "Relu");
  ASSERT_EQ(conv2->inputs.size(), 4u);
  EXPECT_EQ(g.value(conv2->inputs[3]).name, "x");
  expect_equivalent(b.g, g);
}

TEST(PassFuseResidualAdd, BothOperandsConvsPicksTheEarlierZ) {
  // A downsampling block: Add(conv_main(...), conv_skip(x)), conv_skip computed first.
  Builder b;
  b.input("x", {1, 2, 6, 6}).random("ws", {4, 2, 1, 1}).random("wa", {4, 2, 3, 3}).random("wb", {4, 4, 3, 3});
  b.node("Conv", "conv_skip", {"x", "ws"}, {"skip"});
  b.node("Conv", "conv_a", {"x", "wa"}, {"a"}, pads1());
  b.node("Relu", "relu_a", {"a"}, {"ra"});
  b.node("Conv", "conv_main", {"ra", "wb"}, {"m"}, pads1());
  b.node("Add", "add", {"skip", "m"}, {"y"}).output("y");
  Graph g = b.prepared();
  EXPECT_EQ(fuse_residual_add(g), 1);
  const Node* fused = find_node(g, "conv_main");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->op_type, "FusedConv");
  EXPECT_EQ(g.value(fused->inputs[3]).name, "skip");
  EXPECT_EQ(find_node(g, "conv_skip")->op_type, "Conv");
  expect_equivalent(b.g, g);
}

TEST(PassFuseResidualAdd, MovesTheConvWhenZIsComputedLater) {
  // conv's output waits for z, which is computed after the conv: the fused node must move.
  Builder b;
  b.input("x", {1, 2, 5, 5}).random("w", {2, 2, 3, 3});
  b.node("Conv", "conv", {"x", "w"}, {"c"}, pads1());
  b.node("Sigmoid", "late", {"x"}, {"z"});
  b.node("Add", "add", {"c", "z"}, {"y"}).output("y");
  Graph g = b.prepared();
  EXPECT_EQ(fuse_residual_add(g), 1);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].name, "late");
  EXPECT_EQ(g.nodes[1].name, "conv");
  expect_equivalent(b.g, g);
}

TEST(PassFuseResidualAdd, DoesNotFuseWhatItMustNot) {
  Builder b;
  b.input("x", {1, 2, 4, 4}).input("bias", {1, 2, 1, 1}).random("w", {2, 2, 1, 1});
  // Broadcasting Add.
  b.node("Conv", "conv1", {"x", "w"}, {"c1"});
  b.node("Add", "add1", {"c1", "bias"}, {"y1"});
  // Conv with an activation already.
  b.node("FusedConv", "conv2", {"x", "w"}, {"c2"}, {{"activation", std::string("Relu")}}, "ai.xnn");
  b.node("Add", "add2", {"c2", "x"}, {"y2"});
  // Conv output with a second reader.
  b.node("Conv", "conv3", {"x", "w"}, {"c3"});
  b.node("Add", "add3", {"c3", "x"}, {"y3"});
  b.node("Neg", "neg3", {"c3"}, {"y3b"});
  // Conv output is a graph output.
  b.node("Conv", "conv4", {"x", "w"}, {"c4"});
  b.node("Add", "add4", {"c4", "x"}, {"y4"});
  // Conv that already has a Z.
  b.node("FusedConv", "conv5", {"x", "w", "", "x"}, {"c5"}, {}, "ai.xnn");
  b.node("Add", "add5", {"c5", "x"}, {"y5"});
  // Add(c, c).
  b.node("Conv", "conv6", {"x", "w"}, {"c6"});
  b.node("Add", "add6", {"c6", "c6"}, {"y6"});
  for (const char* o : {"y1", "y2", "y3", "y3b", "c4", "y4", "y5", "y6"}) b.output(o);
  Graph g = b.prepared();
  EXPECT_EQ(fuse_residual_add(g), 0);
  EXPECT_EQ(count_ops(g, "Add"), 6);
}

TEST(PassFuseResidualAdd, NeedsStaticShapes) {
  // Without shape propagation the intermediate shapes are unknown: no fusion.
  Builder b;
  b.input("x", {1, 2, 4, 4}).random("w", {2, 2, 1, 1});
  b.node("Conv", "conv", {"x", "w"}, {"c"});
  b.node("Add", "add", {"c", "x"}, {"y"}).output("y");
  Graph g = b.g;
  EXPECT_EQ(fuse_residual_add(g), 0);
  g = b.prepared();
  EXPECT_EQ(fuse_residual_add(g), 1);
}

// ---- eliminate_dead_code ---------------------------------------------------------------------

TEST(PassEliminateDeadCode, RemovesUnusedNodesAndValues) {
  Builder b;
  b.input("x", {2, 2}).input("unused_input", {3}).random("dead_w", {2, 2});
  b.node("Relu", "live", {"x"}, {"y"});
  b.node("MatMul", "dead1", {"x", "dead_w"}, {"d1"});
  b.node("Neg", "dead2", {"d1"}, {"d2"});
  b.output("y");
  Graph g = b.g;
  const DeadCodeStats s = eliminate_dead_code(g);
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.values, 3);  // dead_w, d1, d2
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.find_value("dead_w"), -1);
  EXPECT_NE(g.find_value("unused_input"), -1);  // the signature stays
  EXPECT_EQ(g.inputs.size(), 2u);
  EXPECT_NO_THROW(g.validate("after dce"));
  expect_equivalent(b.g, g);
}

TEST(PassEliminateDeadCode, KeepsValuesSubgraphsRead) {
  Builder b;
  b.input("x", {2}).input("cond", {}, DType::kBool);
  b.node("Neg", "feeds_subgraph", {"x"}, {"t"});
  auto branch = std::make_shared<Graph>();
  Value outer;
  outer.name = "t";
  outer.outer_scope = true;
  branch->outputs.push_back(branch->add_value(outer));
  b.node("If", "if", {"cond"}, {"y"}, {{"then_branch", branch}, {"else_branch", branch}});
  b.output("y");
  Graph g = b.g;
  EXPECT_EQ(eliminate_dead_code(g).nodes, 0);
  EXPECT_NE(find_node(g, "feeds_subgraph"), nullptr);
}

// ---- pipeline --------------------------------------------------------------------------------

// A small CNN with most patterns: Identity, Conv+BN+Relu, a residual block, a downsampling
// shortcut, Clip, SiLU, and a Dropout + Gemm + BN head.
Builder small_cnn() {
  Builder b;
  b.input("x", {2, 3, 8, 8});
  b.random("w0", {8, 3, 3, 3}).random("w1", {8, 8, 3, 3}).random("w2", {8, 8, 3, 3}).random("w3", {16, 8, 3, 3});
  b.random("w4", {16, 16, 3, 3}).random("wd", {16, 8, 1, 1}).random("w5", {16, 16, 1, 1}).random("fc", {10, 16});
  b.random("fc_b", {10});
  b.node("Identity", "in_id", {"x"}, {"x1"});
  b.node("Conv", "conv0", {"x1", "w0"}, {"c0"}, pads1());
  b.bn("bn0", "c0", "n0", 8);
  b.node("Relu", "relu0", {"n0"}, {"r0"});
  b.node("Conv", "conv1", {"r0", "w1"}, {"c1"}, pads1());
  b.bn("bn1", "c1", "n1", 8);
  b.constant("zero", Tensor::scalar<float>(0.0f)).constant("six", Tensor::scalar<float>(6.0f));
  b.node("Clip", "relu6", {"n1", "zero", "six"}, {"r1"});
  b.node("Conv", "conv2", {"r1", "w2"}, {"c2"}, pads1());
  b.bn("bn2", "c2", "n2", 8);
  b.node("Add", "add1", {"n2", "r0"}, {"s1"});
  b.node("Relu", "relu2", {"s1"}, {"r2"});
  Attrs down = pads1();
  down["strides"] = std::vector<int64_t>{2, 2};
  b.node("Conv", "conv3", {"r2", "w3"}, {"c3"}, down);
  b.bn("bn3", "c3", "n3", 16);
  b.node("Sigmoid", "silu_gate", {"n3"}, {"g3"});
  b.node("Mul", "silu", {"n3", "g3"}, {"r3"});
  b.node("Conv", "conv4", {"r3", "w4"}, {"c4"}, pads1());
  b.bn("bn4", "c4", "n4", 16);
  b.node("Conv", "down", {"r2", "wd"}, {"d"}, {{"strides", std::vector<int64_t>{2, 2}}});
  b.bn("bnd", "d", "nd", 16);
  b.node("Add", "add2", {"n4", "nd"}, {"s2"});
  b.node("Relu", "relu4", {"s2"}, {"r4"});
  b.node("Conv", "conv5", {"r4", "w5"}, {"c5"});
  b.node("HardSwish", "hswish", {"c5"}, {"r5"});
  b.node("GlobalAveragePool", "gap", {"r5"}, {"p"});
  b.node("Flatten", "flatten", {"p"}, {"f"});
  b.node("Dropout", "drop", {"f"}, {"fd"});
  b.node("Gemm", "head", {"fd", "fc", "fc_b"}, {"h"}, {{"transB", int64_t{1}}});
  b.bn("bnh", "h", "logits", 10);
  b.output("logits");
  return b;
}

TEST(PassOptimize, LevelsAndEquivalence) {
  Builder b = small_cnn();
  const Graph original = b.g;
  ASSERT_NO_THROW(original.validate("small cnn"));

  Graph g0 = original;
  const OptimizeStats s0 = optimize_graph(g0, 0);
  EXPECT_EQ(g0.nodes.size(), original.nodes.size());
  EXPECT_EQ(s0.nodes_after, s0.nodes_before);

  Graph g1 = original;
  const OptimizeStats s1 = optimize_graph(g1, 1);
  EXPECT_EQ(s1.identities_removed, 2);
  EXPECT_EQ(s1.batchnorms_folded, 7);
  EXPECT_EQ(count_ops(g1, "BatchNormalization"), 0);
  EXPECT_EQ(count_ops(g1, "FusedConv"), 0);
  EXPECT_GT(s1.dead_values_removed, 0);
  expect_equivalent(original, g1);

  Graph g2 = original;
  const OptimizeStats s2 = optimize_graph(g2, 2);
  EXPECT_EQ(s2.residual_adds_fused, 2);
  EXPECT_EQ(s2.activations_fused, 6);  // relu0, clip, relu2, silu, relu4, hardswish
  for (const char* op : {"BatchNormalization", "Relu", "Clip", "Add", "Mul", "Sigmoid", "HardSwish", "Identity",
                         "Dropout"}) {
    EXPECT_EQ(count_ops(g2, op), 0) << op;
  }
  EXPECT_EQ(count_ops(g2, "FusedConv"), 6);
  // add2 = conv4 + down: both qualify; the one computed first stays a Conv and becomes the
  // other's Z (which one depends on the topological order constant folding chooses).
  EXPECT_EQ(count_ops(g2, "Conv"), 1);
  EXPECT_EQ(s2.nodes_before, static_cast<int>(original.nodes.size()));
  EXPECT_EQ(s2.nodes_after, static_cast<int>(g2.nodes.size()));
  EXPECT_EQ(g2.nodes.size(), 10u);  // 7 convs, GlobalAveragePool, Flatten, Gemm
  // Node names survive: profiles stay readable.
  for (const char* name : {"conv0", "conv1", "conv2", "conv3", "conv4", "down", "conv5", "head"}) {
    EXPECT_NE(find_node(g2, name), nullptr) << name;
  }
  expect_equivalent(original, g2);

  const std::string text = describe(s2);
  EXPECT_NE(text.find("-O2"), std::string::npos) << text;
  EXPECT_NE(text.find("batchnorm 7"), std::string::npos) << text;
  EXPECT_NE(text.find("residual add 2"), std::string::npos) << text;
  EXPECT_NE(text.find("activation 6"), std::string::npos) << text;
  EXPECT_EQ(describe(s0), "optimize -O0: " + std::to_string(original.nodes.size()) + " -> " +
                              std::to_string(original.nodes.size()) + " nodes");
  EXPECT_THROW(optimize_graph(g0, -1), Error);

  // Optimising again changes nothing.
  Graph again = g2;
  const OptimizeStats s3 = optimize_graph(again, 2);
  EXPECT_EQ(s3.nodes_after, s3.nodes_before);
  EXPECT_EQ(s3.activations_fused + s3.residual_adds_fused + s3.batchnorms_folded, 0);
}

TEST(PassOptimize, FusedGraphSurvivesTheXnnRoundTrip) {
  Builder b = small_cnn();
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  optimize_graph(model->graph, 2);
  const std::string bytes = serialize_xnn(*model);
  const Model loaded = load_xnn_bytes(bytes.data(), bytes.size(), "optimised");
  ASSERT_EQ(loaded.graph.nodes.size(), model->graph.nodes.size());
  for (size_t k = 0; k < loaded.graph.nodes.size(); ++k) {
    const Node& a = loaded.graph.nodes[k];
    const Node& o = model->graph.nodes[k];
    EXPECT_EQ(a.domain, o.domain) << a.name;
    EXPECT_EQ(a.attr_string("activation", ""), o.attr_string("activation", "")) << a.name;
    EXPECT_EQ(a.attr_floats("activation_params"), o.attr_floats("activation_params")) << a.name;
  }
  const std::map<std::string, Tensor> in = random_inputs(b.g);
  EXPECT_LE(relative_difference(run_graph(b.g, in), run_graph(loaded.graph, in)), 1e-5);
}

TEST(PassOptimize, SessionRunsTheOptimisedGraph) {
  Builder b = small_cnn();
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  SessionOptions opt;
  opt.cpu_kernels = false;
  opt.opt_level = 2;
  Session s(model, opt);
  EXPECT_EQ(count_ops(s.optimized_graph(), "FusedConv"), 6);
  const std::map<std::string, Tensor> in = random_inputs(b.g);
  EXPECT_LE(relative_difference(run_graph(b.g, in), s.run(in)), 1e-5);
}

// ---- real models -----------------------------------------------------------------------------

std::filesystem::path source_root() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

TEST(PassOptimize, QuickstartModelWithSymbolicBatch) {
  // The committed Fashion-MNIST CNN: Conv (no bias) + BN + Relu blocks, batch dim symbolic, so
  // intermediate shapes are unknown at optimisation time.
  const std::filesystem::path path = source_root() / "configs/models/fmnist_cnn.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  const Model model = import_onnx_file(path.string());
  Graph g = model.graph;
  const OptimizeStats s = optimize_graph(g, 2);
  EXPECT_EQ(count_ops(g, "BatchNormalization"), 0) << describe(s);
  EXPECT_EQ(count_ops(g, "Relu"), 0) << describe(s);
  EXPECT_EQ(s.batchnorms_folded, count_ops(model.graph, "BatchNormalization"));
  const Value& x = model.graph.value(model.graph.inputs.at(0));
  Shape shape = {3};
  for (size_t d = 1; d < x.shape.size(); ++d) shape.push_back(x.shape[d].value);
  std::mt19937 rng(5);
  const std::map<std::string, Tensor> in = {{x.name, random_tensor(rng, shape)}};
  EXPECT_LE(relative_difference(run_graph(model.graph, in), run_graph(g, in)), 1e-5);
}

// ---- torchvision fixtures --------------------------------------------------------------------

std::string fixture_dir() {
  if (const char* d = std::getenv("XNN_TORCHVISION_FIXTURES")) return d;
  // The fixture step's default location in the main build folder.
  return (source_root() / "build/fixtures/torchvision").string();
}

std::map<std::string, int> op_histogram(const Graph& g) {
  std::map<std::string, int> h;
  for (const Node& n : g.nodes) ++h[n.op_type];
  return h;
}

class PassTorchvision : public ::testing::TestWithParam<const char*> {};

TEST_P(PassTorchvision, Level2KeepsOutputsAndFuses) {
  const std::string name = GetParam();
  const std::string dir = fixture_dir();
  const std::string onnx_path = dir + "/" + name + ".onnx", input_path = dir + "/" + name + ".input.npy";
  if (!std::filesystem::exists(onnx_path) || !std::filesystem::exists(input_path)) {
    GTEST_SKIP() << onnx_path << " not found (set XNN_TORCHVISION_FIXTURES or run the torchvision_fixtures test)";
  }
  const Model model = import_onnx_file(onnx_path);
  Graph optimised = model.graph;
  const OptimizeStats stats = optimize_graph(optimised, 2);
  const auto before = op_histogram(model.graph), after = op_histogram(optimised);
  auto count = [](const std::map<std::string, int>& h, const char* op) {
    auto it = h.find(op);
    return it == h.end() ? 0 : it->second;
  };
  std::printf("%s: %s\n", name.c_str(), describe(stats).c_str());
  for (const auto* h : {&before, &after}) {
    std::printf("  %s:", h == &before ? "before" : "after ");
    for (const auto& [op, n] : *h) std::printf(" %s %d", op.c_str(), n);
    std::printf("\n");
  }
  // Every BatchNormalization and every activation / residual Add that follows a conv is gone:
  // the passes reached their fixed point.
  EXPECT_EQ(count(after, "BatchNormalization"), 0);
  EXPECT_GT(count(after, "FusedConv"), 0);
  Graph again = optimised;
  EXPECT_EQ(fold_batchnorm(again) + fuse_residual_add(again) + fuse_activation(again), 0);
  if (name == "resnet18") {
    EXPECT_EQ(count(after, "Relu"), 0);
    EXPECT_EQ(count(after, "Add"), 0);
  }
  if (name == "mobilenet_v2") {
    EXPECT_EQ(count(after, "Clip"), 0);
    EXPECT_EQ(count(after, "Add"), 0);
  }
  if (name == "mobilenet_v3_small") {  // HardSwish is exported as x * HardSigmoid(x) at opset 13
    EXPECT_EQ(count(after, "Relu"), 0);
    EXPECT_EQ(count(after, "HardSigmoid"), 0);
    EXPECT_EQ(count(after, "Add"), 0);
  }
  if (name == "efficientnet_b0") {  // SiLU as x * Sigmoid(x); the squeeze-excite gates stay Muls
    EXPECT_EQ(count(after, "Sigmoid"), 0);
    EXPECT_EQ(count(after, "Add"), 0);
  }
  EXPECT_LT(optimised.nodes.size(), model.graph.nodes.size());

  const Tensor input = read_npy(input_path);
  const std::string in_name = model.graph.value(model.graph.inputs.at(0)).name;
  const std::map<std::string, Tensor> in = {{in_name, input}};
  const double diff = relative_difference(run_graph(model.graph, in), run_graph(optimised, in));
  EXPECT_LE(diff, 1e-5) << name;
  std::printf("  nodes %zu -> %zu, relative difference %.3g\n", model.graph.nodes.size(), optimised.nodes.size(),
              diff);
}

INSTANTIATE_TEST_SUITE_P(PassFixtures, PassTorchvision,
                         ::testing::Values("resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace xnn
