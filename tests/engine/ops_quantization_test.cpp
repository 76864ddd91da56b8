// The ONNX quantisation ops (engine/ops/quantization.cpp, quantized_matmul.cpp,
// quantized_conv.cpp): exact rounding and saturation of the boundary ops, and the integer
// products checked against float Conv / MatMul on the dequantised values, which they must
// reproduce to within one quantisation step (the only difference is the final rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/engine/op_test_util.h"

namespace xnn {
namespace {

using op_test::Attrs;
using op_test::run_op;

Tensor u8(std::vector<uint8_t> v, Shape s) { return Tensor::from_vector<uint8_t>(v, std::move(s)); }
Tensor i8(std::vector<int8_t> v, Shape s) { return Tensor::from_vector<int8_t>(v, std::move(s)); }
Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, std::move(s)); }

template <typename Q>
Tensor random_q(std::mt19937& rng, Shape s) {
  Tensor t(std::is_same_v<Q, uint8_t> ? DType::kU8 : DType::kI8, std::move(s));
  std::uniform_int_distribution<int> d(std::numeric_limits<Q>::min(), std::numeric_limits<Q>::max());
  for (int64_t i = 0; i < t.numel(); ++i) t.data<Q>()[i] = static_cast<Q>(d(rng));
  return t;
}

TEST(OpsQuantization, QuantizeRoundsHalfToEvenAndSaturates) {
  const Tensor x = f32({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300.0f, -300.0f, 127.4f}, {8});
  const Tensor y8 = run_op("QuantizeLinear", {x, f32({1.0f}, {}), i8({0}, {})})[0];
  ASSERT_EQ(y8.dtype(), DType::kI8);
  const std::vector<int> want8 = {0, 2, 2, 0, -2, 127, -128, 127};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y8.data<int8_t>()[i], want8[static_cast<size_t>(i)]) << i;
  // uint8 is the default output type when no zero point is given.
  const Tensor yu = run_op("QuantizeLinear", {x, f32({0.5f}, {})})[0];
  ASSERT_EQ(yu.dtype(), DType::kU8);
  const std::vector<int> wantu = {1, 3, 5, 0, 0, 255, 0, 255};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(yu.data<uint8_t>()[i], wantu[static_cast<size_t>(i)]) << i;
}

TEST(OpsQuantization, PerAxisQuantizeDequantizeRoundTripsWithinHalfAStep) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  Tensor x(DType::kF32, {2, 3, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng);
  const Tensor scale = f32({0.02f, 0.03f, 0.05f}, {3});
  const Tensor zp = u8({128, 120, 100}, {3});
  const Attrs axis{{"axis", int64_t{1}}};
  const Tensor q = run_op("QuantizeLinear", {x, scale, zp}, axis)[0];
  const Tensor back = run_op("DequantizeLinear", {q, scale, zp}, axis)[0];
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / 4) % 3;
    EXPECT_LE(std::fabs(back.data<float>()[i] - x.data<float>()[i]), scale.data<float>()[c] / 2 + 1e-6f) << i;
  }
}

TEST(OpsQuantization, DynamicQuantizeCoversTheRangeAndZero) {
  const Tensor x = f32({-1.0f, 0.0f, 0.5f, 3.0f}, {4});
  const std::vector<Tensor> out = run_op("DynamicQuantizeLinear", {x}, {}, 3);
  const float scale = out[1].data<float>()[0];
  EXPECT_FLOAT_EQ(scale, 4.0f / 255.0f);
  const int zp = out[2].data<uint8_t>()[0];
  EXPECT_EQ(zp, 64);  // round(1 / (4/255)) = round(63.75)
  EXPECT_EQ(out[0].data<uint8_t>()[1], zp) << "0 maps exactly to the zero point";
  EXPECT_EQ(out[0].data<uint8_t>()[0], 0);
  EXPECT_EQ(out[0].data<uint8_t>()[3], 255);
}

// Dequantises, runs the float op, requantises: the integer op must agree within one step.
template <typename QX, typename QW>
void check_qlinear_conv(std::mt19937& rng, Shape xs, Shape ws, const Attrs& attrs, bool per_channel) {
  const Tensor x = random_q<QX>(rng, xs);
  const Tensor w = random_q<QW>(rng, ws);
  const int64_t m = ws[0];
  const Tensor x_scale = f32({0.02f}, {}), y_scale = f32({0.5f}, {});
  const Tensor x_zp = std::is_same_v<QX, uint8_t> ? u8({117}, {}) : i8({-5}, {});
  std::vector<float> wsv(static_cast<size_t>(per_channel ? m : 1));
  std::uniform_real_distribution<float> sd(0.005f, 0.02f);
  for (float& v : wsv) v = sd(rng);
  const Tensor w_scale = f32(wsv, {static_cast<int64_t>(wsv.size())});
  Tensor w_zp(std::is_same_v<QW, uint8_t> ? DType::kU8 : DType::kI8, {static_cast<int64_t>(wsv.size())});
  for (int64_t i = 0; i < w_zp.numel(); ++i) w_zp.data<QW>()[i] = static_cast<QW>(std::is_same_v<QW, uint8_t> ? 128 + i % 3 : i % 3);
  std::vector<int32_t> bias(static_cast<size_t>(m));
  for (int32_t& b : bias) b = static_cast<int32_t>(rng() % 2001) - 1000;
  const Tensor b = Tensor::from_vector<int32_t>(bias, {m});
  const Tensor y_zp = u8({100}, {});
  const Tensor y = run_op("QLinearConv", {x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, b}, attrs)[0];

  // Float oracle: Conv on dequantised tensors; bias in float = b * x_scale * w_scale.
  const Tensor xf = run_op("DequantizeLinear", {x, x_scale, x_zp})[0];
  const Tensor wf = run_op("DequantizeLinear", {w, w_scale, w_zp}, {{"axis", int64_t{0}}})[0];
  Tensor bf(DType::kF32, {m});
  for (int64_t i = 0; i < m; ++i) bf.data<float>()[i] = static_cast<float>(bias[static_cast<size_t>(i)]) * 0.02f * wsv[static_cast<size_t>(per_channel ? i : 0)];
  const Tensor yf = run_op("Conv", {xf, wf, bf}, attrs)[0];
  const Tensor want = run_op("QuantizeLinear", {yf, y_scale, y_zp})[0];
  ASSERT_EQ(y.shape(), want.shape());
  int exact = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int d = std::abs(int{y.data<uint8_t>()[i]} - int{want.data<uint8_t>()[i]});
    ASSERT_LE(d, 1) << "element " << i;
    exact += d == 0;
  }
  EXPECT_GT(exact, y.numel() * 9 / 10) << "most elements should match exactly";
}

