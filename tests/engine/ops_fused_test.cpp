// Tests for the fused ops (engine/ops/fused.cpp, domain ai.xnn): FusedConv and FusedGemm against
// the unfused composition of registry ops (Conv/Gemm, Add, the activation op) for every
// activation, with and without Z, with groups; shape inference, cost, and errors naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/ops/op_helpers.h"
#include "engine/runtime/executor.h"
#include "tests/engine/op_test_util.h"

namespace xnn {
namespace {

using op_test::Attrs;
using op_test::run_op;

Tensor run1(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {},
            const std::string& domain = "") {
  return run_op(op, inputs, attrs, 1, domain).at(0);
}

Tensor random_tensor(std::mt19937& rng, Shape shape, float lo = -2.0f, float hi = 2.0f) {
  Tensor t(DType::kF32, std::move(shape));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(shape_str(got.shape()), shape_str(want.shape())) << what;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.data<float>()[i], w = want.data<float>()[i];
    ASSERT_NEAR(g, w, tol * (1.0 + std::fabs(w))) << what << " at flat index " << i;
  }
}

template <typename F>
void expect_error(F&& f, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "expected an Error containing '" << text << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'node_under_test'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(text), std::string::npos) << msg;
  }
}

// One activation as the fused attribute and as the standalone ONNX op(s).
struct ActCase {
  std::string name;
  std::vector<float> params;
};

const std::vector<ActCase>& act_cases() {
  static const std::vector<ActCase> cases = {
      {"", {}},          {"Relu", {}},         {"Clip", {-0.5f, 0.75f}}, {"LeakyRelu", {0.1f}},
      {"HardSwish", {}}, {"HardSigmoid", {0.3f, 0.4f}}, {"Sigmoid", {}}, {"Silu", {}},
  };
  return cases;
}

// The activation computed by the unfused ops.
Tensor unfused_activation(const ActCase& a, const Tensor& x) {
  if (a.name.empty()) return x;
  if (a.name == "Clip") {
    return run1("Clip", {x, Tensor::scalar<float>(a.params[0]), Tensor::scalar<float>(a.params[1])});
  }
  if (a.name == "LeakyRelu") return run1("LeakyRelu", {x}, {{"alpha", a.params[0]}});
  if (a.name == "HardSigmoid") return run1("HardSigmoid", {x}, {{"alpha", a.params[0]}, {"beta", a.params[1]}});
  if (a.name == "Silu") return run1("Mul", {x, run1("Sigmoid", {x})});
  return run1(a.name, {x});
}

Attrs with_activation(Attrs attrs, const ActCase& a) {
  attrs["activation"] = a.name;
  if (!a.params.empty()) attrs["activation_params"] = a.params;
  return attrs;
}

TEST(FusedOps, RegisteredInTheXnnDomain) {
  const OpRegistry& r = OpRegistry::builtin();
  ASSERT_NE(r.find("FusedConv", "ai.xnn"), nullptr);
  ASSERT_NE(r.find("FusedGemm", "ai.xnn"), nullptr);
  EXPECT_EQ(r.find("FusedConv"), nullptr);  // not in the ONNX domain
  EXPECT_EQ(r.find("FusedConv", "ai.xnn")->max_inputs, 4);
  EXPECT_EQ(r.find("FusedGemm", "ai.xnn")->max_inputs, 3);
}

