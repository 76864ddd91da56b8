// Gradient checks: for every op with a backward kernel, the analytic gradient of the training
// loss (softmax cross-entropy) with respect to each parameter agrees with central finite
// differences. Each case is a tiny graph: the op under test with its differentiable inputs as
// parameters, flattened into logits (plus a runtime input, which every trainable graph has).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>

#include "engine/core/op_registry.h"
#include "engine/train/training_session.h"

namespace xnn::train {
namespace {

using Attrs = std::map<std::string, Attribute>;

struct GraphBuilder {
  std::shared_ptr<Model> model = std::make_shared<Model>();
  std::mt19937 rng{1234};
  int64_t batch = 2;

  Graph& g() { return model->graph; }
  Tensor random(const Shape& shape, float lo, float hi) {
    Tensor t(DType::kF32, shape);
    std::uniform_real_distribution<float> d(lo, hi);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
    return t;
  }
  int param(const std::string& name, const Shape& shape, float lo = -1.0f, float hi = 1.0f) {
    return g().add_constant(name, random(shape, lo, hi));
  }
  int constant(const std::string& name, Tensor t) { return g().add_constant(name, std::move(t)); }
  int node(const std::string& op, std::vector<int> inputs, Attrs attrs = {}, int outputs = 1) {
    Node n;
    n.op_type = op;
    n.name = op + std::to_string(g().nodes.size());
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    int first = -1;
    for (int o = 0; o < outputs; ++o) {
      Value v;
      v.name = n.name + "_out" + std::to_string(o);
      v.dtype = DType::kF32;
      const int idx = g().add_value(v);
      if (o == 0) first = idx;
      n.outputs.push_back(idx);
    }
    g().nodes.push_back(std::move(n));
    return first;
  }
  // logits = Flatten(y) + z, z the runtime input [batch, features].
  void finish(int y, int64_t features) {
    Value z;
    z.name = "z";
    z.dtype = DType::kF32;
    z.has_shape = true;
    z.shape = {Dim::fixed(batch), Dim::fixed(features)};
    const int zi = g().add_value(z);
    g().inputs.push_back(zi);
    const int flat = node("Flatten", {y}, {{"axis", int64_t{1}}});
    const int logits = node("Add", {flat, zi});
    g().outputs.push_back(logits);
    g().validate("test graph");
  }
};

// Checks d(loss)/d(param) for up to `samples` elements of every parameter.
void check_gradients(GraphBuilder& b, int64_t features, const std::string& what, float h = 1e-2f, float atol = 5e-4f,
                     float rtol = 1e-2f, int samples = 24) {
  SCOPED_TRACE(what);
  TrainingSession session(b.model, TrainingOptions{1, 7, 0.0f});
  Tensor z = b.random({b.batch, features}, -0.1f, 0.1f);
  Tensor labels(DType::kI64, {b.batch});
  for (int64_t i = 0; i < b.batch; ++i) labels.data<int64_t>()[i] = (i * 7 + 3) % features;
  session.train_step(z, labels);
  session.set_steps_taken(0);
  ASSERT_FALSE(session.parameters().empty());
  std::mt19937 pick(99);
  for (Parameter& p : session.parameters()) {
    const std::vector<float> analytic(p.grad.data<float>(), p.grad.data<float>() + p.grad.numel());
    const int64_t n = p.value.numel();
    for (int s = 0; s < std::min<int64_t>(samples, n); ++s) {
      const int64_t i = n <= samples ? s : static_cast<int64_t>(pick() % static_cast<uint32_t>(n));
      float* v = p.value.data<float>() + i;
      const float saved = *v;
      *v = saved + h;
      const double up = session.training_loss(z, labels);
      *v = saved - h;
      const double down = session.training_loss(z, labels);
      *v = saved;
      const double fd = (up - down) / (2.0 * h);
      EXPECT_NEAR(analytic[static_cast<size_t>(i)], fd, atol + rtol * std::fabs(fd))
          << "parameter " << p.name << " element " << i;
    }
  }
}

Attrs conv_attrs(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dil, int64_t group) {
  return {{"strides", strides}, {"pads", pads}, {"dilations", dil}, {"group", group}};
}

struct ConvCase {
  const char* name;
  int64_t c, m, h, w, k, group;
  Attrs attrs;
};

TEST(AutogradConv, MatchesFiniteDifferences) {
  const std::vector<ConvCase> cases = {
      {"3x3 pad 1", 3, 4, 6, 5, 3, 1, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)},
      {"3x3 stride 2 asymmetric pad", 2, 3, 7, 6, 3, 1, conv_attrs({2, 2}, {0, 1, 1, 0}, {1, 1}, 1)},
      {"3x3 dilation 2", 2, 2, 7, 7, 3, 1, conv_attrs({1, 1}, {2, 2, 2, 2}, {2, 2}, 1)},
      {"pointwise", 4, 3, 4, 4, 1, 1, conv_attrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)},
      {"grouped", 4, 6, 5, 5, 3, 2, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 2)},
      {"depthwise stride 2", 3, 3, 6, 6, 3, 3, conv_attrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 3)},
      {"depthwise multiplier 2, 5x5", 2, 4, 6, 6, 5, 2, conv_attrs({1, 1}, {2, 2, 2, 2}, {1, 1}, 2)},
  };
  for (const ConvCase& cc : cases) {
    GraphBuilder b;
    const int x = b.param("x", {b.batch, cc.c, cc.h, cc.w});
    const int w = b.param("w", {cc.m, cc.c / cc.group, cc.k, cc.k}, -0.5f, 0.5f);
    const int bias = b.param("b", {cc.m}, -0.1f, 0.1f);
    const int y = b.node("Conv", {x, w, bias}, cc.attrs);
    // Output size from the op's own shape inference, via a throwaway session plan.
    GraphBuilder probe = b;
    const OpSchema* conv = OpRegistry::builtin().find("Conv");
    std::vector<TensorInfo> ins = {{DType::kF32, {b.batch, cc.c, cc.h, cc.w}, nullptr},
                                   {DType::kF32, {cc.m, cc.c / cc.group, cc.k, cc.k}, nullptr},
                                   {DType::kF32, {cc.m}, nullptr}};
    const auto outs = infer_node(*conv, b.g().nodes.back(), ins, 1);
    const int64_t features = shape_numel(outs[0].shape) / b.batch;
    b.finish(y, features);
    check_gradients(b, features, cc.name);
  }
}

