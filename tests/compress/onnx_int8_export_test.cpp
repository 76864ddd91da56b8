// Exporting quantised models to ONNX (engine/onnx/onnx_export.h): standard QLinear*/Q/DQ ops as
// they are, com.microsoft contrib ops with their domain and opset import; libonnx's checker
// accepts the file and importing it back gives the same model, bit for bit in its outputs.
#include <gtest/gtest.h>

#include "compress/quantize/float_model.h"
#include "compress/quantize/quantizer.h"
#include "engine/onnx/onnx_export.h"
#include "engine/onnx/onnx_import.h"
#include "tests/compress/test_graph.h"

namespace xnn::quantize {
namespace {

using test::random_tensor;

std::map<std::string, int> op_counts(const Graph& g) {
  std::map<std::string, int> counts;
  for (const Node& n : g.nodes) ++counts[(n.domain.empty() ? "" : n.domain + ".") + n.op_type];
  return counts;
}

void expect_round_trip(const Model& int8, const Tensor& probe) {
  const std::string bytes = export_onnx_bytes(int8);  // runs the ONNX checker
  EXPECT_NE(bytes.find("com.microsoft"), std::string::npos);
  const Model back = import_onnx_bytes(bytes.data(), bytes.size(), "exported.onnx", "");
  EXPECT_EQ(op_counts(back.graph), op_counts(int8.graph));
  const Tensor a = run_first_output(int8, probe, {});
  const Tensor b = run_first_output(back, probe, {});
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
}

TEST(OnnxInt8Export, SmallCnnRoundTrips) {
  const auto fm = prepare_float_model(test::small_cnn());
  const PtqResult r = post_training_quantize(test::small_cnn(), random_tensor({16, 1, 10, 10}, -1, 1, 1), {});
  const std::map<std::string, int> ops = op_counts(r.int8_model->graph);
  EXPECT_EQ(ops.at("com.microsoft.QGemm"), 1);
  EXPECT_EQ(ops.at("com.microsoft.QLinearAdd"), 1);
  EXPECT_EQ(ops.at("QLinearConv"), 2);
  expect_round_trip(*r.int8_model, random_tensor({8, 1, 10, 10}, -1, 1, 2));
}

TEST(OnnxInt8Export, ConcatAveragePoolMatMulAndExcludedNodesRoundTrip) {
  test::GraphBuilder b;
  b.input("x", {2, 6, 6})
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
  PtqOptions o;
  o.graph.exclude = {"reshape"};  // a float island: DequantizeLinear before, QuantizeLinear after
  const PtqResult r = post_training_quantize(b.model(), random_tensor({16, 2, 6, 6}, -2, 2, 3), o);
  const std::map<std::string, int> ops = op_counts(r.int8_model->graph);
  EXPECT_EQ(ops.at("com.microsoft.QLinearConcat"), 1);
  EXPECT_EQ(ops.at("com.microsoft.QLinearAveragePool"), 1);
  EXPECT_EQ(ops.at("QLinearMatMul"), 1);
  EXPECT_EQ(ops.at("DequantizeLinear"), 2);
  EXPECT_EQ(ops.at("QuantizeLinear"), 2);
  expect_round_trip(*r.int8_model, random_tensor({4, 2, 6, 6}, -2, 2, 4));
}

TEST(OnnxInt8Export, FloatModelsGetNoContribOpsetImport) {
  const std::string bytes = export_onnx_bytes(test::small_cnn());
  EXPECT_EQ(bytes.find("com.microsoft"), std::string::npos);
}

}  // namespace
}  // namespace xnn::quantize
