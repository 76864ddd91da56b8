// Elementwise op family: every op run through run_node with the built-in registry and checked
// against hand-computed values or std:: math.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "engine/core/op_registry.h"
#include "engine/runtime/executor.h"

namespace xnn {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

constexpr DType kNumericDTypes[] = {DType::kF32, DType::kF16, DType::kF64, DType::kI8,
                                    DType::kU8,  DType::kI32, DType::kI64};

// Runs one node; a null input is an optional input left out. `num_outputs` output slots are
// requested, except those listed in `skipped_outputs`.
std::vector<Tensor> run_op(const std::string& op, std::vector<const Tensor*> inputs,
                           std::map<std::string, Attribute> attrs = {}, int num_outputs = 1,
                           std::vector<int> skipped_outputs = {}) {
  Node node;
  node.op_type = op;
  node.name = "test_" + op;
  for (size_t i = 0; i < inputs.size(); ++i) node.inputs.push_back(inputs[i] ? static_cast<int>(i) : -1);
  for (int o = 0; o < num_outputs; ++o) {
    const bool skipped = std::find(skipped_outputs.begin(), skipped_outputs.end(), o) != skipped_outputs.end();
    node.outputs.push_back(skipped ? -1 : static_cast<int>(inputs.size()) + o);
  }
  node.attrs = std::move(attrs);
  std::vector<Tensor> outputs;
  run_node(OpRegistry::builtin(), node, inputs, outputs);
  return outputs;
}

Tensor run1(const std::string& op, std::vector<const Tensor*> inputs, std::map<std::string, Attribute> attrs = {}) {
  return run_op(op, std::move(inputs), std::move(attrs)).at(0);
}

// A tensor of any dtype from double values (converted with Cast semantics).
Tensor make(DType dtype, const std::vector<double>& values, Shape shape) {
  Tensor d = Tensor::from_vector<double>(values, shape);
  Tensor t(dtype, std::move(shape));
  convert_tensor(d, t);
  return t;
}
Tensor f32(const std::vector<float>& v, Shape shape) { return Tensor::from_vector<float>(v, std::move(shape)); }
Tensor boolean(const std::vector<bool>& v, Shape shape) { return Tensor::from_vector<bool>(v, std::move(shape)); }

std::vector<double> values(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = t.scalar_as_double(i);
  return out;
}

// Element-by-element comparison with a relative tolerance; NaN matches NaN, infinities match
// exactly.
void expect_values(const Tensor& t, const std::vector<double>& expected, double rel_tol = 1e-6,
                   const std::string& what = "") {
  const std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = expected[i], g = got[i];
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(g)) << what << " [" << i << "]: got " << g << ", expected NaN";
    } else if (std::isinf(e)) {
      EXPECT_EQ(g, e) << what << " [" << i << "]";
    } else {
      EXPECT_NEAR(g, e, rel_tol * std::max(1.0, std::abs(e))) << what << " [" << i << "]";
    }
  }
}

// ---- unary float ops against std:: math, for f32, f64 and f16 -------------------------------------
struct UnaryCase {
  const char* op;
  std::function<double(double)> reference;
};

TEST(ElementwiseUnary, FloatOpsMatchStdMathForEveryFloatDtype) {
  const std::vector<double> xs = {-3.0, -1.5, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.5, 4.0};
  const std::vector<UnaryCase> cases = {
      {"Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"Tanh", [](double x) { return std::tanh(x); }},
      {"Softplus", [](double x) { return std::log(1.0 + std::exp(x)); }},
      {"Softsign", [](double x) { return x / (1.0 + std::abs(x)); }},
      {"Erf", [](double x) { return std::erf(x); }},
      {"Sqrt", [](double x) { return std::sqrt(x); }},
      {"Exp", [](double x) { return std::exp(x); }},
      {"Log", [](double x) { return std::log(x); }},
      {"Reciprocal", [](double x) { return 1.0 / x; }},
      {"Floor", [](double x) { return std::floor(x); }},
      {"Ceil", [](double x) { return std::ceil(x); }},
      {"Round", [](double x) { return std::nearbyint(x); }},
      {"Abs", [](double x) { return std::abs(x); }},
      {"Neg", [](double x) { return -x; }},
      {"Sign", [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }},
      {"Relu", [](double x) { return x < 0 ? 0.0 : x; }},
      {"HardSwish", [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }},
      // Attributes are floats in ONNX, so defaults like 0.2 are the float nearest to them.
      {"HardSigmoid", [](double x) { return std::clamp(double{0.2f} * x + 0.5, 0.0, 1.0); }},
      {"LeakyRelu", [](double x) { return x < 0 ? double{0.01f} * x : x; }},
      {"Elu", [](double x) { return x < 0 ? std::exp(x) - 1 : x; }},
      {"Selu",
       [](double x) {
         const double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
         return x <= 0 ? gamma * alpha * (std::exp(x) - 1) : gamma * x;
       }},
  };
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16}) {
    const double tol = dtype == DType::kF16 ? 1e-3 : dtype == DType::kF32 ? 1e-6 : 1e-12;
    const Tensor x = make(dtype, xs, {2, 5});
    for (const UnaryCase& c : cases) {
      const Tensor y = run1(c.op, {&x});
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_EQ(y.shape(), (Shape{2, 5}));
      std::vector<double> expected;
      for (double v : xs) expected.push_back(c.reference(v));
      expect_values(y, expected, tol, std::string(c.op) + " " + std::string(dtype_name(dtype)));
    }
  }
}

