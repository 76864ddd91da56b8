// The int8 rewrite (quantize_graph.h) and the calibration pipeline (quantizer.h) on a small
// conv-relu-pool-conv-add-gap-gemm network.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compress/quantize/float_model.h"
#include "compress/quantize/quantizer.h"
#include "compress/quantize/sensitivity.h"
#include "engine/kernels/cpu_features.h"
#include "engine/runtime/session.h"
#include "tests/compress/test_graph.h"

namespace xnn::quantize {
namespace {

using test::random_tensor;
using test::small_cnn;

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op ? 1 : 0;
  return n;
}

const Node* find_node(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

struct Fixture {
  std::shared_ptr<Model> float_model;
  Tensor calibration, probe;
  std::map<std::string, Range> ranges;
};

Fixture calibrated(CalibrationMethod method = CalibrationMethod::kMinMax) {
  Fixture f;
  f.float_model = prepare_float_model(small_cnn());
  f.calibration = random_tensor({64, 1, 10, 10}, -1.0f, 1.0f, 11);
  f.probe = random_tensor({32, 1, 10, 10}, -1.0f, 1.0f, 12);
  CalibrationSettings s;
  s.method = method;
  f.ranges = choose_ranges(collect_statistics(*f.float_model, f.calibration, {}), s);
  return f;
}

TEST(QuantizeGraph, CalibrationObservesEveryActivation) {
  const Fixture f = calibrated();
  for (const char* v : {"x", "c1", "r1", "p1", "c2", "r2", "s", "r3", "g", "f", "y"}) {
    EXPECT_TRUE(f.ranges.count(v)) << v;
  }
  EXPECT_EQ(f.ranges.at("r1").lo, 0.0f);  // a ReLU output
  EXPECT_LT(f.ranges.at("c1").lo, 0.0f);  // its input is two-sided
  EXPECT_LE(f.ranges.at("x").lo, -0.9f);
  EXPECT_GE(f.ranges.at("x").hi, 0.9f);
}

TEST(QuantizeGraph, Int8GraphHasMinimalQuantizeDequantizePairs) {
  const Fixture f = calibrated();
  QuantizeReport report;
  const Model q = quantize_model_graph(*f.float_model, f.ranges, {}, &report);
  const Graph& g = q.graph;
  // One QuantizeLinear at the float input; the QGemm writes the float output itself.
  EXPECT_EQ(count_ops(g, "QuantizeLinear"), 1);
  EXPECT_EQ(count_ops(g, "DequantizeLinear"), 0);
  EXPECT_EQ(count_ops(g, "QLinearConv"), 2);
  EXPECT_EQ(count_ops(g, "QLinearAdd"), 1);
  EXPECT_EQ(count_ops(g, "QLinearGlobalAveragePool"), 1);
  EXPECT_EQ(count_ops(g, "QGemm"), 1);
  EXPECT_EQ(count_ops(g, "Relu"), 0);  // all three fused into requantisation
  EXPECT_EQ(count_ops(g, "MaxPool"), 1);
  EXPECT_EQ(count_ops(g, "Flatten"), 1);
  EXPECT_EQ(report.quantize_nodes, 1);
  EXPECT_EQ(report.dequantize_nodes, 0);
  EXPECT_EQ(report.fused_activations, 3);
  EXPECT_EQ(report.fp32_nodes, 0);
  EXPECT_EQ(report.int8_nodes, 7);
  EXPECT_EQ(report.int8_layers, (std::vector<std::string>{"conv1", "conv2", "add", "gap", "fc"}));
  EXPECT_TRUE(report.fp32_layers.empty());
  // The scheme of the int8 kernels: uint8 activations, int8 per-channel weights, int32 bias.
  const Node* conv = find_node(g, "conv1");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->op_type, "QLinearConv");
  EXPECT_EQ(g.value(conv->inputs[0]).dtype, DType::kU8);
  EXPECT_EQ(g.value(conv->inputs[3]).data->dtype(), DType::kI8);
  EXPECT_EQ(g.value(conv->inputs[4]).data->shape(), (Shape{8}));
  EXPECT_EQ(g.value(conv->inputs[8]).data->dtype(), DType::kI32);
  EXPECT_EQ(g.value(conv->outputs[0]).dtype, DType::kU8);
  EXPECT_EQ(g.value(conv->outputs[0]).quant->zero_point, std::vector<int32_t>{0});  // ReLU fused: zp 0
  const Node* fc = find_node(g, "fc");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->domain, "com.microsoft");
  EXPECT_EQ(g.value(fc->outputs[0]).name, "y");
  // MaxPool runs on the uint8 tensor, sharing conv1's parameters.
  const Node* pool = find_node(g, "pool1");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(g.value(pool->inputs[0]).quant, g.value(pool->outputs[0]).quant);
  // Less than a third of the float weights' bytes.
  EXPECT_LT(constant_bytes(g) * 3, constant_bytes(f.float_model->graph));
}

