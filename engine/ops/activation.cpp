// Activation functions: Relu, LeakyRelu, PRelu, Clip, Sigmoid, Tanh, HardSigmoid, HardSwish, Elu,
// Selu, Softplus, Softsign. Float math on f16 goes through float (see elementwise_common.h).
// NaN inputs propagate to NaN outputs (comparisons are written so that NaN falls through), as
// in the numpy reference implementation of ONNX.
#include <cmath>
#include <limits>

#include "engine/ops/elementwise_common.h"

namespace xnn::elementwise {
namespace {

// Clamps to [0, 1]; NaN stays NaN (std::clamp/std::max would turn it into a bound).
template <typename V>
V clamp_unit(V v) {
  if (v < V(0)) return V(0);
  if (v > V(1)) return V(1);
  return v;
}

// sigmoid without overflow: exp is only taken of a non-positive number.
template <typename V>
V sigmoid(V x) {
  if (x >= V(0)) return V(1) / (V(1) + std::exp(-x));
  const V e = std::exp(x);
  return e / (V(1) + e);
}

// log(1 + exp(x)) without overflow for large x or loss of precision for very negative x.
template <typename V>
V softplus(V x) {
  return (x > V(0) ? x : V(0)) + std::log1p(std::exp(-std::abs(x)));
}

// ---- PRelu: slope broadcast unidirectionally to X ---------------------------------------------
void infer_prelu(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const TensorInfo& slope = ctx.input(1);
  check_dtype(ctx, x.dtype, kNumericTypes, "input 0 (X)");
  check_same_dtype(ctx, 0, 1);
  if (broadcast_shapes(x.shape, slope.shape, ctx.node()) != x.shape) {
    ctx.fail("slope of shape " + shape_str(slope.shape) + " cannot be broadcast to X of shape " +
             shape_str(x.shape) + " (PRelu broadcasts the slope unidirectionally)");
  }
  ctx.set_output(0, x.dtype, x.shape);
}

void prelu_kernel(KernelContext& ctx) {
  binary_kernel<kNumericTypes>(ctx, [](auto x, auto slope) {
    using V = decltype(x);
    if constexpr (std::is_unsigned_v<V>) {
      return x;  // never negative
    } else {
      return x < V(0) ? wrapping_mul(x, slope) : x;
    }
  });
}

// ---- Clip: min and max are optional scalar inputs (opset 11+) --------------------------------
void infer_clip(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  check_dtype(ctx, x.dtype, kNumericTypes, "input 0");
  for (int i : {1, 2}) {
    if (!ctx.has_input(i)) continue;
    check_same_dtype(ctx, 0, i);
    if (shape_numel(ctx.input(i).shape) != 1) {
      ctx.fail(std::string(i == 1 ? "min" : "max") + " must be a scalar, got shape " +
               shape_str(ctx.input(i).shape));
    }
  }
  ctx.set_output(0, x.dtype, x.shape);
}

template <typename V>
constexpr V lowest_bound() {
  if constexpr (std::is_floating_point_v<V>) return -std::numeric_limits<V>::infinity();
  else return std::numeric_limits<V>::lowest();
}
template <typename V>
constexpr V highest_bound() {
  if constexpr (std::is_floating_point_v<V>) return std::numeric_limits<V>::infinity();
  else return std::numeric_limits<V>::max();
}

void clip_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  dispatch_class<kNumericTypes>(x.dtype(), ctx, [&]<typename T>() {
    using V = compute_t<T>;
    const V lo = ctx.has_input(1) ? load(static_cast<const T*>(ctx.input(1).raw())[0]) : lowest_bound<V>();
    const V hi = ctx.has_input(2) ? load(static_cast<const T*>(ctx.input(2).raw())[0]) : highest_bound<V>();
    const T* px = static_cast<const T*>(x.raw());
    T* py = static_cast<T*>(y.raw());
    const int64_t n = x.numel();
    // max then min, in this order: with min > max every element becomes max (ONNX rule).
    for (int64_t i = 0; i < n; ++i) {
      V v = load(px[i]);
      if (v < lo) v = lo;
      if (v > hi) v = hi;
      py[i] = store<T>(v);
    }
  });
}

}  // namespace