TEST(AutogradGemm, AllTransposesAlphaBetaAndBiasShapes) {
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      for (const Shape& cshape : {Shape{5}, Shape{1, 5}, Shape{3, 5}}) {
        GraphBuilder b;
        b.batch = 3;
        const int a = b.param("a", ta ? Shape{4, 3} : Shape{3, 4});
        const int w = b.param("w", tb ? Shape{5, 4} : Shape{4, 5});
        const int c = b.param("c", cshape);
        const int y = b.node("Gemm", {a, w, c},
                             {{"transA", int64_t{ta}}, {"transB", int64_t{tb}}, {"alpha", 0.7f}, {"beta", 1.3f}});
        b.finish(y, 5);
        check_gradients(b, 5, "transA=" + std::to_string(ta) + " transB=" + std::to_string(tb) + " C" + shape_str(cshape));
      }
    }
  }
}

TEST(AutogradMatMul, BatchedWithBroadcast) {
  GraphBuilder b;
  const int a = b.param("a", {2, 3, 4});
  const int w = b.param("w", {4, 2});  // broadcast over the batch: its gradient sums both
  const int y = b.node("MatMul", {a, w});
  b.finish(y, 6);
  check_gradients(b, 6, "[2,3,4] x [4,2]");
}

TEST(AutogradBatchNorm, TrainingModeThroughBatchStatistics) {
  GraphBuilder b;
  b.batch = 4;
  const int x = b.param("x", {b.batch, 3, 2, 2});
  const int scale = b.param("gamma", {3}, 0.5f, 1.5f);
  const int bias = b.param("beta", {3});
  const int mean = b.constant("running_mean", Tensor(DType::kF32, {3}));
  Tensor var(DType::kF32, {3});
  for (int i = 0; i < 3; ++i) var.data<float>()[i] = 1.0f;
  const int v = b.constant("running_var", var);
  const int y = b.node("BatchNormalization", {x, scale, bias, mean, v}, {{"epsilon", 1e-5f}, {"momentum", 0.9f}});
  b.finish(y, 12);
  check_gradients(b, 12, "bn");
}