TEST(QuantizeGraph, Int8OutputIsCloseToFloat) {
  // "A quantisation step": that of the output's min-max range (the errors of five quantised
  // layers, each rounding to half a step of its own, add up there).
  const float step = uint8_params(calibrated(CalibrationMethod::kMinMax).ranges.at("y")).scale;
  for (CalibrationMethod m : {CalibrationMethod::kMinMax, CalibrationMethod::kPercentile, CalibrationMethod::kKl,
                              CalibrationMethod::kMse}) {
    const Fixture f = calibrated(m);
    const Model q = quantize_model_graph(*f.float_model, f.ranges, {});
    const Tensor ref = run_first_output(*f.float_model, f.probe, {});
    const Tensor got = run_first_output(q, f.probe, {});
    ASSERT_EQ(ref.shape(), got.shape());
    double max_err = 0, mean_err = 0;
    for (int64_t i = 0; i < ref.numel(); ++i) {
      const double d = std::fabs(ref.data<float>()[i] - got.data<float>()[i]);
      max_err = std::max(max_err, d);
      mean_err += d / static_cast<double>(ref.numel());
    }
    const std::string name = calibration_method_name(m);
    if (m == CalibrationMethod::kKl) {
      // KL clips the zero-heavy ReLU outputs of this random network hard (r1 to ~40 % of its
      // maximum with 64 calibration images); still a usable model, not within a few steps.
      EXPECT_GT(sqnr_db(ref, got), 20.0) << name;
      continue;
    }
    EXPECT_LT(mean_err, 1.0 * step) << name << ": output step " << step;
    EXPECT_LT(max_err, 8.0 * step) << name << ": output step " << step;
    EXPECT_GT(sqnr_db(ref, got), 35.0) << name;
  }
}

TEST(QuantizeGraph, ExcludedNodeStaysFloatBehindDequantize) {
  const Fixture f = calibrated();
  QuantizeOptions o;
  o.exclude = {"conv2"};
  QuantizeReport report;
  const Model q = quantize_model_graph(*f.float_model, f.ranges, o, &report);
  const Node* conv2 = find_node(q.graph, "conv2");
  ASSERT_NE(conv2, nullptr);
  EXPECT_EQ(conv2->op_type, "Conv");
  EXPECT_EQ(q.graph.value(conv2->inputs[0]).dtype, DType::kF32);
  EXPECT_EQ(q.graph.value(conv2->inputs[1]).data->dtype(), DType::kF32);
  // conv2's input is dequantised once; its Relu stays float; the add quantises r2 again.
  EXPECT_EQ(count_ops(q.graph, "DequantizeLinear"), 1);
  EXPECT_EQ(count_ops(q.graph, "QuantizeLinear"), 2);
  EXPECT_EQ(count_ops(q.graph, "Relu"), 1);
  EXPECT_EQ(report.fp32_layers, std::vector<std::string>{"conv2"});
  // Still runs and stays close.
  const Tensor ref = run_first_output(*f.float_model, f.probe, {});
  EXPECT_GT(sqnr_db(ref, run_first_output(q, f.probe, {})), 25.0);
}

TEST(QuantizeGraph, UnknownExcludedNameIsAnErrorListingLayers) {
  const Fixture f = calibrated();
  QuantizeOptions o;
  o.exclude = {"conv9"};
  try {
    quantize_model_graph(*f.float_model, f.ranges, o);
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'conv9'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("conv1, conv2, add, gap, fc"), std::string::npos) << msg;
  }
}

TEST(QuantizeGraph, PerTensorWeightsUseOneScale) {
  const Fixture f = calibrated();
  QuantizeOptions o;
  o.per_channel = false;
  const Model q = quantize_model_graph(*f.float_model, f.ranges, o);
  const Node* conv = find_node(q.graph, "conv1");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(q.graph.value(conv->inputs[4]).data->numel(), 1);
  const Tensor ref = run_first_output(*f.float_model, f.probe, {});
  EXPECT_GT(sqnr_db(ref, run_first_output(q, f.probe, {})), 20.0);
}

