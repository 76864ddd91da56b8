#include "harness/predict/op_features.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"

namespace xnn::predict {
namespace {

float feature(const OpFeatures& f, const std::string& name) {
  const auto& names = op_feature_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (name == names[i]) return f.x[i];
  }
  ADD_FAILURE() << "no feature " << name;
  return 0;
}

TEST(OpFeatures, PointwiseConvWithResidual) {
  // FusedConv(X, W, B, Z): 1x1, 32 -> 64 channels at 56x56, with a fused residual and ReLU.
  const OpFeatures f = featurize_op("c", "FusedConv", "f32_conv1x1_gemm+f32_gemm_6x16__avx2",
                                    parse_shapes_text("[1,32,56,56];[64,32,1,1];[64];[1,64,56,56]->[1,64,56,56]"), "Relu");
  EXPECT_EQ(f.family, "FusedConv|f32_conv1x1_gemm+f32_gemm_6x16__avx2");
  EXPECT_DOUBLE_EQ(f.macs, 64.0 * 56 * 56 * 32);
  EXPECT_DOUBLE_EQ(f.bytes, 4.0 * (32 * 56 * 56 + 64 * 32 + 64 + 64 * 56 * 56 + 64 * 56 * 56));
  EXPECT_DOUBLE_EQ(f.work, f.macs);
  EXPECT_EQ(feature(f, "cin"), 32);
  EXPECT_EQ(feature(f, "cout"), 64);
  EXPECT_EQ(feature(f, "h_out"), 56);
  EXPECT_EQ(feature(f, "kernel_h"), 1);
  EXPECT_EQ(feature(f, "stride"), 1);
  EXPECT_EQ(feature(f, "groups"), 1);
  EXPECT_EQ(feature(f, "depthwise"), 0);
  EXPECT_EQ(feature(f, "residual"), 1);
  EXPECT_EQ(feature(f, "inputs"), 4);
  EXPECT_EQ(feature(f, "activation"), activation_code("Relu"));
  EXPECT_FLOAT_EQ(feature(f, "log2_macs"), static_cast<float>(std::log2(1 + f.macs)));
  EXPECT_FLOAT_EQ(feature(f, "intensity"), static_cast<float>(f.macs / f.bytes));
}

TEST(OpFeatures, DepthwiseStride2) {
  // 5x5 depthwise, 96 channels, 28x28 -> 14x14 (padding 2), no bias, no residual.
  const OpFeatures f = featurize_op("d", "FusedConv", "f32_dwconv5x5s2__avx2",
                                    parse_shapes_text("[1,96,28,28];[96,1,5,5]->[1,96,14,14]"), "HardSwish");
  EXPECT_DOUBLE_EQ(f.macs, 96.0 * 14 * 14 * 25);
  EXPECT_EQ(feature(f, "groups"), 96);
  EXPECT_EQ(feature(f, "depthwise"), 1);
  EXPECT_EQ(feature(f, "kernel_h"), 5);
  EXPECT_EQ(feature(f, "kernel_w"), 5);
  EXPECT_EQ(feature(f, "stride"), 2);
  EXPECT_EQ(feature(f, "residual"), 0);
  EXPECT_EQ(feature(f, "h_in"), 28);
  EXPECT_EQ(feature(f, "w_out"), 14);
  EXPECT_GT(feature(f, "activation"), activation_code("Relu"));
}

TEST(OpFeatures, GemmUsesKAndN) {
  // Classifier: [1,1280] x [1000,1280]^T + [1000].
  const OpFeatures f = featurize_op("fc", "Gemm", "f32_gemv_4x8__avx2", parse_shapes_text("[1,1280];[1000,1280];[1000]->[1,1000]"));
  EXPECT_DOUBLE_EQ(f.macs, 1000.0 * 1280);
  EXPECT_EQ(feature(f, "cin"), 1280);
  EXPECT_EQ(feature(f, "cout"), 1000);
  EXPECT_EQ(feature(f, "activation"), 0);
}

TEST(OpFeatures, MacFreeOpsAreNormalisedByElementsMoved) {
  const OpFeatures f = featurize_op("add", "Add", "f32_vadd__avx2", parse_shapes_text("[1,24,56,56];[1,24,56,56]->[1,24,56,56]"));
  EXPECT_EQ(f.macs, 0);
  EXPECT_DOUBLE_EQ(f.work, 3.0 * 24 * 56 * 56);
  const OpFeatures pool = featurize_op("p", "GlobalAveragePool", "f32_global_avgpool__avx2", parse_shapes_text("[1,96,7,7]->[1,96,1,1]"));
  EXPECT_EQ(feature(pool, "stride"), 7);
  EXPECT_EQ(feature(pool, "cin"), 96);
}

TEST(OpFeatures, ConvWithoutFourDimensionalWeightIsAnError) {
  try {
    featurize_op("bad", "Conv", "reference", parse_shapes_text("[1,3,8,8];[16,3]->[1,16,8,8]"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'bad'"), std::string::npos) << e.what();
  }
}

TEST(OpFeatures, ActivationCodesAreDistinct) {
  EXPECT_EQ(activation_code(""), 0);
  EXPECT_LT(activation_code("Relu"), activation_code("Silu"));
  EXPECT_NE(activation_code("Clip"), activation_code("HardSwish"));
  EXPECT_GT(activation_code("SomethingNew"), activation_code("Silu"));
}

}  // namespace
}  // namespace xnn::predict