TEST(AutogradBatchNorm, RunningStatisticsFollowPyTorch) {
  GraphBuilder b;
  b.batch = 4;
  const Tensor xv = b.random({4, 2, 3, 1}, -2.0f, 2.0f);
  Value xin;
  xin.name = "x";
  xin.dtype = DType::kF32;
  xin.has_shape = true;
  xin.shape = {Dim::fixed(4), Dim::fixed(2), Dim::fixed(3), Dim::fixed(1)};
  // Gradients flow to gamma/beta; x is the runtime input here.
  const int x = b.g().add_value(xin);
  b.g().inputs.push_back(x);
  const int scale = b.param("gamma", {2}, 1.0f, 1.0f);
  const int bias = b.param("beta", {2}, 0.0f, 0.0f);
  const int mean = b.constant("running_mean", Tensor(DType::kF32, {2}));
  Tensor var(DType::kF32, {2});
  var.data<float>()[0] = var.data<float>()[1] = 1.0f;
  const int v = b.constant("running_var", var);
  const int y = b.node("BatchNormalization", {x, scale, bias, mean, v}, {{"momentum", 0.9f}});
  const int flat = b.node("Flatten", {y}, {{"axis", int64_t{1}}});
  b.g().outputs.push_back(flat);
  TrainingSession s(b.model);
  Tensor labels = Tensor::from_vector<int64_t>({0, 1, 2, 3}, {4});
  s.train_step(xv, labels);
  for (int c = 0; c < 2; ++c) {
    double sum = 0, ss = 0;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 3; ++i) sum += xv.data<float>()[(n * 2 + c) * 3 + i];
    const double m = sum / 12;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 3; ++i) ss += std::pow(xv.data<float>()[(n * 2 + c) * 3 + i] - m, 2);
    EXPECT_NEAR(s.model().graph.value(mean).data->data<float>()[c], 0.1 * m, 1e-6);
    EXPECT_NEAR(s.model().graph.value(v).data->data<float>()[c], 0.9 + 0.1 * ss / 11, 1e-6);
  }
}

struct UnaryCase {
  const char* op;
  Attrs attrs;
  float lo, hi;
};

TEST(AutogradActivations, MatchFiniteDifferences) {
  const std::vector<UnaryCase> cases = {
      {"Relu", {}, -1, 1},        {"LeakyRelu", {{"alpha", 0.1f}}, -1, 1},
      {"Sigmoid", {}, -3, 3},     {"Tanh", {}, -2, 2},
      {"HardSwish", {}, -4, 4},   {"HardSigmoid", {{"alpha", 0.3f}, {"beta", 0.4f}}, -3, 3},
      {"Softmax", {{"axis", int64_t{1}}}, -2, 2}, {"LogSoftmax", {{"axis", int64_t{1}}}, -2, 2},
      {"Identity", {}, -1, 1},
  };
  for (const UnaryCase& uc : cases) {
    GraphBuilder b;
    int x = b.param("x", {b.batch, 6}, uc.lo, uc.hi);
    // Keep samples away from the kinks, where finite differences are meaningless.
    float* xp = b.g().value(x).data->data<float>();
    for (int i = 0; i < 12; ++i)
      for (float kink : {0.0f, -3.0f, 3.0f, (0.0f - 0.4f) / 0.3f, (1.0f - 0.4f) / 0.3f})
        if (std::fabs(xp[i] - kink) < 0.05f) xp[i] = kink + 0.1f;
    const int y = b.node(uc.op, {x}, uc.attrs);
    b.finish(y, 6);
    check_gradients(b, 6, uc.op);
  }
}