TEST(FusedConv, MatchesConvAddActivationForEveryActivation) {
  std::mt19937 rng(1);
  struct Geometry {
    Shape x, w;
    Attrs attrs;
  };
  const std::vector<Geometry> geometries = {
      {{1, 4, 7, 6}, {6, 4, 3, 3}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
      {{2, 4, 8, 8}, {8, 2, 3, 3},  // groups with stride 2
       {{"group", int64_t{2}}, {"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 0, 1, 0}}}},
      {{1, 6, 5, 5}, {6, 1, 3, 3}, {{"group", int64_t{6}}, {"auto_pad", std::string("SAME_UPPER")}}},  // depthwise
      {{1, 3, 9}, {5, 3, 2}, {{"dilations", std::vector<int64_t>{2}}}},                                  // 1-D
  };
  for (const Geometry& geo : geometries) {
    const Tensor x = random_tensor(rng, geo.x);
    const Tensor w = random_tensor(rng, geo.w, -0.5f, 0.5f);
    const Tensor b = random_tensor(rng, {geo.w[0]});
    const Tensor conv = run1("Conv", {x, w, b}, geo.attrs);
    const Tensor z = random_tensor(rng, conv.shape());
    const Tensor conv_z = run1("Add", {conv, z});
    for (const ActCase& a : act_cases()) {
      const std::string what = "geometry " + shape_str(geo.x) + " activation '" + a.name + "'";
      const Attrs attrs = with_activation(geo.attrs, a);
      expect_close(run1("FusedConv", {x, w, b}, attrs, "ai.xnn"), unfused_activation(a, conv), 1e-6, what);
      expect_close(run1("FusedConv", {x, w, b, z}, attrs, "ai.xnn"), unfused_activation(a, conv_z), 1e-6,
                   what + " with Z");
      // No bias, Z given: B is an absent optional input.
      const Tensor conv_nb = run1("Add", {run1("Conv", {x, w}, geo.attrs), z});
      expect_close(run1("FusedConv", {x, w, Tensor(), z}, attrs, "ai.xnn"), unfused_activation(a, conv_nb), 1e-6,
                   what + " without bias");
    }
  }
}

TEST(FusedConv, ReluAndClipAgreeBitForBit) {
  // Piecewise-linear activations involve no rounding: fused and unfused are identical.
  std::mt19937 rng(2);
  const Tensor x = random_tensor(rng, {1, 3, 6, 6});
  const Tensor w = random_tensor(rng, {4, 3, 3, 3});
  const Tensor z = random_tensor(rng, {1, 4, 4, 4});
  const Tensor want = run1("Relu", {run1("Add", {run1("Conv", {x, w}), z})});
  const Tensor got = run1("FusedConv", {x, w, Tensor(), z}, {{"activation", std::string("Relu")}}, "ai.xnn");
  for (int64_t i = 0; i < want.numel(); ++i) EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]);
}

TEST(FusedConv, DefaultActivationParams) {
  std::mt19937 rng(3);
  const Tensor x = random_tensor(rng, {1, 2, 5, 5});
  const Tensor w = random_tensor(rng, {3, 2, 1, 1});
  const Tensor conv = run1("Conv", {x, w});
  // Absent params: LeakyRelu alpha 0.01, HardSigmoid 0.2 / 0.5, Clip unbounded.
  expect_close(run1("FusedConv", {x, w}, {{"activation", std::string("LeakyRelu")}}, "ai.xnn"),
               run1("LeakyRelu", {conv}), 1e-6, "LeakyRelu");
  expect_close(run1("FusedConv", {x, w}, {{"activation", std::string("HardSigmoid")}}, "ai.xnn"),
               run1("HardSigmoid", {conv}), 1e-6, "HardSigmoid");
  expect_close(run1("FusedConv", {x, w}, {{"activation", std::string("Clip")}}, "ai.xnn"), conv, 0, "Clip");
}

TEST(FusedConv, ShapeInferenceAndCostFollowConv) {
  const OpRegistry& r = OpRegistry::builtin();
  Node n;
  n.op_type = "FusedConv";
  n.domain = "ai.xnn";
  n.name = "node_under_test";
  n.inputs = {0, 1, 2, 3};
  n.outputs = {4};
  n.attrs = {{"strides", std::vector<int64_t>{2, 2}}, {"activation", std::string("Relu")}};
  const std::vector<TensorInfo> in = {{DType::kF32, {1, 3, 8, 8}},
                                      {DType::kF32, {4, 3, 1, 1}},
                                      {DType::kF32, {4}},
                                      {DType::kF32, {1, 4, 4, 4}}};
  const OpSchema& s = *r.find("FusedConv", "ai.xnn");
  const std::vector<TensorInfo> out = infer_node(s, n, in, 1);
  EXPECT_EQ(out[0].shape, (Shape{1, 4, 4, 4}));
  EXPECT_EQ(out[0].dtype, DType::kF32);
  // Conv's MACs (64 outputs x 3) plus one op per output for +Z and one for the activation.
  const OpCost c = s.cost(n, in, out);
  EXPECT_DOUBLE_EQ(c.macs, 64.0 * 3 + 64 + 64);
  EXPECT_DOUBLE_EQ(c.bytes_read, 4.0 * (192 + 12 + 4 + 64));
  EXPECT_DOUBLE_EQ(c.bytes_written, 4.0 * 64);
}

TEST(FusedConv, ErrorsNameTheNode) {
  std::mt19937 rng(4);
  const Tensor x = random_tensor(rng, {1, 2, 4, 4});
  const Tensor w = random_tensor(rng, {3, 2, 3, 3});
  expect_error([&] { run1("FusedConv", {x, w}, {{"activation", std::string("Gelu")}}, "ai.xnn"); },
               "unknown fused activation 'Gelu'");
  expect_error([&] { run1("FusedConv", {x, w, Tensor(), random_tensor(rng, {1, 3, 2, 1})}, {}, "ai.xnn"); },
               "Z has shape [1,3,2,1], expected exactly Y's shape [1,3,2,2]");
  expect_error([&] { run1("FusedConv", {x, w, Tensor(), random_tensor(rng, {1, 3, 1, 1})}, {}, "ai.xnn"); },
               "no broadcasting");
  expect_error(
      [&] {
        run1("FusedConv", {x, w},
             {{"activation", std::string("Clip")}, {"activation_params", std::vector<float>{0.0f}}}, "ai.xnn");
      },
      "activation Clip takes 2 activation_params, got 1");
  expect_error(
      [&] {
        run1("FusedConv", {x, w},
             {{"activation", std::string("Relu")}, {"activation_params", std::vector<float>{1.0f}}}, "ai.xnn");
      },
      "takes no activation_params");
  // Conv's own checks still apply, and name the fused node.
  expect_error([&] { run1("FusedConv", {x, random_tensor(rng, {3, 5, 3, 3})}, {}, "ai.xnn"); }, "channels");
  Tensor x64(DType::kF64, {1, 2, 4, 4}), w64(DType::kF64, {3, 2, 3, 3});
  expect_error([&] { run1("FusedConv", {x64, w64}, {}, "ai.xnn"); }, "f32 only");
}

TEST(FusedGemm, MatchesGemmActivationForEveryActivation) {
  std::mt19937 rng(5);
  struct GemmCase {
    Shape a, b, c;  // c empty: no C
    Attrs attrs;
  };
  const std::vector<GemmCase> cases = {
      {{3, 5}, {5, 4}, {4}, {}},
      {{3, 5}, {4, 5}, {3, 4}, {{"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}},
      {{5, 3}, {5, 4}, {}, {{"transA", int64_t{1}}}},
      {{2, 6}, {6, 3}, {2, 1}, {{"beta", 0.0f}}},
  };
  for (const GemmCase& gc : cases) {
    std::vector<Tensor> inputs = {random_tensor(rng, gc.a), random_tensor(rng, gc.b)};
    if (!gc.c.empty()) inputs.push_back(random_tensor(rng, gc.c));
    const Tensor gemm = run1("Gemm", inputs, gc.attrs);
    for (const ActCase& a : act_cases()) {
      expect_close(run1("FusedGemm", inputs, with_activation(gc.attrs, a), "ai.xnn"), unfused_activation(a, gemm),
                   1e-6, "A " + shape_str(gc.a) + " activation '" + a.name + "'");
    }
  }
}

TEST(FusedGemm, ErrorsNameTheNode) {
  std::mt19937 rng(6);
  expect_error([&] { run1("FusedGemm", {random_tensor(rng, {2, 3}), random_tensor(rng, {4, 2})}, {}, "ai.xnn"); },
               "inner dimensions differ");
  expect_error(
      [&] {
        run1("FusedGemm", {random_tensor(rng, {2, 3}), random_tensor(rng, {3, 2})},
             {{"activation", std::string("relu")}}, "ai.xnn");
      },
      "unknown fused activation 'relu'");
}

}  // namespace
}  // namespace xnn
