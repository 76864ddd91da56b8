// Features of one executed op for the latency predictor (nn-Meter's kernel-level features):
// computed from what both a stored per-op profile and a prepared session know -- op type,
// kernel name and tensor shapes -- so calibration data and new models featurise identically.
// MACs and bytes are derived here from the shapes (not taken from the caller) for the same
// reason. The one input a profile lacks -- the activation fused into a FusedConv/FusedGemm
// (a SiLU epilogue costs far more than a ReLU one) -- comes from the node's attribute in the
// session's optimised graph (model_features.h).
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "harness/predict/shapes_text.h"

namespace xnn::predict {

inline constexpr int kOpFeatureCount = 19;
using FeatureRow = std::array<float, kOpFeatureCount>;

struct OpFeatures {
  std::string name, op_type, kernel;
  std::string family;         // op_family(op_type, kernel): models are per op kind and kernel
  double macs = 0, bytes = 0;
  double work = 1;            // what time is normalised by: MACs, or elements moved for MAC-free ops
  FeatureRow x{};
};

// Names of the entries of OpFeatures::x, in order (for the predictor file and reports).
const std::array<const char*, kOpFeatureCount>& op_feature_names();

// "FusedConv|f32_conv1x1_gemm+f32_gemm_6x16__avx2": op kind and kernel choice, ISA suffix kept.
std::string op_family(const std::string& op_type, const std::string& kernel);

// The fused activation as an ordinal feature, roughly by epilogue cost: "" 0, Relu 1, Clip 2,
// LeakyRelu 3, HardSigmoid 4, HardSwish 5, Sigmoid 6, Silu 7; anything else 8.
float activation_code(const std::string& activation);

// Throws xnn::Error (naming the op) when the shapes cannot belong to the op, e.g. a Conv
// without a 4-D weight. `activation`: the fused activation attribute ("" for none).
OpFeatures featurize_op(const std::string& name, const std::string& op_type, const std::string& kernel,
                        const OpShapes& shapes, const std::string& activation = "");

}  // namespace xnn::predict
