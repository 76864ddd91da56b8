// Comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual: bool output), boolean logic
// (Not, And, Or, Xor: bool only) and Where (select by a bool condition, all three inputs
// broadcast together). Comparisons follow IEEE: any comparison with NaN is false.
#include "engine/ops/elementwise_common.h"

namespace xnn::elementwise {
namespace {

// y = f(a, b) as bool, with multidirectional broadcasting; a and b share one dtype.
template <unsigned Allowed, typename F>
void compare_kernel(const KernelContext& ctx, F f) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  dispatch_class<Allowed>(a.dtype(), ctx, [&]<typename T>() {
    broadcast_binary<T, T, bool>(a, b, y, [&](T p, T q) -> bool { return f(load(p), load(q)); });
  });
}

template <unsigned Allowed, typename F>
OpSchema compare_op(const std::string& type, F f, const std::string& doc) {
  return binary_schema(type, Allowed, DType::kBool, [f](KernelContext& c) { compare_kernel<Allowed>(c, f); }, doc);
}

void infer_where(InferContext& ctx) {
  check_dtype(ctx, ctx.input(0).dtype, kBoolType, "input 0 (condition)");
  check_same_dtype(ctx, 1, 2);
  const Shape shapes[3] = {ctx.input(0).shape, ctx.input(1).shape, ctx.input(2).shape};
  ctx.set_output(0, ctx.input(1).dtype, broadcast_shapes(std::span<const Shape>(shapes, 3), ctx.node()));
}

void where_kernel(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  Tensor& out = ctx.output(0);
  dispatch_class<kAllTypes>(x.dtype(), ctx, [&]<typename T>() {
    broadcast_ternary<bool, T, T, T>(cond, x, y, out, [](bool c, T a, T b) { return c ? a : b; });
  });
}

}  // namespace

void register_logical_ops(OpRegistry& r) {
  r.add(compare_op<kAllTypes>("Equal", [](auto a, auto b) { return a == b; }, "a == b"));
  r.add(compare_op<kNumericTypes>("Less", [](auto a, auto b) { return a < b; }, "a < b"));
  r.add(compare_op<kNumericTypes>("Greater", [](auto a, auto b) { return a > b; }, "a > b"));
  r.add(compare_op<kNumericTypes>("LessOrEqual", [](auto a, auto b) { return a <= b; }, "a <= b"));
  r.add(compare_op<kNumericTypes>("GreaterOrEqual", [](auto a, auto b) { return a >= b; }, "a >= b"));

  r.add(unary_op<kBoolType>("Not", [](auto x) { return !x; }, "logical not"));
  r.add(binary_op<kBoolType>("And", [](auto a, auto b) { return a && b; }, "logical and"));
  r.add(binary_op<kBoolType>("Or", [](auto a, auto b) { return a || b; }, "logical or"));
  r.add(binary_op<kBoolType>("Xor", [](auto a, auto b) { return a != b; }, "logical exclusive or"));

  OpSchema where;
  where.type = "Where";
  where.min_inputs = where.max_inputs = 3;
  where.infer = infer_where;
  where.reference = where_kernel;
  where.doc = "condition ? x : y, all three broadcast together";
  r.add(std::move(where));
}

}  // namespace xnn::elementwise
