// Type conversion and copies: Cast, CastLike, Identity, Dropout (inference form).
// Cast follows convert_tensor (engine/core/tensor.h): float -> integer truncates toward zero and
// saturates out-of-range values (ONNX leaves those undefined), NaN -> 0 for integers and true
// for bool, x -> bool is x != 0, bool -> number is 0/1.
#include <algorithm>
#include <cstring>

#include "engine/ops/elementwise_common.h"

namespace xnn::elementwise {
namespace {

// Names of the ONNX TensorProto.DataType numbers we have no dtype for; null for other numbers.
const char* unsupported_onnx_type_name(int64_t onnx_type) {
  switch (onnx_type) {
    case 4: return "uint16";
    case 5: return "int16";
    case 8: return "string";
    case 12: return "uint32";
    case 13: return "uint64";
    case 14: return "complex64";
    case 15: return "complex128";
    case 16: return "bfloat16";
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    default: return nullptr;
  }
}

// ONNX TensorProto.DataType number -> DType. Valid ONNX types we have no dtype for are
// unsupported; numbers that are no ONNX type at all are errors.
DType dtype_from_onnx(int64_t onnx_type, const InferContext& ctx) {
  switch (onnx_type) {
    case 1: return DType::kF32;
    case 2: return DType::kU8;
    case 3: return DType::kI8;
    case 6: return DType::kI32;
    case 7: return DType::kI64;
    case 9: return DType::kBool;
    case 10: return DType::kF16;
    case 11: return DType::kF64;
    default: break;
  }
  if (const char* name = unsupported_onnx_type_name(onnx_type)) {
    ctx.unsupported("cast to ONNX type " + std::to_string(onnx_type) + " (" + name +
                    ") is not supported (supported: f32, f16, f64, i8, u8, i32, i64, bool)");
  }
  ctx.fail("attribute 'to' = " + std::to_string(onnx_type) + " is not an ONNX TensorProto data type");
}

void infer_cast(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  ctx.set_output(0, dtype_from_onnx(ctx.node().attr_int("to"), ctx), x.shape);
}

void infer_cast_like(InferContext& ctx) {
  ctx.set_output(0, ctx.input(1).dtype, ctx.input(0).shape);
}

void cast_kernel(KernelContext& ctx) { convert_tensor(ctx.input(0), ctx.output(0)); }

void copy_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
}

// ---- Dropout: inference only -------------------------------------------------------------------
// Training mode with a non-zero ratio drops elements at random, which is not inference; with
// ratio 0 it is an identity and handled like inference.
constexpr double kDefaultDropoutRatio = 0.5;

void infer_dropout(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  check_dtype(ctx, x.dtype, kFloatTypes, "input 0 (data)");
  if (ctx.has_input(1)) {
    check_dtype(ctx, ctx.input(1).dtype, kFloatTypes, "input 1 (ratio)");
    if (shape_numel(ctx.input(1).shape) != 1) ctx.fail("ratio must be a scalar, got " + shape_str(ctx.input(1).shape));
  }
  if (ctx.has_input(2)) {
    check_dtype(ctx, ctx.input(2).dtype, kBoolType, "input 2 (training_mode)");
    if (shape_numel(ctx.input(2).shape) != 1) {
      ctx.fail("training_mode must be a scalar, got " + shape_str(ctx.input(2).shape));
    }
    const Tensor* training = ctx.input(2).value;
    if (training && training->scalar_as_int() != 0) {
      const Tensor* ratio = ctx.has_input(1) ? ctx.input(1).value : nullptr;
      // An unknown ratio is decided at run time by the kernel.
      if (!ctx.has_input(1) || (ratio && ratio->scalar_as_double() != 0.0)) {
        ctx.unsupported("training_mode = true (random dropout) is not supported; only inference");
      }
    }
  }
  ctx.set_output(0, x.dtype, x.shape);
  ctx.set_output(1, DType::kBool, x.shape);  // mask; ignored when not requested
}

void dropout_kernel(KernelContext& ctx) {
  if (ctx.has_input(2) && ctx.input(2).scalar_as_int() != 0) {
    const double ratio = ctx.has_input(1) ? ctx.input(1).scalar_as_double() : kDefaultDropoutRatio;
    if (ratio != 0.0) ctx.unsupported("training_mode = true (random dropout) is not supported; only inference");
  }
  copy_kernel(ctx);
  if (ctx.has_output(1)) {
    Tensor& mask = ctx.output(1);
    bool* pm = mask.data<bool>();
    std::fill(pm, pm + mask.numel(), true);  // nothing is dropped
  }
}

OpSchema copy_schema(const std::string& type, int max_inputs, InferFn infer, KernelFn kernel, const std::string& doc) {
  OpSchema s;
  s.type = type;
  s.max_inputs = max_inputs;
  s.infer = std::move(infer);
  s.cost = copy_cost;
  s.reference = std::move(kernel);
  s.doc = doc;
  return s;
}

}  // namespace

void register_cast_ops(OpRegistry& r) {
  r.add(copy_schema("Cast", 1, infer_cast, cast_kernel, "converts to the dtype of attribute 'to'"));
  {
    OpSchema s = copy_schema("CastLike", 2, infer_cast_like, cast_kernel, "converts to the dtype of input 1");
    s.min_inputs = 2;
    r.add(std::move(s));
  }
  r.add(copy_schema(
      "Identity", 1,
      [](InferContext& ctx) { ctx.set_output(0, ctx.input(0).dtype, ctx.input(0).shape); },
      copy_kernel, "copy of the input"));
  {
    OpSchema s = copy_schema("Dropout", 3, infer_dropout, dropout_kernel,
                             "inference: copy of the input; optional mask output all true");
    s.max_outputs = 2;
    r.add(std::move(s));
  }
}

}  // namespace xnn::elementwise