TEST(ElementwiseUnary, IeeeSpecialValues) {
  const Tensor x = f32({-1.0f, 0.0f, kInf, kNaN}, {4});
  expect_values(run1("Sqrt", {&x}), {NAN, 0.0, INFINITY, NAN});
  expect_values(run1("Log", {&x}), {NAN, -INFINITY, INFINITY, NAN});
  expect_values(run1("Reciprocal", {&x}), {-1.0, INFINITY, 0.0, NAN});
  expect_values(run1("Sigmoid", {&x}), {1.0 / (1.0 + std::exp(1.0)), 0.5, 1.0, NAN});
  // NaN propagates through the piecewise activations instead of being clamped away.
  expect_values(run1("Relu", {&x}), {0.0, 0.0, INFINITY, NAN});
  expect_values(run1("HardSigmoid", {&x}), {0.3, 0.5, 1.0, NAN});
  expect_values(run1("Sign", {&x}), {-1.0, 0.0, 1.0, NAN});
  // Large inputs neither overflow nor lose the linear part.
  const Tensor big = f32({-100.0f, 100.0f}, {2});
  expect_values(run1("Sigmoid", {&big}), {std::exp(-100.0), 1.0}, 1e-6);
  expect_values(run1("Softplus", {&big}), {std::exp(-100.0), 100.0}, 1e-6);
}

TEST(ElementwiseUnary, RoundHalfToEven) {
  const Tensor x = f32({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f}, {6});
  expect_values(run1("Round", {&x}), {0.0, 2.0, 2.0, -0.0, -2.0, 2.0});
}

TEST(ElementwiseUnary, AttributesOverrideDefaults) {
  const Tensor x = f32({-2.0f, -0.5f, 0.0f, 1.0f, 3.0f}, {5});
  expect_values(run1("LeakyRelu", {&x}, {{"alpha", 0.1f}}), {-0.2, -0.05, 0.0, 1.0, 3.0});
  expect_values(run1("HardSigmoid", {&x}, {{"alpha", 0.5f}, {"beta", 0.25f}}), {0.0, 0.0, 0.25, 0.75, 1.0});
  expect_values(run1("Elu", {&x}, {{"alpha", 2.0f}}),
                {2.0 * std::expm1(-2.0), 2.0 * std::expm1(-0.5), 0.0, 1.0, 3.0});
  expect_values(run1("Selu", {&x}, {{"alpha", 2.0f}, {"gamma", 3.0f}}),
                {6.0 * std::expm1(-2.0), 6.0 * std::expm1(-0.5), 0.0, 3.0, 9.0});
}

TEST(ElementwiseUnary, IntegerAbsNegReluWrapInsteadOfOverflowing) {
  const int32_t min32 = std::numeric_limits<int32_t>::min();
  const Tensor x = Tensor::from_vector<int32_t>({-5, 0, 7, min32}, {4});
  const Tensor abs = run1("Abs", {&x});
  const Tensor neg = run1("Neg", {&x});
  const Tensor relu = run1("Relu", {&x});
  ASSERT_EQ(abs.dtype(), DType::kI32);
  EXPECT_EQ(std::vector<int32_t>(abs.data<int32_t>(), abs.data<int32_t>() + 4),
            (std::vector<int32_t>{5, 0, 7, min32}));
  EXPECT_EQ(std::vector<int32_t>(neg.data<int32_t>(), neg.data<int32_t>() + 4),
            (std::vector<int32_t>{5, 0, -7, min32}));
  EXPECT_EQ(std::vector<int32_t>(relu.data<int32_t>(), relu.data<int32_t>() + 4),
            (std::vector<int32_t>{0, 0, 7, 0}));
  const Tensor i8 = Tensor::from_vector<int8_t>({-128, -3, 3}, {3});
  expect_values(run1("Abs", {&i8}), {-128, 3, 3});
  expect_values(run1("Sign", {&i8}), {-1, -1, 1});
  const Tensor u8 = Tensor::from_vector<uint8_t>({0, 200}, {2});
  expect_values(run1("Abs", {&u8}), {0, 200});
}

