// The fast paths of the training convolution (engine/train/grad_conv.cpp) against a direct
// double-precision definition: 3×3 stride-1 forward, input and weight gradients on Winograd
// (F(4,3), and F(6,3) at 12×12), the weight gradient from channels-last panels, depthwise on
// the inference kernels, the forward of few-input-channel layers on the direct kernel, and the
// GEMM/col2im fallback for what those do not take.
// Channel counts are large enough that the fast paths apply (the finite-difference checks in
// train_autograd_test.cpp use tiny convolutions that stay on the fallback).
//
// The graph is logits = Flatten(Conv(x, W, b)) + z with x, W and b parameters, so after one
// training step d(loss)/d(conv output) is (softmax(logits) − onehot)/N, computed here from the
// session's own logits; the expected dx, dW and db follow from the convolution's definition.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/core/op_registry.h"
#include "engine/train/training_session.h"

namespace xnn::train {
namespace {

struct Case {
  const char* name;
  int64_t n, c, m, h, w, kh, kw;
  std::vector<int64_t> strides, pads, dilations;
  int threads;
  int64_t group = 1;
};

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo, float hi) {
  Tensor t(DType::kF32, shape);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

int add_node(Graph& g, const std::string& op, std::vector<int> inputs, std::map<std::string, Attribute> attrs) {
  Node n;
  n.op_type = op;
  n.name = op + std::to_string(g.nodes.size());
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  Value v;
  v.name = n.name + "_out";
  v.dtype = DType::kF32;
  const int out = g.add_value(v);
  n.outputs.push_back(out);
  g.nodes.push_back(std::move(n));
  return out;
}

const Parameter& param(TrainingSession& s, const std::string& name) {
  for (const Parameter& p : s.parameters())
    if (p.name == name) return p;
  throw std::runtime_error("no parameter " + name);
}

void expect_close(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.data<float>()[i];
    if (std::fabs(g - want[i]) > 2e-5 * scale + 1e-7) {
      if (++bad <= 5) ADD_FAILURE() << what << "[" << i << "]: got " << g << ", expected " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << want.size() << " elements off (scale " << scale << ")";
}

void check_case(const Case& k) {
  SCOPED_TRACE(k.name);
  std::mt19937 rng(42);
  auto model = std::make_shared<Model>();
  Graph& g = model->graph;
  const Tensor x0 = random_tensor({k.n, k.c, k.h, k.w}, rng, -1.0f, 1.0f);
  const int64_t cg = k.c / k.group, mg = k.m / k.group;  // channels per group
  const Tensor w0 = random_tensor({k.m, cg, k.kh, k.kw}, rng, -0.3f, 0.3f);
  const Tensor b0 = random_tensor({k.m}, rng, -0.1f, 0.1f);
  const int x = g.add_constant("x", x0.clone());
  const int w = g.add_constant("w", w0.clone());
  const int b = g.add_constant("b", b0.clone());
  const int y = add_node(g, "Conv", {x, w, b},
                         {{"strides", k.strides}, {"pads", k.pads}, {"dilations", k.dilations}, {"group", k.group}});
  const int64_t oh = (k.h + k.pads[0] + k.pads[2] - k.dilations[0] * (k.kh - 1) - 1) / k.strides[0] + 1;
  const int64_t ow = (k.w + k.pads[1] + k.pads[3] - k.dilations[1] * (k.kw - 1) - 1) / k.strides[1] + 1;
  const int64_t features = k.m * oh * ow;
  Value z;
  z.name = "z";
  z.dtype = DType::kF32;
  z.has_shape = true;
  z.shape = {Dim::fixed(k.n), Dim::fixed(features)};
  const int zi = g.add_value(z);
  g.inputs.push_back(zi);
  const int flat = add_node(g, "Flatten", {y}, {{"axis", int64_t{1}}});
  g.outputs.push_back(add_node(g, "Add", {flat, zi}, {}));
  g.validate("conv paths test graph");

  TrainingSession session(model, TrainingOptions{k.threads, 1, 0.0f});
  const Tensor zin = random_tensor({k.n, features}, rng, -0.1f, 0.1f);
  Tensor labels(DType::kI64, {k.n});
  for (int64_t i = 0; i < k.n; ++i) labels.data<int64_t>()[i] = (i * 13 + 5) % features;
  const Tensor logits = session.predict(zin).clone();  // parameters are untouched by predict
  session.train_step(zin, labels);

  // Expected forward, from the definition.
  auto xat = [&](int64_t n, int64_t c, int64_t iy, int64_t ix) -> double {
    if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) return 0.0;
    return x0.data<float>()[((n * k.c + c) * k.h + iy) * k.w + ix];
  };
  // c: the input channel (its group's slot cc = c − group·cg).
  auto wat = [&](int64_t m, int64_t c, int64_t i, int64_t j) -> double {
    return w0.data<float>()[((m * cg + (c - m / mg * cg)) * k.kh + i) * k.kw + j];
  };
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t m = 0; m < k.m; ++m)
      for (int64_t p = 0; p < oh * ow; p += 7) {  // a sample of the forward outputs
        double v = b0.data<float>()[m];
        const int64_t py = p / ow, px = p % ow;
        for (int64_t c = m / mg * cg; c < (m / mg + 1) * cg; ++c)
          for (int64_t i = 0; i < k.kh; ++i)
            for (int64_t j = 0; j < k.kw; ++j)
              v += wat(m, c, i, j) * xat(n, c, py * k.strides[0] - k.pads[0] + i * k.dilations[0],
                                         px * k.strides[1] - k.pads[1] + j * k.dilations[1]);
        const double got = logits.data<float>()[n * features + m * oh * ow + p] - zin.data<float>()[n * features + m * oh * ow + p];
        ASSERT_NEAR(got, v, 1e-4 * (1 + std::fabs(v))) << "forward output n=" << n << " m=" << m << " p=" << p;
      }

  // d(loss)/dy from the logits (mean softmax cross-entropy).
  std::vector<double> dy(static_cast<size_t>(k.n * features));
  for (int64_t n = 0; n < k.n; ++n) {
    const float* row = logits.data<float>() + n * features;
    double mx = row[0], sum = 0;
    for (int64_t j = 1; j < features; ++j) mx = std::max<double>(mx, row[j]);
    for (int64_t j = 0; j < features; ++j) sum += std::exp(row[j] - mx);
    for (int64_t j = 0; j < features; ++j)
      dy[static_cast<size_t>(n * features + j)] =
          (std::exp(row[j] - mx) / sum - (j == labels.data<int64_t>()[n] ? 1.0 : 0.0)) / static_cast<double>(k.n);
  }
  std::vector<double> dx(static_cast<size_t>(x0.numel()), 0.0), dw(static_cast<size_t>(w0.numel()), 0.0),
      db(static_cast<size_t>(k.m), 0.0);
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t m = 0; m < k.m; ++m)
      for (int64_t py = 0; py < oh; ++py)
        for (int64_t px = 0; px < ow; ++px) {
          const double gy = dy[static_cast<size_t>(n * features + (m * oh + py) * ow + px)];
          db[static_cast<size_t>(m)] += gy;
          for (int64_t c = m / mg * cg; c < (m / mg + 1) * cg; ++c)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t iy = py * k.strides[0] - k.pads[0] + i * k.dilations[0];
                const int64_t ix = px * k.strides[1] - k.pads[1] + j * k.dilations[1];
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                dw[static_cast<size_t>(((m * cg + (c - m / mg * cg)) * k.kh + i) * k.kw + j)] += gy * xat(n, c, iy, ix);
                dx[static_cast<size_t>(((n * k.c + c) * k.h + iy) * k.w + ix)] += gy * wat(m, c, i, j);
              }
        }
  expect_close(param(session, "x").grad, dx, "dx");
  expect_close(param(session, "w").grad, dw, "dW");
  expect_close(param(session, "b").grad, db, "db");
}