TEST(OpsQuantization, QLinearConvMatchesFloatConvOnDequantisedValues) {
  std::mt19937 rng(11);
  check_qlinear_conv<uint8_t, int8_t>(rng, {1, 3, 7, 7}, {4, 3, 3, 3}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, true);
  check_qlinear_conv<uint8_t, int8_t>(rng, {2, 4, 9, 8}, {6, 2, 3, 3},
                                      {{"group", int64_t{2}}, {"strides", std::vector<int64_t>{2, 2}},
                                       {"pads", std::vector<int64_t>{1, 0, 1, 0}}},
                                      false);
  check_qlinear_conv<int8_t, uint8_t>(rng, {1, 4, 6, 6}, {4, 1, 3, 3},
                                      {{"group", int64_t{4}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                       {"dilations", std::vector<int64_t>{2, 2}}},
                                      true);
  check_qlinear_conv<uint8_t, int8_t>(rng, {1, 8, 5, 5}, {16, 8, 1, 1}, {}, true);
}

TEST(OpsQuantization, QLinearMatMulPerColumnScalesMatchFloat) {
  std::mt19937 rng(5);
  const Tensor a = random_q<uint8_t>(rng, {2, 3, 5});
  const Tensor b = random_q<int8_t>(rng, {5, 4});
  const Tensor as = f32({0.03f}, {}), azp = u8({130}, {});
  const Tensor bs = f32({0.01f, 0.02f, 0.015f, 0.005f}, {4}), bzp = i8({0, 1, -1, 2}, {4});
  const Tensor ys = f32({0.05f}, {}), yzp = i8({3}, {});
  const Tensor y = run_op("QLinearMatMul", {a, as, azp, b, bs, bzp, ys, yzp})[0];
  ASSERT_EQ(y.dtype(), DType::kI8);
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4}));
  const Tensor af = run_op("DequantizeLinear", {a, as, azp})[0];
  const Tensor bf = run_op("DequantizeLinear", {b, bs, bzp}, {{"axis", int64_t{1}}})[0];
  const Tensor want = run_op("QuantizeLinear", {run_op("MatMul", {af, bf})[0], ys, yzp})[0];
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_LE(std::abs(int{y.data<int8_t>()[i]} - int{want.data<int8_t>()[i]}), 1) << i;
  // MatMulInteger gives the exact int32 product of the centred values.
  const Tensor acc = run_op("MatMulInteger", {a, b, azp, bzp})[0];
  ASSERT_EQ(acc.dtype(), DType::kI32);
  int64_t want00 = 0;
  for (int k = 0; k < 5; ++k) want00 += (int{a.data<uint8_t>()[k]} - 130) * (int{b.data<int8_t>()[k * 4]} - 0);
  EXPECT_EQ(acc.data<int32_t>()[0], want00);
}

TEST(OpsQuantization, BadInputsNameTheProblem) {
  const Tensor x = u8({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor w = i8({1}, {1, 1, 1, 1});
  const Tensor s = f32({1.0f}, {});
  auto expect_msg = [](auto&& f, const std::string& text) {
    try {
      f();
      ADD_FAILURE() << "expected an error containing " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("node_under_test"), std::string::npos) << e.what();
    }
  };
  expect_msg([&] { run_op("QLinearConv", {x, s, u8({0}, {}), w, f32({1, 1}, {2}), i8({0}, {}), s, u8({0}, {})}); },
             "w_scale has shape [2], expected a scalar or a 1-D tensor of 1");
  expect_msg([&] { run_op("QuantizeLinear", {f32({1}, {1}), s, Tensor::from_vector<int32_t>({0}, {})}); },
             "expected uint8 or int8");
  expect_msg([&] { run_op("DequantizeLinear", {f32({1}, {1}), s}); }, "expected uint8, int8 or int32");
  expect_msg([&] { run_op("QLinearConv", {x, s, u8({0}, {}), w, s, i8({0}, {}), s, u8({0}, {}), f32({0}, {1})}); },
             "expected int32 [1]");
}

}  // namespace
}  // namespace xnn
