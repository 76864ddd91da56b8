// The com.microsoft quantised ops (engine/ops/quantized_contrib.cpp) against float references:
// dequantise the inputs, compute in float, quantise: the int8 result must be within one step.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/core/op_registry.h"
#include "tests/engine/op_test_util.h"

namespace xnn {
namespace {

using op_test::run_op;
constexpr const char* kMs = "com.microsoft";

Tensor random_u8(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, 255);
  Tensor t(DType::kU8, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(u(rng));
  return t;
}

Tensor random_i8(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-127, 127);
  Tensor t(DType::kI8, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(u(rng));
  return t;
}

Tensor f(float v) { return Tensor::scalar<float>(v); }
Tensor u8(int v) { return Tensor::scalar<uint8_t>(static_cast<uint8_t>(v)); }

// |q - quantize(expected)| <= 1 everywhere, where expected is the real-valued result.
void expect_within_one_step(const Tensor& q, const std::vector<double>& expected, float scale, int zp) {
  ASSERT_EQ(q.numel(), static_cast<int64_t>(expected.size()));
  int exact = 0;
  for (int64_t i = 0; i < q.numel(); ++i) {
    const double ideal = std::clamp(std::nearbyint(expected[static_cast<size_t>(i)] / scale) + zp, 0.0, 255.0);
    const int got = q.data<uint8_t>()[i];
    ASSERT_LE(std::fabs(got - ideal), 1.0) << "element " << i << ": expected " << expected[static_cast<size_t>(i)];
    exact += got == ideal ? 1 : 0;
  }
  EXPECT_GE(exact, q.numel() * 9 / 10);  // off by one only at float rounding ties
}

TEST(QuantizedContribOps, AreRegisteredInTheMicrosoftDomain) {
  for (const char* op : {"QGemm", "QLinearAdd", "QLinearConcat", "QLinearAveragePool", "QLinearGlobalAveragePool"}) {
    EXPECT_NE(OpRegistry::builtin().find(op, kMs), nullptr) << op;
    EXPECT_EQ(OpRegistry::builtin().find(op, ""), nullptr) << op;
  }
}

TEST(QuantizedContribOps, QGemmPerColumnWithBiasMatchesFloat) {
  const int64_t m = 5, k = 7, n = 3;
  const Tensor a = random_u8({m, k}, 1), b = random_i8({n, k}, 2);  // transB
  const float sa = 0.02f, sy = 0.15f;
  const int za = 100, zy = 60;
  const std::vector<float> sb = {0.01f, 0.03f, 0.005f};
  const Tensor c = Tensor::from_vector<int32_t>({120, -300, 45}, {n});
  const auto out = run_op("QGemm",
                          {a, f(sa), u8(za), b, Tensor::from_vector<float>(sb, {n}), Tensor(DType::kI8, {n}), c, f(sy), u8(zy)},
                          {{"transB", int64_t{1}}}, 1, kMs);
  ASSERT_EQ(out[0].dtype(), DType::kU8);
  ASSERT_EQ(out[0].shape(), (Shape{m, n}));
  std::vector<double> expected;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = c.data<int32_t>()[j];
      for (int64_t t = 0; t < k; ++t) acc += (a.data<uint8_t>()[i * k + t] - za) * double(b.data<int8_t>()[j * k + t]);
      expected.push_back(acc * sa * sb[static_cast<size_t>(j)]);
    }
  }
  expect_within_one_step(out[0], expected, sy, zy);
}

TEST(QuantizedContribOps, QGemmWithoutOutputScaleWritesFloat) {
  const Tensor a = random_u8({2, 4}, 3), b = random_i8({4, 3}, 4);
  const auto out = run_op("QGemm", {a, f(0.5f), u8(128), b, f(0.25f), Tensor::scalar<int8_t>(0)}, {}, 1, kMs);
  ASSERT_EQ(out[0].dtype(), DType::kF32);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      double acc = 0;
      for (int64_t t = 0; t < 4; ++t) acc += (a.data<uint8_t>()[i * 4 + t] - 128) * double(b.data<int8_t>()[t * 3 + j]);
      EXPECT_FLOAT_EQ(out[0].data<float>()[i * 3 + j], static_cast<float>(acc * 0.125));
    }
  }
}

TEST(QuantizedContribOps, QGemmRejectsABiasThatDoesNotBroadcast) {
  const Tensor a = random_u8({2, 4}, 3), b = random_i8({4, 3}, 4);
  EXPECT_THROW(run_op("QGemm", {a, f(0.5f), u8(0), b, f(0.25f), Tensor::scalar<int8_t>(0), Tensor(DType::kI32, {4})}, {}, 1, kMs),
               Error);
}

TEST(QuantizedContribOps, QLinearAddBroadcastsAndMatchesFloat) {
  const Tensor a = random_u8({2, 3, 4}, 5), b = random_u8({3, 1}, 6);
  const float sa = 0.05f, sb = 0.2f, sc = 0.1f;
  const int za = 10, zb = 200, zc = 128;
  const auto out = run_op("QLinearAdd", {a, f(sa), u8(za), b, f(sb), u8(zb), f(sc), u8(zc)}, {}, 1, kMs);
  ASSERT_EQ(out[0].shape(), (Shape{2, 3, 4}));
  std::vector<double> expected;
  for (int64_t i = 0; i < 24; ++i) {
    const int64_t row = (i / 4) % 3;
    expected.push_back(sa * (a.data<uint8_t>()[i] - za) + double(sb) * (b.data<uint8_t>()[row] - zb));
  }
  expect_within_one_step(out[0], expected, sc, zc);
}