TEST(TrainConvPaths, WinogradForwardInputAndWeightGradients) {
  for (const Case& k : std::vector<Case>{
           {"3x3 pad 1, 14x14, 32->64", 3, 32, 64, 14, 14, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
           {"3x3 pad 1, 7x7, 2 threads", 4, 16, 24, 7, 7, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2},
           {"3x3 pad 0 (valid), non-square", 2, 16, 16, 9, 12, 3, 3, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
           {"3x3 pad 2", 2, 8, 16, 6, 6, 3, 3, {1, 1}, {2, 2, 2, 2}, {1, 1}, 2},
           {"3x3 asymmetric pads", 2, 24, 8, 10, 9, 3, 3, {1, 1}, {0, 1, 1, 0}, {1, 1}, 1},
           {"3x3 pad 1, 12x12 (F(6,3) with AVX2)", 3, 16, 16, 12, 12, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2},
       })
    check_case(k);
}

TEST(TrainConvPaths, PanelWeightGradientAnyGeometry) {
  for (const Case& k : std::vector<Case>{
           {"3x3 stride 2 pad 1", 3, 16, 20, 11, 11, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 2},
           {"1x1", 2, 32, 24, 5, 7, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
           {"5x5 dilation 2, 20 channels", 2, 20, 12, 12, 11, 5, 5, {1, 1}, {2, 3, 4, 1}, {2, 2}, 2},
           {"3x1 stride (2,1), odd size", 5, 17, 9, 9, 8, 3, 1, {2, 1}, {1, 0, 0, 0}, {1, 1}, 2},
       })
    check_case(k);
}

TEST(TrainConvPaths, DepthwiseOnTheInferenceKernels) {
  for (const Case& k : std::vector<Case>{
           {"depthwise 3x3 s1 pad 1", 3, 24, 24, 14, 14, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, 24},
           {"depthwise 3x3 s2 pad 1, odd size", 2, 16, 16, 13, 11, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, 16},
           {"depthwise 5x5 s2 pad 2", 3, 8, 8, 14, 14, 5, 5, {2, 2}, {2, 2, 2, 2}, {1, 1}, 2, 8},
           {"depthwise 7x7 s1 pad 3, wide", 2, 8, 8, 9, 30, 7, 7, {1, 1}, {3, 3, 3, 3}, {1, 1}, 1, 8},
           {"depthwise 3x3 s1 pad 0", 2, 8, 8, 6, 7, 3, 3, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, 8},
           {"depthwise multiplier 2 (direct loops)", 2, 8, 16, 6, 6, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, 8},
       })
    check_case(k);
}

TEST(TrainConvPaths, DirectForwardForFewInputChannels) {
  // The forward on the inference direct kernel (first layers), the gradients on the GEMM paths.
  for (const Case& k : std::vector<Case>{
           {"3x3 pad 1, 4 channels", 3, 4, 8, 8, 8, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2},
           {"3x3 pad 1, 1 channel, 28x28", 4, 1, 16, 28, 28, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2},
           {"5x5 stride 2 pad 2, RGB, odd size", 2, 3, 8, 15, 13, 5, 5, {2, 2}, {2, 2, 2, 2}, {1, 1}, 1},
           {"5x5 pad 2, 6 channels (LeNet's second)", 2, 6, 16, 14, 14, 5, 5, {1, 1}, {2, 2, 2, 2}, {1, 1}, 2},
           {"7x7 pad 3 bottom/right 1, 2 channels", 3, 2, 5, 9, 10, 7, 7, {1, 1}, {3, 3, 1, 1}, {1, 1}, 2},
       })
    check_case(k);
}

}  // namespace
}  // namespace xnn::train
