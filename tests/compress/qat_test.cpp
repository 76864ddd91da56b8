// Quantisation-aware training: the ai.xnn FakeQuantize op (forward = QuantizeLinear ->
// DequantizeLinear, straight-through gradient), fake quantisation placed where the int8 rewrite
// quantises, fine-tuning through it, and the conversion to the int8 model.
#include <gtest/gtest.h>

#include <cmath>

#include "compress/quantize/calibrator.h"
#include "compress/quantize/float_model.h"
#include "compress/quantize/qat.h"
#include "engine/runtime/session.h"
#include "engine/train/autograd.h"
#include "engine/train/optimizer.h"
#include "engine/train/training_session.h"
#include "tests/compress/test_graph.h"

namespace xnn::quantize {
namespace {

using test::GraphBuilder;
using test::random_tensor;
using test::small_cnn;

Tensor run_output(const Model& m, const Tensor& x, size_t output = 0) {
  Session s(std::make_shared<Model>(m));
  return s.run({{s.inputs().at(0).name, x}}).at(output);
}

int count_fake_quants(const Graph& g) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == "FakeQuantize" && node.domain == "ai.xnn";
  return n;
}

// x -> FakeQuantize(x, scale, zp) as a one-node model; the same with QuantizeLinear -> DequantizeLinear.
Model fake_quant_model(bool as_qdq, float scale, uint8_t zp) {
  GraphBuilder b;
  b.input("x", {16}).constant("s", Tensor::scalar<float>(scale)).constant("z", Tensor::scalar<uint8_t>(zp));
  if (as_qdq) {
    b.node("QuantizeLinear", "q", {"x", "s", "z"}, {"xq"}).node("DequantizeLinear", "dq", {"xq", "s", "z"}, {"y"});
  } else {
    b.node("FakeQuantize", "fq", {"x", "s", "z"}, {"y"});
  }
  Model m = b.output("y", {16}).model();
  if (!as_qdq) m.graph.nodes[0].domain = "ai.xnn";
  if (as_qdq) m.graph.value(m.graph.find_value("xq")).dtype = DType::kU8;
  return m;
}

TEST(FakeQuantize, ForwardEqualsQuantizeDequantize) {
  // Values inside, on the rounding half-way points of, and outside the range.
  Tensor x = random_tensor({8, 16}, -3.0f, 6.0f, 7);
  x.data<float>()[0] = 0.05f * 2.5f;  // a tie: half to even
  for (auto [scale, zp] : {std::pair<float, uint8_t>{0.02f, 100}, {0.05f, 0}, {0.1f, 255}}) {
    const Tensor want = run_output(fake_quant_model(true, scale, zp), x);
    const Tensor got = run_output(fake_quant_model(false, scale, zp), x);
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]) << i;
  }
}

TEST(FakeQuantize, WeightFormIsSymmetricInt8PerChannel) {
  GraphBuilder b;
  b.input("x", {3}).constant("w", Tensor::from_vector<float>({1.0f, -0.5f, 0.26f, 0.0f, 0.0f, 0.0f}, {2, 3}));
  b.node("FakeQuantize", "fq", {"w"}, {"wq"}, {{"axis", int64_t{0}}}).node("Add", "add", {"x", "wq"}, {"y"});
  Model m = b.output("y", {2, 3}).model();
  m.graph.nodes[0].domain = "ai.xnn";
  const Tensor y = run_output(m, Tensor(DType::kF32, {1, 3}));  // x = 0: y = the fake-quantised w
  const float s = 1.0f / 127.0f;
  EXPECT_FLOAT_EQ(y.data<float>()[0], 127 * s);
  EXPECT_FLOAT_EQ(y.data<float>()[1], -std::nearbyint(0.5f / s) * s);
  EXPECT_FLOAT_EQ(y.data<float>()[2], std::nearbyint(0.26f / s) * s);
  EXPECT_EQ(y.data<float>()[3], 0.0f);  // an all-zero channel stays zero (scale 1)
}

