// The QDQ form of int8 models (compress/quantize/qdq_form.h): every quantised operator becomes
// DequantizeLinear -> standard float op -> QuantizeLinear with the same parameters; the file has
// no QLinear*/com.microsoft op left, passes libonnx's checker, imports back, and computes what
// the QOperator model computes up to one requantisation step here and there.
#include <gtest/gtest.h>

#include <cmath>

#include "compress/quantize/qdq_form.h"
#include "compress/quantize/quantizer.h"
#include "compress/quantize/batched_run.h"
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

// The QDQ model exports as plain ONNX, imports back, and its outputs stay within `tolerance`
// (a fraction of the output range) of the QOperator model's.
void expect_qdq_equivalent(const Model& int8, const Tensor& probe, double tolerance) {
  QdqStats stats;
  const Model qdq = to_qdq_form(int8, &stats);
  EXPECT_GT(stats.converted, 0);
  for (const auto& [op, count] : op_counts(qdq.graph)) {
    EXPECT_EQ(op.find("QLinear"), std::string::npos) << op;
    EXPECT_EQ(op.find("com.microsoft"), std::string::npos) << op;
    EXPECT_NE(op, "QGemm");
  }
  const std::string bytes = export_onnx_bytes(qdq);  // runs libonnx's checker
  EXPECT_EQ(bytes.find("com.microsoft"), std::string::npos);
  const Model back = import_onnx_bytes(bytes.data(), bytes.size(), "qdq.onnx", "");
  const Tensor a = run_first_output(int8, probe, {});
  const Tensor b = run_first_output(back, probe, {});
  ASSERT_EQ(a.shape(), b.shape());
  double range = 0, worst = 0, mean = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    range = std::max(range, std::abs(double(a.data<float>()[i])));
    worst = std::max(worst, std::abs(double(a.data<float>()[i]) - b.data<float>()[i]));
    mean += std::abs(double(a.data<float>()[i]) - b.data<float>()[i]);
  }
  mean /= double(a.numel());
  EXPECT_LE(worst, tolerance * range) << "worst " << worst << " range " << range;
  EXPECT_LE(mean, 0.01 * range) << "mean " << mean;
}

TEST(QdqForm, SmallCnnWithQGemmAndQLinearAdd) {
  const PtqResult r = post_training_quantize(test::small_cnn(), random_tensor({16, 1, 10, 10}, -1, 1, 1), {});
  const Model qdq = to_qdq_form(*r.int8_model);
  const std::map<std::string, int> ops = op_counts(qdq.graph);
  EXPECT_EQ(ops.at("Conv"), 2);
  EXPECT_EQ(ops.at("Gemm"), 1);
  EXPECT_EQ(ops.at("Add"), 1);
  expect_qdq_equivalent(*r.int8_model, random_tensor({8, 1, 10, 10}, -1, 1, 2), 0.05);
}

TEST(QdqForm, ConcatAveragePoolAndMatMul) {
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
  const PtqResult r = post_training_quantize(b.model(), random_tensor({16, 2, 6, 6}, -2, 2, 3), {});
  const std::map<std::string, int> ops = op_counts(to_qdq_form(*r.int8_model).graph);
  EXPECT_EQ(ops.at("Concat"), 1);
  EXPECT_EQ(ops.at("AveragePool"), 1);
  EXPECT_EQ(ops.at("MatMul"), 1);
  expect_qdq_equivalent(*r.int8_model, random_tensor({4, 2, 6, 6}, -2, 2, 4), 0.05);
}

TEST(QdqForm, FloatModelsAreLeftAlone) {
  QdqStats stats;
  const Model m = to_qdq_form(test::small_cnn(), &stats);
  EXPECT_EQ(stats.converted, 0);
  EXPECT_EQ(op_counts(m.graph), op_counts(test::small_cnn().graph));
}

}  // namespace
}  // namespace xnn::quantize
