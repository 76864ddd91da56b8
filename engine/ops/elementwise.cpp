// The elementwise op family: the registration entry point and the shared schema builders
// declared in elementwise_common.h. The ops themselves live in focused files:
//   activation.cpp          Relu, LeakyRelu, PRelu, Clip, Sigmoid, Tanh, HardSigmoid, HardSwish,
//                           Elu, Selu, Softplus, Softsign
//   elementwise_unary.cpp   Erf, Sqrt, Exp, Log, Abs, Neg, Reciprocal, Floor, Ceil
//   elementwise_binary.cpp  Add, Sub, Mul, Div, Pow, Min, Max, Sum, Mean
//   logical.cpp             Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not, And, Or, Xor, Where
//   cast.cpp                Cast, CastLike, Identity, Dropout
#include "engine/ops/elementwise_common.h"

namespace xnn {
namespace elementwise {

unsigned class_of(DType t) {
  switch (t) {
    case DType::kF16:
    case DType::kF32:
    case DType::kF64: return kFloatTypes;
    case DType::kI8:
    case DType::kI32:
    case DType::kI64: return kSignedIntTypes;
    case DType::kU8: return kUnsignedIntTypes;
    case DType::kBool: return kBoolType;
    default: return 0;
  }
}

std::string class_names(unsigned classes) {
  std::string out;
  for (DType t : {DType::kF16, DType::kF32, DType::kF64, DType::kI8, DType::kU8, DType::kI32, DType::kI64,
                  DType::kBool}) {
    if (class_of(t) & classes) out += (out.empty() ? "" : ", ") + std::string(dtype_name(t));
  }
  return out;
}

void check_dtype(const InferContext& ctx, DType t, unsigned allowed, const std::string& what) {
  if ((class_of(t) & allowed) == 0u) {
    ctx.fail(what + " has dtype " + std::string(dtype_name(t)) + ", expected one of " + class_names(allowed));
  }
}

void check_same_dtype(const InferContext& ctx, int i, int j) {
  const DType a = ctx.input(i).dtype, b = ctx.input(j).dtype;
  if (a != b) {
    ctx.fail("inputs " + std::to_string(i) + " and " + std::to_string(j) + " must have the same dtype, got " +
             std::string(dtype_name(a)) + " and " + std::string(dtype_name(b)));
  }
}

OpSchema unary_schema(const std::string& type, unsigned allowed, KernelFn kernel, const std::string& doc) {
  OpSchema s;
  s.type = type;
  s.infer = [allowed](InferContext& ctx) {
    const TensorInfo& x = ctx.input(0);
    check_dtype(ctx, x.dtype, allowed, "input 0");
    ctx.set_output(0, x.dtype, x.shape);
  };
  s.reference = std::move(kernel);
  s.doc = doc;
  return s;
}

OpSchema binary_schema(const std::string& type, unsigned allowed, DType out_dtype, KernelFn kernel,
                       const std::string& doc) {
  OpSchema s;
  s.type = type;
  s.min_inputs = s.max_inputs = 2;
  s.infer = [allowed, out_dtype](InferContext& ctx) {
    const TensorInfo& a = ctx.input(0);
    const TensorInfo& b = ctx.input(1);
    check_dtype(ctx, a.dtype, allowed, "input 0");
    check_same_dtype(ctx, 0, 1);
    ctx.set_output(0, out_dtype == DType::kUnknown ? a.dtype : out_dtype,
                   broadcast_shapes(a.shape, b.shape, ctx.node()));
  };
  s.reference = std::move(kernel);
  s.doc = doc;
  return s;
}

OpCost copy_cost(const Node& node, std::span<const TensorInfo> inputs, std::span<const TensorInfo> outputs) {
  OpCost c = default_cost(node, inputs, outputs);
  c.macs = 0;
  return c;
}

}  // namespace elementwise

void register_elementwise_ops(OpRegistry& r) {
  elementwise::register_activation_ops(r);
  elementwise::register_unary_math_ops(r);
  elementwise::register_binary_ops(r);
  elementwise::register_logical_ops(r);
  elementwise::register_cast_ops(r);
}

}  // namespace xnn
