// Activations fused into a producer's epilogue (conv, gemm, depthwise, elementwise add).
// One definition of each activation's math, shared by the fused reference kernel and by the
// optimised kernels, so "fused" and "unfused" agree to the last bit on the scalar path.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

enum class ActKind { kNone, kRelu, kClip, kLeakyRelu, kHardSwish, kHardSigmoid, kSigmoid, kSilu };

struct Activation {
  ActKind kind = ActKind::kNone;
  float alpha = 0;  // Clip: min; LeakyRelu: slope; HardSigmoid: alpha
  float beta = 0;   // Clip: max; HardSigmoid: beta

  static Activation relu() { return {ActKind::kRelu}; }
  static Activation clip(float lo, float hi) { return {ActKind::kClip, lo, hi}; }
  static Activation leaky_relu(float slope) { return {ActKind::kLeakyRelu, slope}; }
};

// Names as they appear in the fused ops' `activation` attribute: "Relu", "Clip", "LeakyRelu",
// "HardSwish", "HardSigmoid", "Sigmoid", "Silu" ("" = none). Throws on an unknown name.
ActKind act_kind_from_name(const std::string& name);
const char* act_kind_name(ActKind kind);

inline float apply_activation_scalar(float x, const Activation& a) {
  switch (a.kind) {
    case ActKind::kNone: return x;
    case ActKind::kRelu: return x > 0 ? x : 0.0f;
    case ActKind::kClip: return x < a.alpha ? a.alpha : (x > a.beta ? a.beta : x);
    case ActKind::kLeakyRelu: return x >= 0 ? x : x * a.alpha;
    case ActKind::kHardSwish: {
      float t = x / 6.0f + 0.5f;
      t = t < 0 ? 0 : (t > 1 ? 1 : t);
      return x * t;
    }
    case ActKind::kHardSigmoid: {
      const float t = a.alpha * x + a.beta;
      return t < 0 ? 0.0f : (t > 1 ? 1.0f : t);
    }
    case ActKind::kSigmoid: return 1.0f / (1.0f + std::exp(-x));
    case ActKind::kSilu: return x / (1.0f + std::exp(-x));
  }
  return x;
}

// In place over n contiguous floats, with the given ISA's vector path (AVX2 uses a
// polynomial exp accurate to a few ulp for Sigmoid/Silu).
void apply_activation(float* data, int64_t n, const Activation& act, Isa isa = best_isa());

}  // namespace xnn::kernels