TEST(AutogradActivations, ClipAsRelu6AndSiluAsSigmoidTimesX) {
  {
    GraphBuilder b;
    const int x = b.param("x", {b.batch, 8}, -2.0f, 8.0f);
    float* xp = b.g().value(x).data->data<float>();
    for (int i = 0; i < 16; ++i)
      if (std::fabs(xp[i]) < 0.05f || std::fabs(xp[i] - 6) < 0.05f) xp[i] += 0.1f;
    const int lo = b.constant("lo", Tensor::scalar<float>(0.0f));
    const int hi = b.constant("hi", Tensor::scalar<float>(6.0f));
    const int y = b.node("Clip", {x, lo, hi});
    b.finish(y, 8);
    check_gradients(b, 8, "Clip(0,6)");
  }
  {
    GraphBuilder b;
    const int x = b.param("x", {b.batch, 5}, -3.0f, 3.0f);
    const int s = b.node("Sigmoid", {x});
    const int y = b.node("Mul", {x, s});  // x feeds two nodes: gradients accumulate
    b.finish(y, 5);
    check_gradients(b, 5, "SiLU");
  }
}

TEST(AutogradElementwise, BroadcastingBinaryOps) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    GraphBuilder b;
    const int a = b.param("a", {b.batch, 3, 4}, 0.5f, 1.5f);
    const int c = b.param("c", {3, 1}, 0.5f, 1.5f);  // broadcast along the batch and the last dim
    const int y = b.node(op, {a, c});
    b.finish(y, 12);
    check_gradients(b, 12, op);
  }
  GraphBuilder b;
  const int a = b.param("a", {b.batch, 4});
  const int y = b.node("Mul", {a, a});  // the same value twice in one node
  b.finish(y, 4);
  check_gradients(b, 4, "Mul(a, a)");
}

