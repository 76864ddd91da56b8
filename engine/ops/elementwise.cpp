// Elementwise ops. Each op is declared once here: schema, inference, cost, reference kernel.
#include <cmath>

#include "engine/ops/op_helpers.h"

namespace xnn {
namespace {

// ---- unary float ops -------------------------------------------------------------------
void infer_same(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  ctx.set_output(0, x.dtype, x.shape);
}

// Applies f elementwise for float tensors (f32/f64; f16 through float).
template <typename F>
void unary_float(KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t n = x.numel();
  switch (x.dtype()) {
    case DType::kF32: {
      const float* px = x.data<float>();
      float* py = y.data<float>();
      for (int64_t i = 0; i < n; ++i) py[i] = f(px[i]);
      return;
    }
    case DType::kF64: {
      const double* px = x.data<double>();
      double* py = y.data<double>();
      for (int64_t i = 0; i < n; ++i) py[i] = f(px[i]);
      return;
    }
    case DType::kF16: {
      const Half* px = x.data<Half>();
      Half* py = y.data<Half>();
      for (int64_t i = 0; i < n; ++i) py[i] = Half(f(static_cast<float>(px[i])));
      return;
    }
    default:
      ctx.unsupported("dtype " + std::string(dtype_name(x.dtype())) + " (expected a float type)");
  }
}

OpSchema unary(const char* type, KernelFn k) {
  OpSchema s;
  s.type = type;
  s.infer = infer_same;
  s.reference = std::move(k);
  return s;
}

// ---- binary arithmetic with broadcasting -------------------------------------------------
void infer_broadcast_same_type(InferContext& ctx) {
  const TensorInfo& a = ctx.input(0);
  const TensorInfo& b = ctx.input(1);
  if (a.dtype != b.dtype) {
    ctx.fail("inputs have different dtypes " + std::string(dtype_name(a.dtype)) + " and " +
             std::string(dtype_name(b.dtype)));
  }
  ctx.set_output(0, a.dtype, broadcast_shapes(a.shape, b.shape, ctx.node()));
}

template <typename F>
void binary_arith(KernelContext& ctx, F f) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  if (a.dtype() == DType::kF16) {
    broadcast_binary<Half, Half, Half>(a, b, y, [&](Half p, Half q) {
      return Half(f(static_cast<float>(p), static_cast<float>(q)));
    });
    return;
  }
  if (a.dtype() == DType::kBool) ctx.unsupported("arithmetic on bool tensors");
  dispatch_dtype(a.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, Half> && !std::is_same_v<T, bool>) {
      broadcast_binary<T, T, T>(a, b, y, [&](T p, T q) { return static_cast<T>(f(p, q)); });
    }
  });
}

OpSchema binary(const char* type, KernelFn k) {
  OpSchema s;
  s.type = type;
  s.min_inputs = s.max_inputs = 2;
  s.infer = infer_broadcast_same_type;
  s.reference = std::move(k);
  return s;
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  r.add(unary("Relu", [](KernelContext& c) { unary_float(c, [](auto v) { return v > 0 ? v : decltype(v)(0); }); }));
  r.add(binary("Add", [](KernelContext& c) { binary_arith(c, [](auto a, auto b) { return a + b; }); }));
}

}  // namespace xnn