// --reduce-range: every int8 weight in [-64, 64]; on an AVX2 CPU without VNNI (XNN_ISA=avx2 runs
// this test there too, tests/CMakeLists.txt) the convs take the vpmaddubsw GEMM (c4), which
// full-range weights never get there (c2).
TEST(QuantizeGraph, ReducedRangeWeightsTakeTheVpmaddubswGemmWithoutVnni) {
  const Fixture f = calibrated();
  QuantizeOptions o;
  o.reduce_range = true;
  const Model q = quantize_model_graph(*f.float_model, f.ranges, o);
  int weight_tensors = 0;
  for (const Node& n : q.graph.nodes) {
    if (n.op_type != "QLinearConv" && n.op_type != "QGemm" && n.op_type != "QLinearMatMul") continue;
    const Tensor& w = *q.graph.value(n.inputs[3]).data;
    ASSERT_EQ(w.dtype(), DType::kI8) << n.name;
    int max_abs = 0;
    for (int64_t i = 0; i < w.numel(); ++i) max_abs = std::max(max_abs, std::abs(int(w.data<int8_t>()[i])));
    EXPECT_EQ(max_abs, kReducedWeightQmax) << n.name;
    ++weight_tensors;
  }
  EXPECT_EQ(weight_tensors, 3);
  const Tensor ref = run_first_output(*f.float_model, f.probe, {});
  EXPECT_GT(sqnr_db(ref, run_first_output(q, f.probe, {})), 30.0);

  const Model full = quantize_model_graph(*f.float_model, f.ranges, {});
  auto conv_kernels = [&](const Model& m) {
    Session s(std::make_shared<Model>(m));
    s.run({{s.inputs().at(0).name, f.probe}});
    std::string names;
    for (const std::string& k : s.kernel_names()) names += k + " ";
    return names;
  };
  const std::string reduced = conv_kernels(q), wide = conv_kernels(full);
  if (kernels::best_isa() == kernels::Isa::kAvx2 && !kernels::vnni_enabled()) {
    EXPECT_NE(reduced.find("qs8_gemm_4x16c4__avx2"), std::string::npos) << reduced;
    EXPECT_EQ(reduced.find("c2__avx2"), std::string::npos) << reduced;
    EXPECT_EQ(wide.find("c4__avx2"), std::string::npos) << wide;
  }
}

// Depthwise convs keep full-range weights under reduce_range (no vpmaddubsw path to gain, the
// most precision to lose); grouped convs with several input channels per group and linear layers
// take the reduced range.
TEST(QuantizeGraph, ReducedRangeSkipsDepthwiseConvs) {
  QuantizeOptions reduced;
  reduced.reduce_range = true;
  Node conv;
  conv.op_type = "Conv";
  Node depthwise = conv, grouped = conv, gemm;
  depthwise.attrs["group"] = Attribute(int64_t{8});
  grouped.attrs["group"] = Attribute(int64_t{2});
  gemm.op_type = "Gemm";
  const Tensor dw_w(DType::kF32, {8, 1, 3, 3}), grouped_w(DType::kF32, {8, 4, 3, 3}), conv_w(DType::kF32, {8, 8, 1, 1}),
      fc_w(DType::kF32, {10, 32});
  EXPECT_EQ(weight_qmax(reduced, depthwise, dw_w), kWeightQmax);
  EXPECT_EQ(weight_qmax(reduced, grouped, grouped_w), kReducedWeightQmax);
  EXPECT_EQ(weight_qmax(reduced, conv, conv_w), kReducedWeightQmax);
  EXPECT_EQ(weight_qmax(reduced, gemm, fc_w), kReducedWeightQmax);
  EXPECT_EQ(weight_qmax({}, conv, conv_w), kWeightQmax);
  EXPECT_EQ(weight_qmax({}, depthwise, dw_w), kWeightQmax);
}

