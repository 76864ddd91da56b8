// uint8 activation parameters, symmetric int8 weights and int32 bias (quant_params.h).
#include <gtest/gtest.h>

#include <cmath>

#include "compress/quantize/quant_params.h"
#include "tests/compress/test_graph.h"

namespace xnn::quantize {
namespace {

TEST(QuantParams, Uint8ParametersRepresentZeroExactly) {
  const ActivationParams p = uint8_params({-1.0f, 3.0f});
  EXPECT_FLOAT_EQ(p.scale, 4.0f / 255.0f);
  EXPECT_EQ(p.zero_point, 64);
  EXPECT_EQ(dequantize_uint8(quantize_uint8(0.0f, p), p), 0.0f);
  const ActivationParams relu = uint8_params({0.0f, 6.0f});
  EXPECT_EQ(relu.zero_point, 0);
  EXPECT_FLOAT_EQ(relu.max_real(), 6.0f);
  // A range that does not contain 0 is widened to contain it.
  const ActivationParams pos = uint8_params({2.0f, 5.1f});
  EXPECT_EQ(pos.zero_point, 0);
  EXPECT_FLOAT_EQ(pos.scale, 0.02f);
  // Saturation and rounding half to even.
  EXPECT_EQ(quantize_uint8(100.0f, relu), 255);
  EXPECT_EQ(quantize_uint8(-1.0f, relu), 0);
  const ActivationParams unit{1.0f, 0};
  EXPECT_EQ(quantize_uint8(2.5f, unit), 2);
  EXPECT_EQ(quantize_uint8(3.5f, unit), 4);
}

TEST(QuantParams, PerChannelWeightsRoundTripWithinHalfAStep) {
  const Tensor w = quantize::test::random_tensor({4, 3, 3, 3}, -1.0f, 1.0f, 7);
  // Channel 2 much smaller than the others: per-channel scales keep its precision.
  for (int64_t i = 2 * 27; i < 3 * 27; ++i) w.data<float>()[i] *= 0.01f;
  const QuantizedWeights q = quantize_weights_symmetric(w, 0);
  ASSERT_EQ(q.scales.size(), 4u);
  EXPECT_EQ(q.values.dtype(), DType::kI8);
  const Tensor back = dequantize_weights(q);
  for (int64_t i = 0; i < w.numel(); ++i) {
    const float step = q.scales[static_cast<size_t>(i / 27)];
    EXPECT_LE(std::fabs(back.data<float>()[i] - w.data<float>()[i]), 0.5f * step + 1e-7f) << i;
    EXPECT_GE(q.values.data<int8_t>()[i], -127);
  }
  // The largest magnitude of each channel maps to +-127.
  for (int64_t c = 0; c < 4; ++c) {
    int max_abs = 0;
    for (int64_t i = c * 27; i < (c + 1) * 27; ++i) max_abs = std::max(max_abs, std::abs(int(q.values.data<int8_t>()[i])));
    EXPECT_EQ(max_abs, 127);
  }
  // Per tensor: one scale, and the small channel loses most of its precision.
  const QuantizedWeights t = quantize_weights_symmetric(w, -1);
  ASSERT_EQ(t.scales.size(), 1u);
  const Tensor tb = dequantize_weights(t);
  double err_channel = 0, err_tensor = 0;
  for (int64_t i = 2 * 27; i < 3 * 27; ++i) {
    err_channel += std::fabs(back.data<float>()[i] - w.data<float>()[i]);
    err_tensor += std::fabs(tb.data<float>()[i] - w.data<float>()[i]);
  }
  EXPECT_LT(err_channel * 10, err_tensor);
}

TEST(QuantParams, ReducedRangeWeightsMapTheLargestMagnitudeToSixtyFour) {
  const Tensor w = quantize::test::random_tensor({4, 3, 3, 3}, -1.0f, 1.0f, 7);
  const QuantizedWeights q = quantize_weights_symmetric(w, 0, kReducedWeightQmax);
  const Tensor back = dequantize_weights(q);
  for (int64_t c = 0; c < 4; ++c) {
    int max_abs = 0;
    for (int64_t i = c * 27; i < (c + 1) * 27; ++i) {
      max_abs = std::max(max_abs, std::abs(int(q.values.data<int8_t>()[i])));
      EXPECT_LE(std::fabs(back.data<float>()[i] - w.data<float>()[i]), 0.5f * q.scales[size_t(c)] + 1e-7f) << i;
    }
    EXPECT_EQ(max_abs, 64) << c;
  }
  // Twice the full range's step, for the same data.
  const QuantizedWeights full = quantize_weights_symmetric(w, 0);
  for (size_t c = 0; c < 4; ++c) EXPECT_NEAR(q.scales[c], full.scales[c] * 127.0f / 64.0f, 1e-7f) << c;
  EXPECT_THROW(quantize_weights_symmetric(w, 0, 0), Error);
  EXPECT_THROW(quantize_weights_symmetric(w, 0, 128), Error);
}

TEST(QuantParams, GemmWeightsPerColumnAlongAxisOne) {
  const Tensor w = Tensor::from_vector<float>({1, -2, 0, 4, 0.5f, 0}, {2, 3});
  const QuantizedWeights q = quantize_weights_symmetric(w, 1);
  ASSERT_EQ(q.scales.size(), 3u);
  EXPECT_FLOAT_EQ(q.scales[0], 4.0f / 127);
  EXPECT_FLOAT_EQ(q.scales[1], 2.0f / 127);
  EXPECT_FLOAT_EQ(q.scales[2], 1.0f);  // an all-zero column
  EXPECT_EQ(q.values.data<int8_t>()[3], 127);
  EXPECT_EQ(q.values.data<int8_t>()[1], -127);
  EXPECT_EQ(q.values.data<int8_t>()[2], 0);
}

TEST(QuantParams, BiasIsInUnitsOfInputTimesWeightScale) {
  const Tensor b = Tensor::from_vector<float>({0.5f, -0.25f, 1e9f}, {3});
  const Tensor q = quantize_bias(b, 0.1f, {0.01f, 0.02f, 0.001f});
  EXPECT_EQ(q.dtype(), DType::kI32);
  EXPECT_EQ(q.data<int32_t>()[0], 500);
  EXPECT_EQ(q.data<int32_t>()[1], -125);
  EXPECT_EQ(q.data<int32_t>()[2], std::numeric_limits<int32_t>::max());  // saturated
  EXPECT_THROW(quantize_bias(b, 0.1f, {0.1f, 0.2f}), Error);
}

}  // namespace
}  // namespace xnn::quantize