TEST(ElementwiseUnary, AbsAndNegForEveryAllowedDtype) {
  for (DType dtype : kNumericDTypes) {
    const bool is_unsigned = dtype == DType::kU8;
    const Tensor x = make(dtype, is_unsigned ? std::vector<double>{0, 3, 100} : std::vector<double>{-4, 0, 100}, {3});
    expect_values(run1("Abs", {&x}), is_unsigned ? std::vector<double>{0, 3, 100} : std::vector<double>{4, 0, 100},
                  0, std::string(dtype_name(dtype)));
    if (!is_unsigned) expect_values(run1("Neg", {&x}), {4, 0, -100}, 0, std::string(dtype_name(dtype)));
  }
}

TEST(ElementwiseUnary, DtypeErrorsNameTheNodeAndTheExpectedTypes) {
  const Tensor i = Tensor::from_vector<int32_t>({1, 2}, {2});
  try {
    run1("Sigmoid", {&i});
    FAIL() << "Sigmoid accepted an i32 input";
  } catch (const UnsupportedError&) {
    FAIL() << "an illegal dtype is an error, not an unsupported case";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("test_Sigmoid"), std::string::npos) << msg;
    EXPECT_NE(msg.find("i32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("f32"), std::string::npos) << msg;
  }
  const Tensor u8 = Tensor::from_vector<uint8_t>({1}, {1});
  EXPECT_THROW(run1("Neg", {&u8}), Error);  // ONNX Neg is for signed types only
  const Tensor b = boolean({true}, {1});
  EXPECT_THROW(run1("Abs", {&b}), Error);
  EXPECT_THROW(run1("Exp", {&i}), Error);
  EXPECT_THROW(run1("Relu", {&u8}), Error);
}

// ---- PRelu and Clip ---------------------------------------------------------------------------------
TEST(ElementwiseActivation, PReluBroadcastsSlopeToX) {
  const Tensor x = f32({-1, 2, -3, 4, -5, 6}, {2, 3});
  const Tensor row = f32({0.1f, 0.2f, 0.3f}, {3});
  expect_values(run1("PRelu", {&x, &row}), {-0.1, 2, -0.9, 4, -1.0, 6});
  const Tensor column = f32({0.5f, 2.0f}, {2, 1});
  expect_values(run1("PRelu", {&x, &column}), {-0.5, 2, -1.5, 4, -10, 6});
  const Tensor scalar = f32({0.25f}, {});
  expect_values(run1("PRelu", {&x, &scalar}), {-0.25, 2, -0.75, 4, -1.25, 6});
  const Tensor ix = Tensor::from_vector<int64_t>({-3, 3}, {2});
  const Tensor islope = Tensor::from_vector<int64_t>({2}, {1});
  expect_values(run1("PRelu", {&ix, &islope}), {-6, 3});
  // The slope may not grow the output: broadcasting is unidirectional.
  const Tensor wider = f32({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {2, 2, 3});
  EXPECT_THROW(run1("PRelu", {&x, &wider}), Error);
  const Tensor wrong = f32({1, 1, 1, 1}, {4});
  EXPECT_THROW(run1("PRelu", {&x, &wrong}), Error);
}

TEST(ElementwiseActivation, ClipWithOptionalBounds) {
  const Tensor x = f32({-5, -1, 0, 1, 5, kNaN, kInf}, {7});
  const Tensor lo = f32({-2}, {});
  const Tensor hi = f32({2}, {});
  expect_values(run1("Clip", {&x, &lo, &hi}), {-2, -1, 0, 1, 2, NAN, 2});
  expect_values(run1("Clip", {&x, &lo}), {-2, -1, 0, 1, 5, NAN, INFINITY});
  expect_values(run1("Clip", {&x, nullptr, &hi}), {-5, -1, 0, 1, 2, NAN, 2});
  expect_values(run1("Clip", {&x}), {-5, -1, 0, 1, 5, NAN, INFINITY});  // no bounds: unchanged
  // min > max: every element becomes max (ONNX rule).
  expect_values(run1("Clip", {&x, &hi, &lo}), {-2, -2, -2, -2, -2, NAN, -2});
}

TEST(ElementwiseActivation, ClipIntegersAndErrors) {
  const Tensor x = Tensor::from_vector<int8_t>({-128, -10, 0, 10, 127}, {5});
  const Tensor lo = Tensor::from_vector<int8_t>({-5}, {1});  // a one-element tensor is accepted
  const Tensor hi = Tensor::scalar<int8_t>(5);
  const Tensor clipped = run1("Clip", {&x, &lo, &hi});
  ASSERT_EQ(clipped.dtype(), DType::kI8);
  expect_values(clipped, {-5, -5, 0, 5, 5});
  expect_values(run1("Clip", {&x, nullptr, &hi}), {-128, -10, 0, 5, 5});
  const Tensor u = Tensor::from_vector<uint8_t>({0, 100, 255}, {3});
  const Tensor uhi = Tensor::scalar<uint8_t>(200);
  expect_values(run1("Clip", {&u, nullptr, &uhi}), {0, 100, 200});
  const Tensor f = f32({1}, {1});
  EXPECT_THROW(run1("Clip", {&x, &f}), Error);  // bound dtype differs from X
  const Tensor two = Tensor::from_vector<int8_t>({1, 2}, {2});
  EXPECT_THROW(run1("Clip", {&x, &two}), Error);  // bound is not a scalar
}

// ---- binary arithmetic and broadcasting --------------------------------------------------------------
TEST(ElementwiseBinary, BroadcastingScalarRowColumnAndRankMismatch) {
  const Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor scalar = f32({10}, {});
  const Tensor row = f32({10, 20, 30}, {3});
  const Tensor column = f32({100, 200}, {2, 1});
  const Tensor rank3 = f32({1, -1}, {2, 1, 1});

  expect_values(run1("Add", {&a, &scalar}), {11, 12, 13, 14, 15, 16});
  expect_values(run1("Add", {&scalar, &a}), {11, 12, 13, 14, 15, 16});
  expect_values(run1("Sub", {&a, &row}), {-9, -18, -27, -6, -15, -24});
  expect_values(run1("Mul", {&a, &column}), {100, 200, 300, 800, 1000, 1200});
  const Tensor outer = run1("Add", {&column, &row});  // [2,1] + [3] -> [2,3]
  EXPECT_EQ(outer.shape(), (Shape{2, 3}));
  expect_values(outer, {110, 120, 130, 210, 220, 230});
  const Tensor y = run1("Mul", {&a, &rank3});  // [2,3] * [2,1,1] -> [2,2,3]
  EXPECT_EQ(y.shape(), (Shape{2, 2, 3}));
  expect_values(y, {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
  expect_values(run1("Div", {&row, &a}), {10, 10, 10, 2.5, 4, 5});

  const Tensor bad = f32({1, 2}, {2});
  EXPECT_THROW(run1("Add", {&a, &bad}), Error);
  const Tensor empty(DType::kF32, {0, 3});
  EXPECT_EQ(run1("Add", {&empty, &row}).shape(), (Shape{0, 3}));
}

TEST(ElementwiseBinary, ArithmeticForEveryNumericDtype) {
  for (DType dtype : kNumericDTypes) {
    const std::string name(dtype_name(dtype));
    const Tensor a = make(dtype, {6, 8, 9, 12}, {2, 2});
    const Tensor b = make(dtype, {3, 2}, {2});
    const Tensor sum = run1("Add", {&a, &b});
    EXPECT_EQ(sum.dtype(), dtype) << name;
    expect_values(sum, {9, 10, 12, 14}, 0, "Add " + name);
    expect_values(run1("Sub", {&a, &b}), {3, 6, 6, 10}, 0, "Sub " + name);
    expect_values(run1("Mul", {&a, &b}), {18, 16, 27, 24}, 0, "Mul " + name);
    expect_values(run1("Div", {&a, &b}), {2, 4, 3, 6}, 0, "Div " + name);
    expect_values(run1("Min", {&a, &b}), {3, 2, 3, 2}, 0, "Min " + name);
    expect_values(run1("Max", {&a, &b}), {6, 8, 9, 12}, 0, "Max " + name);
    expect_values(run1("Sum", {&a, &b, &b}), {12, 12, 15, 16}, 0, "Sum " + name);
  }
  const Tensor b = boolean({true}, {1});
  EXPECT_THROW(run1("Add", {&b, &b}), Error);
  EXPECT_THROW(run1("Max", {&b, &b}), Error);
}

TEST(ElementwiseBinary, MixedDtypesAreRejected) {
  const Tensor f = f32({1}, {1});
  const Tensor i = Tensor::from_vector<int32_t>({1}, {1});
  try {
    run1("Add", {&f, &i});
    FAIL() << "Add accepted f32 + i32";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("same dtype"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run1("Sum", {&f, &f, &i}), Error);
}

TEST(ElementwiseBinary, IntegerDivisionTruncatesAndDivisionByZeroGivesZero) {
  const Tensor a = Tensor::from_vector<int32_t>({7, -7, 7, -7, 5, std::numeric_limits<int32_t>::min()}, {6});
  const Tensor b = Tensor::from_vector<int32_t>({2, 2, -2, -2, 0, -1}, {6});
  const Tensor q = run1("Div", {&a, &b});
  ASSERT_EQ(q.dtype(), DType::kI32);
  EXPECT_EQ(std::vector<int32_t>(q.data<int32_t>(), q.data<int32_t>() + 6),
            (std::vector<int32_t>{3, -3, -3, 3, 0, std::numeric_limits<int32_t>::min()}));
  const Tensor u = Tensor::from_vector<uint8_t>({255, 9, 0}, {3});
  const Tensor zero = Tensor::scalar<uint8_t>(0);
  expect_values(run1("Div", {&u, &zero}), {0, 0, 0});
  const Tensor i64 = Tensor::from_vector<int64_t>({-9, 9}, {2});
  const Tensor four = Tensor::scalar<int64_t>(4);
  expect_values(run1("Div", {&i64, &four}), {-2, 2});
  // Floats follow IEEE.
  const Tensor x = f32({1, -1, 0}, {3});
  const Tensor fz = f32({0}, {});
  expect_values(run1("Div", {&x, &fz}), {INFINITY, -INFINITY, NAN});
}

TEST(ElementwiseBinary, IntegerOverflowWraps) {
  const int32_t max32 = std::numeric_limits<int32_t>::max();
  const Tensor a = Tensor::from_vector<int32_t>({max32}, {1});
  const Tensor one = Tensor::from_vector<int32_t>({1}, {1});
  EXPECT_EQ(run1("Add", {&a, &one}).data<int32_t>()[0], std::numeric_limits<int32_t>::min());
  const Tensor u = Tensor::from_vector<uint8_t>({250, 16}, {2});
  const Tensor ten = Tensor::scalar<uint8_t>(10);
  expect_values(run1("Add", {&u, &ten}), {4, 26});
  expect_values(run1("Mul", {&u, &ten}), {(250 * 10) % 256, 160});
  expect_values(run1("Sub", {&ten, &u}), {16, 250});
}

TEST(ElementwiseBinary, Float16MathGoesThroughFloat) {
  const Tensor a = make(DType::kF16, {1.5, 2048, -0.25}, {3});
  const Tensor b = make(DType::kF16, {0.25, 1, 4}, {3});
  const Tensor sum = run1("Add", {&a, &b});
  ASSERT_EQ(sum.dtype(), DType::kF16);
  // 2048 + 1 is not representable in f16 and rounds to even (2048).
  expect_values(sum, {1.75, 2048, 3.75}, 0);
  expect_values(run1("Div", {&a, &b}), {6, 2048, -0.0625}, 0);
}

TEST(ElementwiseBinary, PowKeepsTheBaseDtype) {
  const Tensor x = f32({1, 2, 3, 4}, {4});
  const Tensor y = f32({4, 5, 6, 0.5f}, {4});
  expect_values(run1("Pow", {&x, &y}), {1, 32, 729, 2});
  const Tensor e64 = Tensor::from_vector<int64_t>({2}, {1});
  const Tensor p = run1("Pow", {&x, &e64});
  EXPECT_EQ(p.dtype(), DType::kF32);
  expect_values(p, {1, 4, 9, 16});
  const Tensor neg = f32({-2}, {});
  const Tensor half = f32({0.5f}, {});
  expect_values(run1("Pow", {&neg, &half}), {NAN});

  const Tensor ib = Tensor::from_vector<int32_t>({2, 3, -2, 1, -1, 0, 2}, {7});
  const Tensor ie = Tensor::from_vector<int32_t>({10, 3, 3, -5, -3, -1, 0}, {7});
  const Tensor ip = run1("Pow", {&ib, &ie});
  EXPECT_EQ(ip.dtype(), DType::kI32);
  expect_values(ip, {1024, 27, -8, 1, -1, 0, 1}, 0);
  // Integer base, float exponent (ONNX test_pow_types_int32_float32).
  const Tensor ib3 = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
  const Tensor fe = f32({4, 5, 6}, {3});
  const Tensor mixed = run1("Pow", {&ib3, &fe});
  EXPECT_EQ(mixed.dtype(), DType::kI32);
  expect_values(mixed, {1, 32, 729}, 0);
  // f16 base, broadcast exponent.
  const Tensor hb = make(DType::kF16, {1, 2, 3}, {3});
  const Tensor two = Tensor::scalar<int8_t>(2);
  const Tensor hp = run1("Pow", {&hb, &two});
  EXPECT_EQ(hp.dtype(), DType::kF16);
  expect_values(hp, {1, 4, 9}, 0);
  const Tensor b = boolean({true}, {1});
  EXPECT_THROW(run1("Pow", {&x, &b}), Error);
}

// ---- variadic ops --------------------------------------------------------------------------------------
TEST(ElementwiseVariadic, BroadcastAcrossAllInputs) {
  const Tensor a = f32({1, 5, 3}, {3});
  const Tensor b = f32({4, 2}, {2, 1});
  const Tensor c = f32({0}, {});
  const Tensor mx = run1("Max", {&a, &b, &c});
  EXPECT_EQ(mx.shape(), (Shape{2, 3}));
  expect_values(mx, {4, 5, 4, 2, 5, 3});
  expect_values(run1("Min", {&a, &b, &c}), {0, 0, 0, 0, 0, 0});
  expect_values(run1("Sum", {&a, &b, &c}), {5, 9, 7, 3, 7, 5});
  expect_values(run1("Mean", {&a, &b, &c}), {5.0 / 3, 3, 7.0 / 3, 1, 7.0 / 3, 5.0 / 3});
  expect_values(run1("Mean", {&a, &b}), {2.5, 4.5, 3.5, 1.5, 3.5, 2.5});
  // One input: a copy.
  expect_values(run1("Sum", {&a}), {1, 5, 3});
  expect_values(run1("Max", {&b}), {4, 2});
}

TEST(ElementwiseVariadic, MinMaxForIntegersAndNaN) {
  const Tensor a = Tensor::from_vector<int64_t>({-5, 7, 3}, {3});
  const Tensor b = Tensor::from_vector<int64_t>({0}, {1});
  expect_values(run1("Max", {&a, &b}), {0, 7, 3});
  expect_values(run1("Min", {&a, &b}), {-5, 0, 0});
  const Tensor u = Tensor::from_vector<uint8_t>({200, 1}, {2});
  const Tensor v = Tensor::from_vector<uint8_t>({100, 255}, {2});
  expect_values(run1("Max", {&u, &v}), {200, 255});
  const Tensor x = f32({kNaN, 1, 2}, {3});
  const Tensor y = f32({0, kNaN, 5}, {3});
  expect_values(run1("Max", {&x, &y}), {NAN, NAN, 5});
  expect_values(run1("Min", {&x, &y}), {NAN, NAN, 2});
  EXPECT_THROW(run1("Mean", {&a, &b}), Error);  // Mean is for float types
}

// ---- comparisons, logic, Where ---------------------------------------------------------------------
std::vector<double> bools(std::initializer_list<int> v) { return std::vector<double>(v.begin(), v.end()); }

TEST(ElementwiseLogical, ComparisonsBroadcastAndReturnBool) {
  const Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = f32({2, 5, kNaN}, {3});
  const Tensor eq = run1("Equal", {&a, &b});
  EXPECT_EQ(eq.dtype(), DType::kBool);
  EXPECT_EQ(eq.shape(), (Shape{2, 3}));
  expect_values(eq, bools({0, 0, 0, 0, 1, 0}));
  expect_values(run1("Less", {&a, &b}), bools({1, 1, 0, 0, 0, 0}));
  expect_values(run1("Greater", {&a, &b}), bools({0, 0, 0, 1, 0, 0}));
  expect_values(run1("LessOrEqual", {&a, &b}), bools({1, 1, 0, 0, 1, 0}));
  expect_values(run1("GreaterOrEqual", {&a, &b}), bools({0, 0, 0, 1, 1, 0}));
}

TEST(ElementwiseLogical, ComparisonsForEveryDtype) {
  for (DType dtype : kNumericDTypes) {
    const std::string name(dtype_name(dtype));
    const Tensor a = make(dtype, {1, 2, 3}, {3});
    const Tensor b = make(dtype, {2}, {});
    expect_values(run1("Equal", {&a, &b}), bools({0, 1, 0}), 0, "Equal " + name);
    expect_values(run1("Less", {&a, &b}), bools({1, 0, 0}), 0, "Less " + name);
    expect_values(run1("Greater", {&a, &b}), bools({0, 0, 1}), 0, "Greater " + name);
  }
  const Tensor t = boolean({true, false}, {2});
  const Tensor f = boolean({false}, {1});
  expect_values(run1("Equal", {&t, &f}), bools({0, 1}));
  EXPECT_THROW(run1("Less", {&t, &f}), Error);  // ordering is not defined on bool
  const Tensor i = Tensor::from_vector<int32_t>({1}, {1});
  const Tensor x = f32({1}, {1});
  EXPECT_THROW(run1("Equal", {&i, &x}), Error);
}

TEST(ElementwiseLogical, BooleanOps) {
  const Tensor a = boolean({false, false, true, true}, {4});
  const Tensor b = boolean({false, true, false, true}, {4});
  expect_values(run1("Not", {&a}), bools({1, 1, 0, 0}));
  expect_values(run1("And", {&a, &b}), bools({0, 0, 0, 1}));
  expect_values(run1("Or", {&a, &b}), bools({0, 1, 1, 1}));
  expect_values(run1("Xor", {&a, &b}), bools({0, 1, 1, 0}));
  const Tensor scalar = boolean({true}, {});
  expect_values(run1("And", {&a, &scalar}), bools({0, 0, 1, 1}));
  const Tensor x = f32({1}, {1});
  EXPECT_THROW(run1("And", {&x, &x}), Error);
  EXPECT_THROW(run1("Not", {&x}), Error);
}

TEST(ElementwiseLogical, WhereBroadcastsAllThreeInputs) {
  const Tensor cond = boolean({true, false}, {2, 1});
  const Tensor x = f32({1, 2, 3}, {3});
  const Tensor y = f32({-1}, {});
  const Tensor out = run1("Where", {&cond, &x, &y});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  expect_values(out, {1, 2, 3, -1, -1, -1});
  // Condition broadcast over the other way round, and a rank-3 input.
  const Tensor row_cond = boolean({true, false, true}, {3});
  const Tensor y3 = f32({10, 20}, {2, 1, 1});
  const Tensor out3 = run1("Where", {&row_cond, &x, &y3});
  EXPECT_EQ(out3.shape(), (Shape{2, 1, 3}));
  expect_values(out3, {1, 10, 3, 1, 20, 3});
  for (DType dtype : {DType::kI64, DType::kU8, DType::kF16, DType::kBool}) {
    const Tensor a = make(dtype, {1, 1, 1}, {3});
    const Tensor b = make(dtype, {0}, {1});
    expect_values(run1("Where", {&row_cond, &a, &b}), {1, 0, 1}, 0, std::string(dtype_name(dtype)));
  }
  const Tensor float_cond = f32({1}, {1});
  EXPECT_THROW(run1("Where", {&float_cond, &x, &y}), Error);
  const Tensor iy = Tensor::from_vector<int32_t>({0}, {1});
  EXPECT_THROW(run1("Where", {&cond, &x, &iy}), Error);
  const Tensor bad_cond = boolean({true, true, true, true}, {4});
  EXPECT_THROW(run1("Where", {&bad_cond, &x, &y}), Error);
}

// ---- Cast, CastLike, Identity, Dropout --------------------------------------------------------------
TEST(ElementwiseCast, FloatToIntTruncatesSaturatesAndMapsNaNToZero) {
  const Tensor x = f32({-1.7f, -0.5f, 0.0f, 2.9f, 1e20f, -1e20f, kNaN}, {7});
  const Tensor i32 = run1("Cast", {&x}, {{"to", 6}});
  ASSERT_EQ(i32.dtype(), DType::kI32);
  EXPECT_EQ(std::vector<int32_t>(i32.data<int32_t>(), i32.data<int32_t>() + 7),
            (std::vector<int32_t>{-1, 0, 0, 2, std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(), 0}));
  const Tensor u8 = run1("Cast", {&x}, {{"to", 2}});
  ASSERT_EQ(u8.dtype(), DType::kU8);
  expect_values(u8, {0, 0, 0, 2, 255, 0, 0});
  const Tensor i64 = run1("Cast", {&x}, {{"to", 7}});
  ASSERT_EQ(i64.dtype(), DType::kI64);
  expect_values(i64, {-1, 0, 0, 2, 9223372036854775807.0, -9223372036854775808.0, 0});
}

TEST(ElementwiseCast, BoolAndFloatConversions) {
  const Tensor x = f32({0.0f, -0.0f, 0.5f, -3.0f, kNaN}, {5});
  const Tensor b = run1("Cast", {&x}, {{"to", 9}});
  ASSERT_EQ(b.dtype(), DType::kBool);
  expect_values(b, bools({0, 0, 1, 1, 1}));  // NaN != 0, so true
  const Tensor back = run1("Cast", {&b}, {{"to", 1}});
  ASSERT_EQ(back.dtype(), DType::kF32);
  expect_values(back, {0, 0, 1, 1, 1});
  const Tensor h = run1("Cast", {&x}, {{"to", 10}});
  ASSERT_EQ(h.dtype(), DType::kF16);
  expect_values(h, {0, 0, 0.5, -3, NAN});
  const Tensor precise = Tensor::from_vector<double>({1.0 / 3}, {1});
  const Tensor as_half = run1("Cast", {&precise}, {{"to", 10}});
  EXPECT_EQ(as_half.data<Half>()[0].bits, Half(1.0f / 3).bits);
  const Tensor d = run1("Cast", {&h}, {{"to", 11}});
  ASSERT_EQ(d.dtype(), DType::kF64);
  expect_values(d, {0, 0, 0.5, -3, NAN});
  const Tensor i = Tensor::from_vector<int32_t>({-1, 300}, {2});
  expect_values(run1("Cast", {&i}, {{"to", 3}}), {-1, 44});  // int -> narrower int wraps
  const Tensor same = run1("Cast", {&i}, {{"to", 6}});
  expect_values(same, {-1, 300});
}

TEST(ElementwiseCast, EveryDtypeToEveryDtype) {
  const std::map<DType, int64_t> onnx_type = {{DType::kF32, 1}, {DType::kU8, 2},  {DType::kI8, 3}, {DType::kI32, 6},
                                              {DType::kI64, 7}, {DType::kBool, 9}, {DType::kF16, 10}, {DType::kF64, 11}};
  for (const auto& [from, unused] : onnx_type) {
    const Tensor x = make(from, {0, 1, 1}, {3});
    for (const auto& [to, number] : onnx_type) {
      const Tensor y = run1("Cast", {&x}, {{"to", number}});
      EXPECT_EQ(y.dtype(), to);
      expect_values(y, {0, 1, 1}, 0, std::string(dtype_name(from)) + "->" + std::string(dtype_name(to)));
      const Tensor target(to, {});
      const Tensor like = run1("CastLike", {&x, &target});
      EXPECT_EQ(like.dtype(), to);
      expect_values(like, {0, 1, 1}, 0, "CastLike");
    }
  }
}

TEST(ElementwiseCast, UnsupportedAndInvalidTargets) {
  const Tensor x = f32({1}, {1});
  EXPECT_THROW(run1("Cast", {&x}, {{"to", 5}}), UnsupportedError);   // int16
  EXPECT_THROW(run1("Cast", {&x}, {{"to", 16}}), UnsupportedError);  // bfloat16
  EXPECT_THROW(run1("Cast", {&x}, {{"to", 8}}), UnsupportedError);   // string
  for (int64_t bad : {0, 99, -1}) {
    try {
      run1("Cast", {&x}, {{"to", bad}});
      FAIL() << "Cast accepted to=" << bad;
    } catch (const UnsupportedError& e) {
      FAIL() << "to=" << bad << " is invalid, not unsupported: " << e.what();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'to'"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(run1("Cast", {&x}), Error);  // 'to' is required
}

TEST(ElementwiseCopy, IdentityForEveryDtype) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kF64, DType::kI8, DType::kU8, DType::kI32, DType::kI64,
                      DType::kBool}) {
    const Tensor x = make(dtype, {1, 0, 1, 1, 0, 1}, {2, 3});
    const Tensor y = run1("Identity", {&x});
    EXPECT_EQ(y.dtype(), dtype);
    EXPECT_EQ(y.shape(), (Shape{2, 3}));
    EXPECT_NE(y.raw(), x.raw());  // a copy, not the caller's buffer
    expect_values(y, {1, 0, 1, 1, 0, 1}, 0, std::string(dtype_name(dtype)));
  }
}

TEST(ElementwiseCopy, DropoutIsACopyInInference) {
  const Tensor x = f32({1, -2, 3, 4}, {2, 2});
  const Tensor ratio = f32({0.7f}, {});
  const Tensor off = boolean({false}, {});
  const Tensor on = boolean({true}, {});
  const Tensor zero_ratio = f32({0}, {});

  expect_values(run1("Dropout", {&x}), {1, -2, 3, 4});
  std::vector<Tensor> out = run_op("Dropout", {&x, &ratio, &off}, {}, 2);
  ASSERT_EQ(out.size(), 2u);
  expect_values(out[0], {1, -2, 3, 4});
  ASSERT_EQ(out[1].dtype(), DType::kBool);
  EXPECT_EQ(out[1].shape(), (Shape{2, 2}));
  expect_values(out[1], bools({1, 1, 1, 1}));
  // Mask not requested: only the output is produced.
  out = run_op("Dropout", {&x}, {}, 2, {1});
  EXPECT_FALSE(out[1].defined());
  // Training mode drops at random: unsupported, unless the ratio is 0 (then it is a copy).
  EXPECT_THROW(run1("Dropout", {&x, &ratio, &on}), UnsupportedError);
  EXPECT_THROW(run1("Dropout", {&x, nullptr, &on}), UnsupportedError);  // default ratio 0.5
  expect_values(run1("Dropout", {&x, &zero_ratio, &on}), {1, -2, 3, 4});
  const Tensor i = Tensor::from_vector<int32_t>({1}, {1});
  EXPECT_THROW(run1("Dropout", {&i}), Error);
}

// ---- registry and cost ---------------------------------------------------------------------------
TEST(ElementwiseRegistry, EveryOpIsRegisteredWithCost) {
  const OpRegistry& reg = OpRegistry::builtin();
  for (const char* op :
       {"Relu", "LeakyRelu", "PRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Selu", "Softplus",
        "Softsign", "Erf", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Abs", "Neg", "Reciprocal", "Floor",
        "Ceil", "Round", "Sign", "Min", "Max", "Sum", "Mean", "Cast", "CastLike", "Where", "Equal", "Less", "Greater",
        "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Identity", "Dropout"}) {
    const OpSchema* s = reg.find(op);
    ASSERT_NE(s, nullptr) << op;
    EXPECT_FALSE(s->doc.empty()) << op;
  }
}

OpCost cost_of(const std::string& op, const std::vector<TensorInfo>& inputs, const std::vector<TensorInfo>& outputs) {
  const OpSchema* s = OpRegistry::builtin().find(op);
  Node node;
  node.op_type = op;
  return s->cost ? s->cost(node, inputs, outputs) : default_cost(node, inputs, outputs);
}

TEST(ElementwiseRegistry, CostCountsOneOpPerElement) {
  const TensorInfo t{DType::kF32, {2, 5}, nullptr};
  const OpCost exp = cost_of("Exp", {t}, {t});  // transcendental: 1 MAC per element
  EXPECT_EQ(exp.macs, 10);
  EXPECT_EQ(exp.bytes_read, 40);
  EXPECT_EQ(exp.bytes_written, 40);
  EXPECT_EQ(cost_of("Add", {t, t}, {t}).macs, 10);
  EXPECT_EQ(cost_of("Sum", {t, t, t}, {t}).macs, 20);  // two adds per element
  EXPECT_EQ(cost_of("Identity", {t}, {t}).macs, 0);
  const OpCost cast = cost_of("Cast", {t}, {TensorInfo{DType::kF16, {2, 5}, nullptr}});
  EXPECT_EQ(cast.macs, 0);
  EXPECT_EQ(cast.bytes_written, 20);
}

}  // namespace
}  // namespace xnn