TEST(QuantizeGraph, MatMulConcatAndAveragePoolBecomeInt8) {
  // conv 1x1 -> concat with the input -> average pool -> reshape [N, 6, 2, 2] -> [N, 2, 12] -> matmul
  test::GraphBuilder full;
  full.input("x", {2, 6, 6})
      .random_constant("w", {4, 2, 1, 1}, 0.5f, 1)
      .random_constant("m", {12, 5}, 0.3f, 2)
      .constant("shape", Tensor::from_vector<int64_t>({0, 2, 12}, {3}))
      .node("Conv", "conv", {"x", "w"}, {"c"}, {{"kernel_shape", std::vector<int64_t>{1, 1}}})
      .node("Concat", "cat", {"c", "x"}, {"k"}, {{"axis", int64_t{1}}})
      .node("AveragePool", "avg", {"k"}, {"a"},
            {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{3, 3}}})
      .node("Reshape", "reshape", {"a", "shape"}, {"r"})
      .node("MatMul", "mm", {"r", "m"}, {"y"})
      .output("y", {2, 5});
  const auto float_model = prepare_float_model(full.model());
  const Tensor calib = random_tensor({16, 2, 6, 6}, -2.0f, 2.0f, 3);
  const auto ranges = choose_ranges(collect_statistics(*float_model, calib, {}), {});
  QuantizeReport report;
  const Model q = quantize_model_graph(*float_model, ranges, {}, &report);
  EXPECT_EQ(count_ops(q.graph, "QLinearConcat"), 1);
  EXPECT_EQ(count_ops(q.graph, "QLinearAveragePool"), 1);
  EXPECT_EQ(count_ops(q.graph, "QLinearMatMul"), 1);
  EXPECT_EQ(count_ops(q.graph, "QuantizeLinear"), 1);    // x, shared by conv and concat
  EXPECT_EQ(count_ops(q.graph, "DequantizeLinear"), 1);  // y
  EXPECT_EQ(report.int8_layers, (std::vector<std::string>{"conv", "cat", "avg", "mm"}));
  const Tensor probe = random_tensor({8, 2, 6, 6}, -2.0f, 2.0f, 4);
  EXPECT_GT(sqnr_db(run_first_output(*float_model, probe, {}), run_first_output(q, probe, {})), 25.0);
}

TEST(QuantizeGraph, Relu6FusesAsTheRequantisationClampButAShiftedClipDoesNot) {
  // conv -> Clip(0, 6) (ReLU6) -> conv -> Clip(1, 6)
  test::GraphBuilder g;
  g.input("x", {1, 6, 6})
      .random_constant("w", {4, 1, 3, 3}, 3.0f, 7)
      .random_constant("w2", {4, 4, 1, 1}, 1.0f, 8)
      .constant("zero", Tensor::scalar<float>(0.0f))
      .constant("six", Tensor::scalar<float>(6.0f))
      .constant("one", Tensor::scalar<float>(1.0f))
      .node("Conv", "conv", {"x", "w"}, {"c"}, {{"kernel_shape", std::vector<int64_t>{3, 3}}})
      .node("Clip", "relu6", {"c", "zero", "six"}, {"r"})
      .node("Conv", "conv_b", {"r", "w2"}, {"d"}, {{"kernel_shape", std::vector<int64_t>{1, 1}}})
      .node("Clip", "shifted", {"d", "one", "six"}, {"y"})
      .output("y", {4, 4, 4});
  const auto fm = prepare_float_model(g.model());
  const Tensor calib = random_tensor({32, 1, 6, 6}, -1.0f, 1.0f, 9);
  const auto ranges = choose_ranges(collect_statistics(*fm, calib, {}), {});
  ASSERT_GT(collect_statistics(*fm, calib, {}).histograms.at("c").observed_max(), 6.0f);  // the clip matters
  QuantizeReport report;
  const Model q = quantize_model_graph(*fm, ranges, {}, &report);
  EXPECT_EQ(report.fused_activations, 1);
  EXPECT_EQ(count_ops(q.graph, "Clip"), 1);  // Clip(1, 6) keeps its lower bound: float
  const Node* conv = find_node(q.graph, "conv");
  ASSERT_NE(conv, nullptr);
  const QuantParams& out = *q.graph.value(conv->outputs[0]).quant;
  EXPECT_EQ(out.zero_point, std::vector<int32_t>{0});
  EXPECT_LE(out.scale[0] * 255.0f, 6.0f * (1 + 1e-6f));  // codes 0..255 cover at most [0, 6]
  const Tensor probe = random_tensor({8, 1, 6, 6}, -1.0f, 1.0f, 10);
  EXPECT_GT(sqnr_db(run_first_output(*fm, probe, {}), run_first_output(q, probe, {})), 30.0);
}

TEST(QuantizeGraph, PipelineRecordsTheMethodAndChecksExclusionsFirst) {
  PtqOptions o;
  o.calibration.method = CalibrationMethod::kKl;
  const PtqResult r = post_training_quantize(small_cnn(), random_tensor({16, 1, 10, 10}, -1.0f, 1.0f, 5), o);
  EXPECT_EQ(r.stats.samples, 16);
  EXPECT_NE(r.int8_model->metadata.options.at("quantization").find("kl"), std::string::npos);
  EXPECT_EQ(r.report.int8_layers.size(), 5u);
  o.graph.exclude = {"nope"};
  EXPECT_THROW(post_training_quantize(small_cnn(), random_tensor({16, 1, 10, 10}, -1.0f, 1.0f, 5), o), Error);
}