TEST(FakeQuantize, StraightThroughGradientOnAHandCase) {
  // scale 0.01, zero point 50: the representable range is [-0.5, 2.05].
  Node n;
  n.op_type = "FakeQuantize";
  n.domain = "ai.xnn";
  n.name = "fq";
  const train::GradOp* op = train::GradRegistry::builtin().find(n);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->differentiable_inputs, std::vector<int>{0});
  const Tensor x = Tensor::from_vector<float>({-1.0f, -0.5f, 0.1234f, 2.05f, 2.1f, 30.0f}, {6});
  const Tensor scale = Tensor::scalar<float>(0.01f), zp = Tensor::scalar<uint8_t>(50);
  const Tensor y(DType::kF32, {6});
  const Tensor dy = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {6});
  Tensor dx(DType::kF32, {6});
  train::NodeState state;
  const Tensor* ins[] = {&x, &scale, &zp};
  const Tensor* outs[] = {&y};
  const Tensor* gouts[] = {&dy};
  Tensor* gins[] = {&dx, nullptr, nullptr};
  train::BackwardContext c{n, ins, outs, gouts, gins, state, nullptr};
  op->backward(c);
  const std::vector<float> want = {0, 2, 3, 4, 0, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(dx.data<float>()[i], want[static_cast<size_t>(i)]) << i;

  // The weight form (no scale input): the scale covers every value, the gradient passes everywhere.
  const Tensor* w_ins[] = {&x};
  Tensor* w_gins[] = {&dx};
  train::BackwardContext cw{n, w_ins, outs, gouts, w_gins, state, nullptr};
  op->backward(cw);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(dx.data<float>()[i], dy.data<float>()[i]) << i;
}

struct Calibrated {
  std::shared_ptr<Model> float_model;
  std::map<std::string, Range> ranges;
  Tensor probe;
};

Calibrated calibrated_small_cnn() {
  Calibrated c;
  c.float_model = prepare_float_model(small_cnn());
  c.ranges = choose_ranges(collect_statistics(*c.float_model, random_tensor({64, 1, 10, 10}, -1.0f, 1.0f, 11), {}), {});
  c.probe = random_tensor({32, 1, 10, 10}, -1.0f, 1.0f, 12);
  return c;
}

TEST(Qat, FakeQuantizationFollowsTheInt8Rewrite) {
  const Calibrated c = calibrated_small_cnn();
  const QatGraph qat = insert_fake_quantization(*c.float_model, c.ranges, {});
  // Weights of conv1, conv2, fc; activations that are uint8 in the int8 graph: x, r1, p1 (MaxPool
  // on uint8), r2, r3, g, f (Flatten on uint8).
  EXPECT_EQ(qat.weight_fake_quants, 3);
  EXPECT_EQ(qat.activation_fake_quants, 7);
  EXPECT_EQ(count_fake_quants(qat.model->graph), 10);
  // Stripping gives back the float graph: same outputs.
  const Model stripped = strip_fake_quantization(*qat.model);
  EXPECT_EQ(count_fake_quants(stripped.graph), 0);
  EXPECT_EQ(stripped.graph.nodes.size(), c.float_model->graph.nodes.size());
  const Tensor a = run_output(*c.float_model, c.probe), b = run_output(stripped, c.probe);
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]);
}

TEST(Qat, PerTensorOptionGivesPerTensorWeightFakeQuantization) {
  const Calibrated c = calibrated_small_cnn();
  QuantizeOptions o;
  o.per_channel = false;
  const QatGraph qat = insert_fake_quantization(*c.float_model, c.ranges, o);
  for (const Node& n : qat.model->graph.nodes) {
    if (n.op_type == "FakeQuantize" && n.inputs.size() == 1) {
      EXPECT_EQ(n.attr_int("axis", 99), -1) << n.name;
    }
  }
}

