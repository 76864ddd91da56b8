// Binary and variadic arithmetic with multidirectional (numpy) broadcasting: Add, Sub, Mul, Div,
// Pow, Min, Max, Sum, Mean.
//
// Integer semantics (ONNX leaves these to the implementation; we pick what numpy/onnxruntime do
// where that is defined, and never crash or hit undefined behaviour):
//   - Add/Sub/Mul overflow wraps around (two's complement).
//   - Div truncates toward zero like C. Division by zero gives 0 (numpy also returns 0, with a
//     warning); INT_MIN / -1 wraps to INT_MIN.
//   - Pow with an integer base and a negative integer exponent gives the real result truncated
//     toward zero: 1 for base 1, +-1 for base -1, 0 otherwise (0 for base 0, as for Div by 0).
//     An integer base with a float exponent computes in double and converts like Cast
//     (truncate, saturate, NaN -> 0).
// Min/Max propagate NaN like numpy's minimum/maximum.
#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/ops/elementwise_common.h"

namespace xnn::elementwise {
namespace {

template <typename V>
V divide(V a, V b) {
  if constexpr (std::is_integral_v<V>) {
    if (b == V(0)) return V(0);
    if constexpr (std::is_signed_v<V>) {
      if (b == V(-1)) return wrapping_neg(a);  // INT_MIN / -1 overflows
    }
    return static_cast<V>(a / b);
  } else {
    return a / b;
  }
}

template <typename V>
V minimum(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(b)) return b;
  }
  return b < a ? b : a;  // a NaN `a` is kept: the comparison is false
}
template <typename V>
V maximum(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(b)) return b;
  }
  return b > a ? b : a;
}

// ---- Pow: the exponent may have another dtype; the output has the base's ----------------------
template <typename T>
T integer_power(T base, int64_t exponent) {
  if (exponent < 0) {
    if (base == T(1)) return T(1);
    if constexpr (std::is_signed_v<T>) {
      if (base == T(-1)) return (exponent % 2 == 0) ? T(1) : T(-1);
    }
    return T(0);
  }
  using U = std::make_unsigned_t<T>;
  U result = 1, factor = static_cast<U>(base);
  for (uint64_t e = static_cast<uint64_t>(exponent); e != 0; e >>= 1) {
    if (e & 1u) result = static_cast<U>(result * factor);
    factor = static_cast<U>(factor * factor);
  }
  return static_cast<T>(result);
}

template <typename T, typename E>
T power(T base, E exponent) {
  if constexpr (class_of<T>() == kFloatTypes) {
    using V = compute_t<T>;
    return store<T>(std::pow(load(base), static_cast<V>(load(exponent))));
  } else if constexpr (class_of<E>() == kFloatTypes) {
    return saturating_cast<T>(std::pow(static_cast<double>(base), static_cast<double>(load(exponent))));
  } else {
    return integer_power(base, static_cast<int64_t>(exponent));
  }
}

void infer_pow(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const TensorInfo& y = ctx.input(1);
  check_dtype(ctx, x.dtype, kNumericTypes, "input 0 (base)");
  check_dtype(ctx, y.dtype, kNumericTypes, "input 1 (exponent)");
  ctx.set_output(0, x.dtype, broadcast_shapes(x.shape, y.shape, ctx.node()));
}

void pow_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& e = ctx.input(1);
  Tensor& y = ctx.output(0);
  dispatch_class<kNumericTypes>(x.dtype(), ctx, [&]<typename T>() {
    dispatch_class<kNumericTypes>(e.dtype(), ctx, [&]<typename E>() {
      broadcast_binary<T, E, T>(x, e, y, [](T b, E p) { return power(b, p); });
    });
  });
}

