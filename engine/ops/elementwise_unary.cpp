// Unary math: Erf, Sqrt, Exp, Log, Reciprocal, Floor, Ceil, Round (float types only, as in
// ONNX) and Abs, Neg, Sign (integers too). Float results follow IEEE: Sqrt(-1) and Log(-1) are
// NaN, Log(0) is -inf, Reciprocal(0) is inf. Integer Abs/Neg of the most negative value wrap to
// itself (two's complement, as numpy does) rather than being undefined behaviour.
#include <cmath>

#include "engine/ops/elementwise_common.h"

namespace xnn::elementwise {

void register_unary_math_ops(OpRegistry& r) {
  r.add(unary_op<kFloatTypes>("Erf", [](auto x) { return std::erf(x); }, "Gauss error function"));
  r.add(unary_op<kFloatTypes>("Sqrt", [](auto x) { return std::sqrt(x); }, "square root"));
  r.add(unary_op<kFloatTypes>("Exp", [](auto x) { return std::exp(x); }, "e^x"));
  r.add(unary_op<kFloatTypes>("Log", [](auto x) { return std::log(x); }, "natural logarithm"));
  r.add(unary_op<kFloatTypes>("Reciprocal", [](auto x) { return decltype(x)(1) / x; }, "1 / x"));
  r.add(unary_op<kFloatTypes>("Floor", [](auto x) { return std::floor(x); }, "round toward -inf"));
  r.add(unary_op<kFloatTypes>("Ceil", [](auto x) { return std::ceil(x); }, "round toward +inf"));
  // nearbyint in the default rounding mode rounds halves to even, as ONNX Round requires.
  r.add(unary_op<kFloatTypes>("Round", [](auto x) { return std::nearbyint(x); }, "round half to even"));

  r.add(unary_op<kNumericTypes>(
      "Abs",
      [](auto x) {
        using V = decltype(x);
        if constexpr (std::is_unsigned_v<V>) return x;
        else if constexpr (std::is_integral_v<V>) return x < V(0) ? wrapping_neg(x) : x;
        else return std::abs(x);
      },
      "|x|"));
  r.add(unary_op<kSignedTypes>("Neg", [](auto x) { return wrapping_neg(x); }, "-x"));
  r.add(unary_op<kNumericTypes>(
      "Sign",
      [](auto x) {
        using V = decltype(x);
        if (x > V(0)) return V(1);
        if constexpr (std::is_signed_v<V>) {
          if (x < V(0)) return V(-1);
        }
        return x;  // 0 (or NaN, which stays NaN)
      },
      "-1, 0 or 1 by the sign of x"));
}

}  // namespace xnn::elementwise