TEST(QuantizeGraph, CalibrationRecordsChannelMeans) {
  const Fixture f = calibrated();
  const CalibrationStats stats = collect_statistics(*f.float_model, f.calibration, {});
  const std::vector<double>& x = stats.channel_means.at("x");
  ASSERT_EQ(x.size(), 1u);  // [N, 1, 10, 10]
  double sum = 0;
  for (int64_t i = 0; i < f.calibration.numel(); ++i) sum += f.calibration.data<float>()[i];
  EXPECT_NEAR(x[0], sum / static_cast<double>(f.calibration.numel()), 1e-9);
  EXPECT_FALSE(stats.channel_means.at("c1").empty());  // one per output channel of the first conv
}

// Weights that all round the same way (0.3 with a channel maximum of 1: 38/127 = 0.2992) on inputs
// with a large positive mean shift every output by the same amount; bias correction takes it back.
// Conv (3x3, 8 -> 4 channels, with bias) and Gemm (transB, without bias).
TEST(QuantizeGraph, BiasCorrectionRemovesTheMeanShiftOfWeightRounding) {
  std::vector<float> wc(4 * 8 * 9, 0.3f), wg(3 * 16, 0.3f);
  for (int o = 0; o < 4; ++o) wc[static_cast<size_t>(o * 72)] = 1.0f;
  for (int o = 0; o < 3; ++o) wg[static_cast<size_t>(o * 16)] = 1.0f;
  test::GraphBuilder conv;
  conv.input("x", {8, 6, 6})
      .constant("w", Tensor::from_vector<float>(wc, {4, 8, 3, 3}))
      .constant("b", Tensor::from_vector<float>({0.5f, -0.5f, 1.0f, 0.0f}, {4}))
      .node("Conv", "conv", {"x", "w", "b"}, {"y"}, {{"kernel_shape", std::vector<int64_t>{3, 3}}})
      .output("y", {4, 4, 4});
  test::GraphBuilder gemm;
  gemm.input("x", {16})
      .constant("w", Tensor::from_vector<float>(wg, {3, 16}))
      .node("Gemm", "fc", {"x", "w"}, {"y"}, {{"transB", int64_t{1}}})
      .output("y", {3});
  // The shift: (38/127 − 0.3) per rounded weight (71 of the conv's 72, 15 of the Gemm's 16) times
  // the input mean 3.
  const double per_weight = (38.0 / 127.0 - 0.3) * 3.0;
  const struct {
    test::GraphBuilder* builder;
    Shape calib, probe;
    double expected_shift;
  } cases[] = {{&conv, {32, 8, 6, 6}, {16, 8, 6, 6}, 71 * per_weight}, {&gemm, {64, 16}, {32, 16}, 15 * per_weight}};
  for (const auto& c : cases) {
    const Model model = c.builder->model();
    const Tensor calib = random_tensor(c.calib, 2.0f, 4.0f, 21), probe = random_tensor(c.probe, 2.0f, 4.0f, 22);
    const auto mean_shift = [&](bool correct) {
      PtqOptions o;
      o.graph.bias_correction = correct;
      const PtqResult r = post_training_quantize(model, calib, o);
      const Tensor ref = run_first_output(*r.float_model, probe, {}), got = run_first_output(*r.int8_model, probe, {});
      double shift = 0;
      for (int64_t i = 0; i < ref.numel(); ++i) shift += got.data<float>()[i] - ref.data<float>()[i];
      return shift / static_cast<double>(ref.numel());
    };
    const double plain = mean_shift(false), corrected = mean_shift(true);
    EXPECT_NEAR(plain, c.expected_shift, 0.3 * std::fabs(c.expected_shift)) << "the rounding's shift, uncorrected";
    EXPECT_LT(std::fabs(corrected), 0.25 * std::fabs(plain)) << "plain " << plain << ", corrected " << corrected;
  }
}

TEST(QuantizeGraph, PreparedModelNamesEveryNodeUniquely) {
  Model m = small_cnn();
  m.graph.nodes[0].name = "";
  m.graph.nodes[2].name = "relu1";  // now two nodes are called relu1
  const auto p = prepare_float_model(m);
  std::set<std::string> names;
  for (const Node& n : p->graph.nodes) {
    EXPECT_FALSE(n.name.empty());
    EXPECT_TRUE(names.insert(n.name).second) << n.name;
  }
}

}  // namespace
}  // namespace xnn::quantize