// ---- variadic ops: any number of inputs of one dtype, all broadcast together ------------------
OpSchema variadic_schema(const std::string& type, unsigned allowed, KernelFn kernel, const std::string& doc) {
  OpSchema s;
  s.type = type;
  s.min_inputs = 1;
  s.max_inputs = OpSchema::kVariadic;
  s.infer = [allowed](InferContext& ctx) {
    check_dtype(ctx, ctx.input(0).dtype, allowed, "input 0");
    std::vector<Shape> shapes;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (i > 0) check_same_dtype(ctx, 0, i);
      shapes.push_back(ctx.input(i).shape);
    }
    ctx.set_output(0, ctx.input(0).dtype, broadcast_shapes(shapes, ctx.node()));
  };
  // One op per output element for each input after the first.
  s.cost = [](const Node& node, std::span<const TensorInfo> inputs, std::span<const TensorInfo> outputs) {
    OpCost c = default_cost(node, inputs, outputs);
    c.macs *= static_cast<double>(std::max<size_t>(inputs.size(), 2) - 1);
    return c;
  };
  s.reference = std::move(kernel);
  s.doc = doc;
  return s;
}

// Folds the inputs left to right with f: y = f(f(x0, x1), x2) ...
template <unsigned Allowed, typename F>
void variadic_kernel(KernelContext& ctx, F f) {
  const Tensor& first = ctx.input(0);
  Tensor& y = ctx.output(0);
  dispatch_class<Allowed>(first.dtype(), ctx, [&]<typename T>() {
    if (ctx.num_inputs() == 1) {
      if (y.nbytes()) std::memcpy(y.raw(), first.raw(), y.nbytes());
      return;
    }
    const auto combine = [&](T p, T q) { return store<T>(f(load(p), load(q))); };
    broadcast_binary<T, T, T>(first, ctx.input(1), y, combine);
    // y already has the output shape, so it is read and written at the same index: safe in place.
    for (int i = 2; i < ctx.num_inputs(); ++i) broadcast_binary<T, T, T>(y, ctx.input(i), y, combine);
  });
}

void mean_kernel(KernelContext& ctx) {
  variadic_kernel<kFloatTypes>(ctx, [](auto a, auto b) { return a + b; });
  Tensor& y = ctx.output(0);
  const int count = ctx.num_inputs();
  dispatch_class<kFloatTypes>(y.dtype(), ctx, [&]<typename T>() {
    using V = compute_t<T>;
    T* py = static_cast<T*>(y.raw());
    const int64_t n = y.numel();
    for (int64_t i = 0; i < n; ++i) py[i] = store<T>(load(py[i]) / static_cast<V>(count));
  });
}

}  // namespace

void register_binary_ops(OpRegistry& r) {
  r.add(binary_op<kNumericTypes>("Add", [](auto a, auto b) { return wrapping_add(a, b); }, "a + b"));
  r.add(binary_op<kNumericTypes>("Sub", [](auto a, auto b) { return wrapping_sub(a, b); }, "a - b"));
  r.add(binary_op<kNumericTypes>("Mul", [](auto a, auto b) { return wrapping_mul(a, b); }, "a * b"));
  r.add(binary_op<kNumericTypes>(
      "Div", [](auto a, auto b) { return divide(a, b); }, "a / b; integers truncate, x / 0 = 0"));

  {
    OpSchema s;
    s.type = "Pow";
    s.min_inputs = s.max_inputs = 2;
    s.infer = infer_pow;
    s.reference = pow_kernel;
    s.doc = "base ^ exponent; the output has the base's dtype";
    r.add(std::move(s));
  }

  r.add(variadic_schema(
      "Min", kNumericTypes,
      [](KernelContext& c) { variadic_kernel<kNumericTypes>(c, [](auto a, auto b) { return minimum(a, b); }); },
      "elementwise minimum of all inputs"));
  r.add(variadic_schema(
      "Max", kNumericTypes,
      [](KernelContext& c) { variadic_kernel<kNumericTypes>(c, [](auto a, auto b) { return maximum(a, b); }); },
      "elementwise maximum of all inputs"));
  // ONNX types Sum for floats only; integers are accepted too (as onnxruntime does), wrapping.
  r.add(variadic_schema(
      "Sum", kNumericTypes,
      [](KernelContext& c) { variadic_kernel<kNumericTypes>(c, [](auto a, auto b) { return wrapping_add(a, b); }); },
      "elementwise sum of all inputs"));
  r.add(variadic_schema("Mean", kFloatTypes, mean_kernel, "elementwise mean of all inputs"));
}

}  // namespace xnn::elementwise