void register_activation_ops(OpRegistry& r) {
  r.add(unary_op<kSignedTypes>(
      "Relu", [](auto x) { return x < decltype(x)(0) ? decltype(x)(0) : x; }, "max(x, 0)"));

  r.add(unary_schema(
      "LeakyRelu", kFloatTypes,
      [](KernelContext& c) {
        const float alpha = c.node().attr_float("alpha", 0.01f);
        unary_kernel<kFloatTypes>(c, [alpha](auto x) {
          using V = decltype(x);
          return x < V(0) ? V(alpha) * x : x;
        });
      },
      "x < 0 ? alpha * x : x (alpha = 0.01)"));

  {
    OpSchema s;
    s.type = "PRelu";
    s.min_inputs = s.max_inputs = 2;
    s.infer = infer_prelu;
    s.reference = prelu_kernel;
    s.doc = "x < 0 ? slope * x : x; slope broadcasts to X";
    r.add(std::move(s));
  }
  {
    OpSchema s;
    s.type = "Clip";
    s.min_inputs = 1;
    s.max_inputs = 3;
    s.infer = infer_clip;
    s.reference = clip_kernel;
    s.doc = "min(max(x, min), max); min and max are optional scalar inputs";
    r.add(std::move(s));
  }

  r.add(unary_op<kFloatTypes>("Sigmoid", [](auto x) { return sigmoid(x); }, "1 / (1 + exp(-x))"));
  r.add(unary_op<kFloatTypes>("Tanh", [](auto x) { return std::tanh(x); }, "tanh(x)"));

  r.add(unary_schema(
      "HardSigmoid", kFloatTypes,
      [](KernelContext& c) {
        const float alpha = c.node().attr_float("alpha", 0.2f);
        const float beta = c.node().attr_float("beta", 0.5f);
        unary_kernel<kFloatTypes>(c, [alpha, beta](auto x) {
          using V = decltype(x);
          return clamp_unit(V(alpha) * x + V(beta));
        });
      },
      "max(0, min(1, alpha * x + beta)) (alpha = 0.2, beta = 0.5)"));

  r.add(unary_op<kFloatTypes>(
      "HardSwish",
      [](auto x) {
        using V = decltype(x);
        return x * clamp_unit(x / V(6) + V(0.5));
      },
      "x * max(0, min(1, x / 6 + 0.5))"));

  r.add(unary_schema(
      "Elu", kFloatTypes,
      [](KernelContext& c) {
        const float alpha = c.node().attr_float("alpha", 1.0f);
        unary_kernel<kFloatTypes>(c, [alpha](auto x) {
          using V = decltype(x);
          return x < V(0) ? V(alpha) * std::expm1(x) : x;
        });
      },
      "x < 0 ? alpha * (exp(x) - 1) : x (alpha = 1)"));

  r.add(unary_schema(
      "Selu", kFloatTypes,
      [](KernelContext& c) {
        const float alpha = c.node().attr_float("alpha", 1.67326319217681884765625f);
        const float gamma = c.node().attr_float("gamma", 1.05070102214813232421875f);
        unary_kernel<kFloatTypes>(c, [alpha, gamma](auto x) {
          using V = decltype(x);
          return x <= V(0) ? V(gamma) * V(alpha) * std::expm1(x) : V(gamma) * x;
        });
      },
      "gamma * (x <= 0 ? alpha * (exp(x) - 1) : x)"));

  r.add(unary_op<kFloatTypes>("Softplus", [](auto x) { return softplus(x); }, "log(1 + exp(x))"));
  r.add(unary_op<kFloatTypes>(
      "Softsign", [](auto x) { return x / (decltype(x)(1) + std::abs(x)); }, "x / (1 + |x|)"));
}

}  // namespace xnn::elementwise
