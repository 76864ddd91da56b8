// Shared machinery of the elementwise op family, private to engine/ops (activation.cpp,
// elementwise_unary.cpp, elementwise_binary.cpp, logical.cpp, cast.cpp; registered from
// register_elementwise_ops in elementwise.cpp).
//
// - dtype classes: which element types an op accepts (checked once in shape inference, so a bad
//   dtype is reported at import time, and compiled into the kernels, so a kernel is only
//   instantiated for the types it accepts);
// - the compute type: f16 is a storage format, its math goes through float;
// - kernel loops that dispatch on dtype once per tensor and then run a plain loop (or
//   broadcast_binary) with the op's functor inlined — no per-element dispatch.
//
// Cost: elementwise ops use default_cost (one op per output element). Transcendental ops
// (Exp, Log, Sigmoid, Tanh, Erf, Pow, ...) deliberately count the same 1 MAC per element: they
// are memory bound on real hardware at the sizes models use, and the latency model calibrates
// per op type anyway. Pure data movement (Identity, Dropout, Cast) counts 0 MACs; variadic ops
// count one op per output element for each input after the first.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "engine/ops/op_helpers.h"

namespace xnn::elementwise {

// ---- dtype classes -------------------------------------------------------------------------
enum DTypeClass : unsigned {
  kFloatTypes = 1u << 0,         // f16, f32, f64
  kSignedIntTypes = 1u << 1,     // i8, i32, i64
  kUnsignedIntTypes = 1u << 2,   // u8
  kBoolType = 1u << 3,
  kIntTypes = kSignedIntTypes | kUnsignedIntTypes,
  kSignedTypes = kFloatTypes | kSignedIntTypes,
  kNumericTypes = kFloatTypes | kIntTypes,
  kAllTypes = kNumericTypes | kBoolType,
};

template <typename T>
constexpr unsigned class_of() {
  if constexpr (std::is_same_v<T, bool>) return kBoolType;
  else if constexpr (std::is_same_v<T, Half> || std::is_floating_point_v<T>) return kFloatTypes;
  else if constexpr (std::is_signed_v<T>) return kSignedIntTypes;
  else return kUnsignedIntTypes;
}
unsigned class_of(DType t);  // 0 for kUnknown
// "f16, f32, f64" for kFloatTypes, etc.
std::string class_names(unsigned classes);

// Fails naming the node unless `t` belongs to `allowed`; `what` names the tensor ("input 0").
void check_dtype(const InferContext& ctx, DType t, unsigned allowed, const std::string& what);
// Fails unless inputs `i` and `j` have the same dtype (ONNX type constraint T shared by both).
void check_same_dtype(const InferContext& ctx, int i, int j);

// Runs fn.template operator()<T>() for the C++ type of `t`, instantiated only for types in
// `Allowed`; any other dtype fails naming the node (inference has normally rejected it already).
template <unsigned Allowed, typename Ctx, typename Fn>
void dispatch_class(DType t, const Ctx& ctx, Fn&& fn) {
  dispatch_dtype(t, [&]<typename T>() {
    if constexpr ((class_of<T>() & Allowed) != 0u) {
      fn.template operator()<T>();
    } else {
      ctx.fail("dtype " + std::string(dtype_name(t)) + " is not supported (expected one of " +
               class_names(Allowed) + ")");
    }
  });
}

// ---- compute type: f16 math goes through float ---------------------------------------------
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, Half>, float, T>;

template <typename T>
compute_t<T> load(T v) { return static_cast<compute_t<T>>(v); }
template <typename T, typename V>
T store(V v) { return static_cast<T>(v); }

// ---- integer arithmetic without undefined behaviour ------------------------------------------
// Signed overflow wraps (two's complement, as numpy and onnxruntime behave) instead of being
// UB; the engine runs under UBSan in tests. Float types use the plain operators.
template <typename T>
T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename T>
T wrapping_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}
template <typename T>
T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    // u8 * u8 promotes to int and cannot overflow it; wider U multiply modulo 2^n.
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}
template <typename T>
T wrapping_neg(T a) {
  if constexpr (std::is_integral_v<T>) return wrapping_sub(T(0), a);
  else return -a;  // not 0 - a: that would turn +0 into +0 instead of -0
}

// Real value -> integer type T, truncating toward zero and saturating out-of-range values;
// NaN -> 0. The same rule convert_tensor (Cast) uses.
template <typename T>
T saturating_cast(double v) {
  if (std::isnan(v)) return T(0);
  const double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (t >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(t);
}

// ---- kernel loops -----------------------------------------------------------------------------
// y[i] = f(x[i]) for an op whose output dtype equals its input's; f sees compute_t<T> values.
template <unsigned Allowed, typename F>
void unary_kernel(const KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  dispatch_class<Allowed>(x.dtype(), ctx, [&]<typename T>() {
    const T* px = static_cast<const T*>(x.raw());
    T* py = static_cast<T*>(y.raw());
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) py[i] = store<T>(f(load(px[i])));
  });
}

// y = f(a, b) with multidirectional broadcasting; a, b and y share one dtype.
template <unsigned Allowed, typename F>
void binary_kernel(const KernelContext& ctx, F f) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  dispatch_class<Allowed>(a.dtype(), ctx, [&]<typename T>() {
    broadcast_binary<T, T, T>(a, b, y, [&](T p, T q) { return store<T>(f(load(p), load(q))); });
  });
}

// ---- schema builders --------------------------------------------------------------------------
// One input of a dtype in `allowed`, one output of the same dtype and shape.
OpSchema unary_schema(const std::string& type, unsigned allowed, KernelFn kernel, const std::string& doc);

// The common case of unary_schema: the kernel is unary_kernel with functor f.
template <unsigned Allowed, typename F>
OpSchema unary_op(const std::string& type, F f, const std::string& doc) {
  return unary_schema(type, Allowed, [f](KernelContext& c) { unary_kernel<Allowed>(c, f); }, doc);
}

// Two inputs of one dtype in `allowed`, broadcast multidirectionally; output dtype is
// `out_dtype`, or the inputs' dtype when kUnknown.
OpSchema binary_schema(const std::string& type, unsigned allowed, DType out_dtype, KernelFn kernel,
                       const std::string& doc);

template <unsigned Allowed, typename F>
OpSchema binary_op(const std::string& type, F f, const std::string& doc) {
  return binary_schema(type, Allowed, DType::kUnknown, [f](KernelContext& c) { binary_kernel<Allowed>(c, f); },
                       doc);
}

// Cost of data movement: bytes only, no arithmetic.
OpCost copy_cost(const Node& node, std::span<const TensorInfo> inputs, std::span<const TensorInfo> outputs);

// Family members, one per file; register_elementwise_ops calls them all.
void register_activation_ops(OpRegistry& r);
void register_unary_math_ops(OpRegistry& r);
void register_binary_ops(OpRegistry& r);
void register_logical_ops(OpRegistry& r);
void register_cast_ops(OpRegistry& r);

}  // namespace xnn::elementwise