TEST(QuantizedContribOps, QLinearConcatRequantisesOrCopies) {
  const Tensor x0 = random_u8({2, 2, 3}, 7), x1 = random_u8({2, 1, 3}, 8);
  const float sy = 0.1f;
  const int zy = 50;
  // x0 shares Y's parameters (copied bit for bit), x1 is requantised.
  const auto out = run_op("QLinearConcat", {f(sy), u8(zy), x0, f(sy), u8(zy), x1, f(0.07f), u8(3)},
                          {{"axis", int64_t{1}}}, 1, kMs);
  ASSERT_EQ(out[0].shape(), (Shape{2, 3, 3}));
  std::vector<double> expected;
  for (int64_t nb = 0; nb < 2; ++nb) {
    for (int64_t c = 0; c < 3; ++c) {
      for (int64_t w = 0; w < 3; ++w) {
        if (c < 2) {
          const int q = x0.data<uint8_t>()[(nb * 2 + c) * 3 + w];
          EXPECT_EQ(out[0].data<uint8_t>()[(nb * 3 + c) * 3 + w], q);
          expected.push_back(sy * (q - zy));
        } else {
          expected.push_back(0.07 * (x1.data<uint8_t>()[nb * 3 + w] - 3));
        }
      }
    }
  }
  expect_within_one_step(out[0], expected, sy, zy);
}

TEST(QuantizedContribOps, QLinearConcatRejectsAnIncompleteTriple) {
  EXPECT_THROW(run_op("QLinearConcat", {f(0.1f), u8(0), random_u8({1, 2}, 1), f(0.1f)}, {{"axis", int64_t{1}}}, 1, kMs),
               Error);
}

TEST(QuantizedContribOps, QLinearAveragePoolMatchesFloatPool) {
  const Tensor x = random_u8({1, 2, 5, 5}, 9);
  const float sx = 0.03f, sy = 0.02f;
  const int zx = 20, zy = 40;
  const auto out = run_op("QLinearAveragePool", {x, f(sx), u8(zx), f(sy), u8(zy)},
                          {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                          1, kMs);
  ASSERT_EQ(out[0].shape(), (Shape{1, 2, 3, 3}));
  std::vector<double> expected;
  for (int64_t c = 0; c < 2; ++c) {
    for (int64_t oh = 0; oh < 3; ++oh) {
      for (int64_t ow = 0; ow < 3; ++ow) {
        double sum = 0;
        int count = 0;  // count_include_pad = 0
        for (int64_t kh = 0; kh < 3; ++kh) {
          for (int64_t kw = 0; kw < 3; ++kw) {
            const int64_t ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
            if (ih < 0 || ih >= 5 || iw < 0 || iw >= 5) continue;
            sum += sx * (x.data<uint8_t>()[(c * 5 + ih) * 5 + iw] - zx);
            ++count;
          }
        }
        expected.push_back(sum / count);
      }
    }
  }
  expect_within_one_step(out[0], expected, sy, zy);
}

TEST(QuantizedContribOps, QLinearGlobalAveragePoolBothLayouts) {
  const Tensor x = random_u8({2, 3, 4, 4}, 10);
  const float sx = 0.05f, sy = 0.04f;
  const int zx = 128, zy = 100;
  const auto nchw = run_op("QLinearGlobalAveragePool", {x, f(sx), u8(zx), f(sy), u8(zy)}, {}, 1, kMs);
  ASSERT_EQ(nchw[0].shape(), (Shape{2, 3, 1, 1}));
  std::vector<double> expected;
  for (int64_t p = 0; p < 6; ++p) {
    double sum = 0;
    for (int64_t i = 0; i < 16; ++i) sum += sx * (x.data<uint8_t>()[p * 16 + i] - zx);
    expected.push_back(sum / 16);
  }
  expect_within_one_step(nchw[0], expected, sy, zy);

  // The same data as NHWC [2, 4, 4, 3]: channel c of image n is every third element.
  const Tensor nhwc_x = random_u8({2, 4, 4, 3}, 11);
  const auto nhwc = run_op("QLinearGlobalAveragePool", {nhwc_x, f(sx), u8(zx), f(sy), u8(zy)}, {{"channels_last", int64_t{1}}}, 1, kMs);
  ASSERT_EQ(nhwc[0].shape(), (Shape{2, 1, 1, 3}));
  std::vector<double> expected_nhwc;
  for (int64_t nb = 0; nb < 2; ++nb) {
    for (int64_t c = 0; c < 3; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < 16; ++i) sum += sx * (nhwc_x.data<uint8_t>()[(nb * 16 + i) * 3 + c] - zx);
      expected_nhwc.push_back(sum / 16);
    }
  }
  expect_within_one_step(nhwc[0], expected_nhwc, sy, zy);
}

}  // namespace
}  // namespace xnn
