// The fused activations in double precision, for kernel tests that compare against a double
// loop nest: the formulas of apply_activation_scalar (engine/kernels/activation.h), evaluated in
// double.
#pragma once
#include <algorithm>
#include <cmath>

#include "engine/kernels/activation.h"

namespace xnn::kernels::test_ref {

inline double act_double(double x, const Activation& a) {
  switch (a.kind) {
    case ActKind::kNone: return x;
    case ActKind::kRelu: return x > 0 ? x : 0;
    case ActKind::kClip: return x < a.alpha ? a.alpha : (x > a.beta ? a.beta : x);
    case ActKind::kLeakyRelu: return x >= 0 ? x : x * a.alpha;
    case ActKind::kHardSwish: return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
    case ActKind::kHardSigmoid: return std::clamp(a.alpha * x + a.beta, 0.0, 1.0);
    case ActKind::kSigmoid: return 1 / (1 + std::exp(-x));
    case ActKind::kSilu: return x / (1 + std::exp(-x));
  }
  return x;
}

}  // namespace xnn::kernels::test_ref