TEST(Qat, ReducedRangeFakeQuantizesWeightsOnTheSixtyFourStepGrid) {
  const Calibrated c = calibrated_small_cnn();
  QuantizeOptions o;
  o.reduce_range = true;
  const QatGraph qat = insert_fake_quantization(*c.float_model, c.ranges, o);
  int weights = 0;
  for (const Node& n : qat.model->graph.nodes) {
    if (n.op_type == "FakeQuantize" && n.inputs.size() == 1) {
      EXPECT_EQ(n.attr_int("qmax", 127), kReducedWeightQmax) << n.name;
      ++weights;
    }
  }
  EXPECT_EQ(weights, 3);
  // The op: y = clamp(round(w / s), -64, 64) · s with s = max|w| / 64.
  GraphBuilder b;
  b.input("x", {3}).constant("w", Tensor::from_vector<float>({1.0f, -0.5f, 0.26f}, {1, 3}));
  b.node("FakeQuantize", "fq", {"w"}, {"wq"}, {{"axis", int64_t{0}}, {"qmax", int64_t{64}}}).node("Add", "add", {"x", "wq"}, {"y"});
  Model m = b.output("y", {1, 3}).model();
  m.graph.nodes[0].domain = "ai.xnn";
  const Tensor y = run_output(m, Tensor(DType::kF32, {1, 3}));
  const float s = 1.0f / 64.0f;
  EXPECT_FLOAT_EQ(y.data<float>()[0], 64 * s);
  EXPECT_FLOAT_EQ(y.data<float>()[1], -32 * s);
  EXPECT_FLOAT_EQ(y.data<float>()[2], std::nearbyint(0.26f / s) * s);
}

TEST(Qat, NothingToQuantizeIsAnError) {
  const Calibrated c = calibrated_small_cnn();
  EXPECT_THROW(insert_fake_quantization(*c.float_model, {}, {}), Error);
}

TEST(Qat, FineTuningReducesTheFakeQuantizedLossAndConvertsWithinOneStep) {
  const Calibrated c = calibrated_small_cnn();
  QatGraph qat = insert_fake_quantization(*c.float_model, c.ranges, {});
  Tensor labels(DType::kI64, {32});
  for (int64_t i = 0; i < 32; ++i) labels.data<int64_t>()[i] = i % 4;
  train::TrainingSession session(qat.model);
  EXPECT_EQ(session.parameter_count(), 8 * 9 + 8 + 8 * 8 * 9 + 8 + 4 * 8 + 4);  // weights and biases
  train::OptimizerConfig oc;
  oc.type = "adamw";
  auto opt = train::make_optimizer(oc);
  const float first = session.train_step(c.probe, labels).loss;
  opt->step(session.parameters(), 0.01);
  float loss = first;
  for (int i = 0; i < 20; ++i) {
    loss = session.train_step(c.probe, labels).loss;
    opt->step(session.parameters(), 0.01);
  }
  EXPECT_LT(loss, first * 0.9f) << "first " << first << ", after 20 steps " << loss;

  // The trained weights differ from the float model's, and the int8 model computes what the
  // fake-quantised model does up to one step of the output's range (integer accumulation and the
  // int32 bias round differently from float).
  const Model int8 = convert_qat_model(*qat.model, c.ranges, {});
  const Tensor fq = run_output(*qat.model, c.probe), got = run_output(int8, c.probe);
  const Tensor before = run_output(*c.float_model, c.probe);
  ASSERT_EQ(fq.shape(), got.shape());
  float lo = 0, hi = 0;
  double max_err = 0, moved = 0;
  for (int64_t i = 0; i < fq.numel(); ++i) {
    lo = std::min(lo, fq.data<float>()[i]);
    hi = std::max(hi, fq.data<float>()[i]);
    max_err = std::max(max_err, static_cast<double>(std::fabs(fq.data<float>()[i] - got.data<float>()[i])));
    moved = std::max(moved, static_cast<double>(std::fabs(fq.data<float>()[i] - before.data<float>()[i])));
  }
  const float step = uint8_params({lo, hi}).scale;
  EXPECT_LE(max_err, step) << "max error " << max_err << ", step " << step;
  EXPECT_GT(moved, 10 * step);  // training changed the model
  EXPECT_EQ(int8.metadata.options.at("quantization"), "int8 qat, per-channel weights");
}

}  // namespace
}  // namespace xnn::quantize