TEST(AutogradPool, MaxAverageGlobal) {
  struct PoolCase {
    const char* name;
    const char* op;
    Attrs attrs;
    int64_t features;
  };
  const std::vector<PoolCase> cases = {
      {"maxpool 2x2", "MaxPool", {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}, 2 * 3 * 3},
      {"maxpool 3x3 s2 pad 1", "MaxPool",
       {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
       2 * 3 * 3},
      {"avgpool 3x3 pad 1 exclude pad", "AveragePool",
       {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}, 2 * 6 * 6},
      {"avgpool 3x3 s2 pad 1 include pad", "AveragePool",
       {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
        {"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"count_include_pad", int64_t{1}}},
       2 * 3 * 3},
      {"global average", "GlobalAveragePool", {}, 2},
      {"global max", "GlobalMaxPool", {}, 2},
  };
  for (const PoolCase& pc : cases) {
    GraphBuilder b;
    const int x = b.param("x", {b.batch, 2, 6, 6});
    const int y = b.node(pc.op, {x}, pc.attrs);
    b.finish(y, pc.features);
    check_gradients(b, pc.features, pc.name);
  }
  // 2x2 stride 2 on odd sizes: the last row and column are outside every window (their gradient
  // is 0), or, with ceil_mode, in a last window that hangs past the input.
  for (int64_t ceil_mode : {int64_t{0}, int64_t{1}}) {
    GraphBuilder b;
    const int x = b.param("x", {b.batch, 2, 7, 5});
    const int y = b.node("MaxPool", {x},
                         {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}},
                          {"ceil_mode", ceil_mode}});
    const int64_t features = ceil_mode ? 2 * 4 * 3 : 2 * 3 * 2;
    b.finish(y, features);
    check_gradients(b, features, ceil_mode ? "maxpool 2x2 7x5 ceil_mode" : "maxpool 2x2 7x5");
  }
}

TEST(AutogradShape, ConcatTransposeReshapePadGather) {
  {
    GraphBuilder b;
    const int p = b.param("p", {b.batch, 2, 3});
    const int q = b.param("q", {b.batch, 1, 3});
    const int cat = b.node("Concat", {p, q, p}, {{"axis", int64_t{1}}});
    b.finish(cat, 15);
    check_gradients(b, 15, "Concat");
  }
  {
    GraphBuilder b;
    const int p = b.param("p", {b.batch, 2, 3, 4});
    const int t = b.node("Transpose", {p}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
    const int shape = b.constant("shape", Tensor::from_vector<int64_t>({b.batch, 4, 6}, {3}));
    const int r = b.node("Reshape", {t, shape});
    b.finish(r, 24);
    check_gradients(b, 24, "Transpose+Reshape");
  }
  {
    GraphBuilder b;
    const int p = b.param("p", {b.batch, 2, 3});
    const int pads = b.constant("pads", Tensor::from_vector<int64_t>({0, 1, -1, 0, 0, 2}, {6}));
    const int y = b.node("Pad", {p, pads});  // pads 1 before dim 1, crops 1 off dim 2, 2 after it
    b.finish(y, 3 * 4);
    check_gradients(b, 12, "Pad");
  }
  {
    GraphBuilder b;
    const int table = b.param("embedding", {5, 3});
    const int idx = b.constant("idx", Tensor::from_vector<int64_t>({4, 1, 4, -1}, {2, 2}));  // repeats accumulate
    const int y = b.node("Gather", {table, idx}, {{"axis", int64_t{0}}});
    b.finish(y, 6);
    check_gradients(b, 6, "Gather");
  }
}

TEST(AutogradDropout, MaskedGradientsAndDeterministicMask) {
  GraphBuilder b;
  b.batch = 4;
  const int p = b.param("p", {b.batch, 16});
  const int ratio = b.constant("ratio", Tensor::scalar<float>(0.5f));
  const int y = b.node("Dropout", {p, ratio});
  b.finish(y, 16);
  check_gradients(b, 16, "Dropout");
  // About half the gradient entries are zero (dropped), and the survivors are scaled by 2.
  TrainingSession s(b.model, TrainingOptions{1, 3, 0});
  Tensor z(DType::kF32, {4, 16});
  Tensor labels = Tensor::from_vector<int64_t>({0, 1, 2, 3}, {4});
  s.train_step(z, labels);
  int zeros = 0;
  for (int64_t i = 0; i < 64; ++i) zeros += s.parameters()[0].grad.data<float>()[i] == 0.0f;
  EXPECT_GT(zeros, 16);
  EXPECT_LT(zeros, 48);
}

TEST(AutogradSoftmaxCrossEntropy, LossGradientAndLabelSmoothing) {
  Tensor logits = Tensor::from_vector<float>({1, 2, 3, 0, 0, 0}, {2, 3});
  Tensor labels = Tensor::from_vector<int64_t>({2, 0}, {2});
  Tensor grad(DType::kF32, {2, 3});
  int64_t correct = 0;
  const float loss = softmax_cross_entropy(logits, labels, 0.0f, &grad, &correct);
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0, l1 = std::log(3.0);
  EXPECT_NEAR(loss, (l0 + l1) / 2, 1e-6);
  EXPECT_EQ(correct, 2);  // row 0 predicts 2; row 1 ties, and the first maximum (class 0) wins
  const double p2 = std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(grad.data<float>()[2], (p2 - 1) / 2, 1e-6);
  EXPECT_NEAR(grad.data<float>()[3], (1.0 / 3 - 1) / 2, 1e-6);
  // Label smoothing 0.1: t = 0.9·onehot + 0.1/3.
  const float smoothed = softmax_cross_entropy(logits, labels, 0.1f, nullptr, nullptr);
  const double lse0 = l0 + 3.0;
  const double row0 = 0.9 * l0 + (0.1 / 3) * ((lse0 - 1) + (lse0 - 2) + (lse0 - 3));
  EXPECT_NEAR(smoothed, (row0 + l1) / 2, 1e-6);
  EXPECT_THROW(softmax_cross_entropy(logits, Tensor::from_vector<int64_t>({3, 0}, {2}), 0, nullptr, nullptr), Error);
}

TEST(TrainingSession, RejectsOpsWithoutBackwardNamingTheNode) {
  GraphBuilder b;
  const int x = b.param("x", {b.batch, 4});
  const int r = b.node("Relu", {x});
  const int y = b.node("Erf", {r});
  b.finish(y, 4);
  TrainingSession s(b.model);
  Tensor z(DType::kF32, {b.batch, 4});
  Tensor labels = Tensor::from_vector<int64_t>({0, 1}, {2});
  try {
    s.train_step(z, labels);
    FAIL() << "expected an error";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("Erf"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no backward"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xnn::train

namespace xnn::train {
namespace {

// The parallel kernels (images split into per-thread chunks, partial weight gradients summed)
// give the serial result up to float summation order.
// BatchNormalization followed by an activation that alone reads its output runs as one fused
// node (GradOp::fuses_activation): the activation's output is written directly and its gradient
// taken through the derivative on the fly; with a 2×2 max pool after it, that too.
TEST(AutogradBatchNorm, FusedActivationsMatchFiniteDifferences) {
  struct ActCase {
    const char* op;
    Attrs attrs;
    bool clip_bounds;
  };
  for (const ActCase& ac : std::vector<ActCase>{{"Relu", {}, false},
                                                {"Clip", {}, true},
                                                {"LeakyRelu", {{"alpha", 0.1f}}, false},
                                                {"HardSwish", {}, false},
                                                {"HardSigmoid", {{"alpha", 0.3f}, {"beta", 0.4f}}, false}}) {
    for (bool pool : {false, true}) {
      GraphBuilder b;
      b.batch = 4;
      const int x = b.param("x", {b.batch, 3, 4, 6});
      const int scale = b.param("gamma", {3}, 0.5f, 1.5f);
      const int bias = b.param("beta", {3}, -0.5f, 0.5f);
      const int mean = b.constant("mean", Tensor(DType::kF32, {3}));
      Tensor var(DType::kF32, {3});
      for (int i = 0; i < 3; ++i) var.data<float>()[i] = 1.0f;
      const int vr = b.constant("var", var);
      const int y = b.node("BatchNormalization", {x, scale, bias, mean, vr});
      std::vector<int> act_inputs = {y};
      if (ac.clip_bounds) {
        // ReLU6: finite differences across a kink are noise, and a BatchNorm perturbs every
        // output at once, so the bounds stay where few outputs are (the test after this one
        // checks inner bounds against the unfused nodes).
        act_inputs.push_back(b.constant("lo", Tensor::scalar<float>(0.0f)));
        act_inputs.push_back(b.constant("hi", Tensor::scalar<float>(6.0f)));
      }
      int r = b.node(ac.op, act_inputs, ac.attrs);
      int64_t features = 72;
      if (pool) {
        r = b.node("MaxPool", {r}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
        features = 18;
      }
      b.finish(r, features);
      check_gradients(b, features, std::string("BatchNormalization + ") + ac.op + (pool ? " + MaxPool" : "") + " (fused)");
    }
  }
}

// Fused and unfused (the BatchNorm output is then also a graph output) give the same gradients:
// to the bit for Relu, up to the standalone kernels' own rounding for the others.
TEST(AutogradBatchNorm, FusedActivationsGiveTheUnfusedGradients) {
  for (const char* op : {"Relu", "Clip", "LeakyRelu", "HardSwish", "HardSigmoid"}) {
    for (bool pool : {false, true}) {
      std::vector<std::vector<float>> grads[2];
      for (int unfused = 0; unfused < 2; ++unfused) {
        GraphBuilder b;
        b.batch = 6;
        const int x = b.param("x", {b.batch, 5, 6, 8}, -2.0f, 2.0f);
        const int scale = b.param("gamma", {5}, 0.5f, 3.0f);
        const int bias = b.param("beta", {5}, -0.5f, 0.5f);
        const int mean = b.constant("mean", Tensor(DType::kF32, {5}));
        Tensor var(DType::kF32, {5});
        for (int i = 0; i < 5; ++i) var.data<float>()[i] = 1.0f;
        const int vr = b.constant("var", var);
        const int y = b.node("BatchNormalization", {x, scale, bias, mean, vr});
        std::vector<int> act_inputs = {y};
        if (std::string(op) == "Clip") {
          act_inputs.push_back(b.constant("lo", Tensor::scalar<float>(0.0f)));
          act_inputs.push_back(b.constant("hi", Tensor::scalar<float>(1.5f)));
        }
        int r = b.node(op, act_inputs);
        int64_t features = 5 * 6 * 8;
        if (pool) {
          r = b.node("MaxPool", {r}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
          features = 5 * 3 * 4;
        }
        b.finish(r, features);
        if (unfused) b.g().outputs.push_back(y);
        TrainingSession s(b.model, TrainingOptions{2, 0, 0.0f});
        Tensor z = b.random({6, features}, -0.1f, 0.1f);
        Tensor labels = Tensor::from_vector<int64_t>({0, 3, 5, 7, 9, 40}, {6});
        s.train_step(z, labels);
        for (const Parameter& prm : s.parameters())
          grads[unfused].emplace_back(prm.grad.data<float>(), prm.grad.data<float>() + prm.grad.numel());
      }
      for (size_t i = 0; i < grads[0].size(); ++i) {
        float scale = 0;
        for (float v : grads[1][i]) scale = std::max(scale, std::fabs(v));
        for (size_t j = 0; j < grads[0][i].size(); ++j)
          EXPECT_NEAR(grads[0][i][j], grads[1][i][j], 1e-5f * scale) << op << (pool ? " + pool" : "") << " parameter " << i << " element " << j;
      }
    }
  }
}

// The fused pass computes bit for bit what the two nodes compute apart; a graph in which the
// BatchNorm output is also a graph output (so it must exist and is not fused) has the same loss.
TEST(AutogradBatchNorm, FusedReluGivesTheUnfusedGradientsExactly) {
  std::vector<std::vector<float>> grads[2];
  for (int unfused = 0; unfused < 2; ++unfused) {
    GraphBuilder b;
    b.batch = 6;
    const int x = b.param("x", {b.batch, 4, 5, 7});
    const int w = b.param("w", {8, 4, 3, 3}, -0.5f, 0.5f);
    const int c = b.node("Conv", {x, w}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
    const int scale = b.param("gamma", {8}, 0.5f, 1.5f);
    const int bias = b.param("beta", {8}, -0.5f, 0.5f);
    const int mean = b.constant("mean", Tensor(DType::kF32, {8}));
    Tensor var(DType::kF32, {8});
    for (int i = 0; i < 8; ++i) var.data<float>()[i] = 1.0f;
    const int vr = b.constant("var", var);
    const int y = b.node("BatchNormalization", {c, scale, bias, mean, vr});
    const int r = b.node("Relu", {y});
    const int p = b.node("MaxPool", {r}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    b.finish(p, 8 * 2 * 3);
    if (unfused) b.g().outputs.push_back(y);
    TrainingSession s(b.model, TrainingOptions{2, 0, 0.0f});
    Tensor z = b.random({6, 48}, -0.1f, 0.1f);
    Tensor labels = Tensor::from_vector<int64_t>({0, 3, 5, 7, 9, 40}, {6});
    s.set_profiling(true);
    s.train_step(z, labels);
    for (const TrainNodeProfile& np : s.profile()) {
      if (np.op_type == "Relu") {
        EXPECT_EQ(np.forward_ms == 0.0, unfused == 0) << "the Relu ran as its own node";
      }
    }
    for (const Parameter& prm : s.parameters())
      grads[unfused].emplace_back(prm.grad.data<float>(), prm.grad.data<float>() + prm.grad.numel());
  }
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i) EXPECT_EQ(grads[0][i], grads[1][i]) << "parameter " << i;
}

// A Conv whose output feeds only a BatchNorm hands it per-plane shifted sums (ForwardContext::
// output_stats); merged per channel they give the batch statistics the BatchNorm computes itself
// (here: when the conv output is also a graph output, so there is no hand-over). Channels with a
// large mean test the merge's cancellation safety.
TEST(AutogradBatchNorm, StatisticsHandedOverByTheConvMatchItsOwn) {
  std::vector<std::vector<float>> grads[2], running[2];
  for (int own = 0; own < 2; ++own) {
    GraphBuilder b;
    b.batch = 5;
    const int x = b.param("x", {b.batch, 8, 6, 7}, 20.0f, 22.0f);  // mean ≈ 21·Σw: far from 0
    const int w = b.param("w", {16, 8, 3, 3}, 0.0f, 0.5f);
    const int c = b.node("Conv", {x, w}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
    const int scale = b.param("gamma", {16}, 0.5f, 1.5f);
    const int bias = b.param("beta", {16}, -0.5f, 0.5f);
    const int mean = b.constant("mean", Tensor(DType::kF32, {16}));
    Tensor var(DType::kF32, {16});
    for (int i = 0; i < 16; ++i) var.data<float>()[i] = 1.0f;
    const int vr = b.constant("var", var);
    const int y = b.node("BatchNormalization", {c, scale, bias, mean, vr});
    b.finish(y, 16 * 6 * 7);
    if (own) b.g().outputs.push_back(c);
    TrainingSession s(b.model, TrainingOptions{2, 0, 0.0f});
    Tensor z = b.random({5, 16 * 6 * 7}, -0.1f, 0.1f);
    Tensor labels = Tensor::from_vector<int64_t>({0, 3, 5, 7, 9}, {5});
    s.train_step(z, labels);
    for (const Parameter& prm : s.parameters())
      grads[own].emplace_back(prm.grad.data<float>(), prm.grad.data<float>() + prm.grad.numel());
    for (int v : {mean, vr}) {
      const Tensor& t = *b.g().value(v).data;
      running[own].emplace_back(t.data<float>(), t.data<float>() + t.numel());
    }
  }
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i) {
    float scale = 0;
    for (float v : grads[1][i]) scale = std::max(scale, std::fabs(v));
    for (size_t j = 0; j < grads[0][i].size(); ++j)
      EXPECT_NEAR(grads[0][i][j], grads[1][i][j], 1e-4f * scale) << "parameter " << i << " element " << j;
  }
  for (size_t i = 0; i < running[0].size(); ++i)
    for (size_t j = 0; j < running[0][i].size(); ++j)
      EXPECT_NEAR(running[0][i][j], running[1][i][j], 1e-5f * (1 + std::fabs(running[1][i][j]))) << i << " " << j;
}

TEST(TrainingSession, ThreadsAgreeWithSerial) {
  std::vector<std::vector<float>> grads[2];
  for (int threads : {1, 2}) {
    GraphBuilder b;
    b.batch = 5;  // uneven chunks
    const int x = b.param("x", {b.batch, 3, 8, 8});
    const int w = b.param("w", {4, 3, 3, 3}, -0.5f, 0.5f);
    const int c = b.node("Conv", {x, w}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
    const int dw = b.param("dw", {4, 1, 3, 3}, -0.5f, 0.5f);
    const int d = b.node("Conv", {c, dw}, conv_attrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 4));
    const int p = b.node("MaxPool", {d}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    b.finish(p, 16);
    TrainingSession s(b.model, TrainingOptions{threads, 0, 0.0f});
    Tensor z(DType::kF32, {5, 16});
    Tensor labels = Tensor::from_vector<int64_t>({0, 3, 5, 7, 9}, {5});
    s.train_step(z, labels);
    for (const Parameter& prm : s.parameters())
      grads[threads - 1].emplace_back(prm.grad.data<float>(), prm.grad.data<float>() + prm.grad.numel());
  }
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i)
    for (size_t j = 0; j < grads[0][i].size(); ++j) EXPECT_NEAR(grads[0][i][j], grads[1][i][j], 1e-5);
}

}  // namespace
}  // namespace xnn::train
