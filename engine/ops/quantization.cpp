// Quantisation boundary ops: QuantizeLinear, DequantizeLinear (per tensor or per axis) and
// DynamicQuantizeLinear (scale and zero point computed from the data). These carry quantised
// models in from other tools (QDQ ONNX) and define the float <-> int8 conversions every int8
// kernel of the engine must agree with. Formulas: engine/ops/quant_common.h.
#include <algorithm>

#include "engine/ops/nn_common.h"
#include "engine/ops/quant_common.h"

namespace xnn {
namespace {

// outer × channels × inner view of a tensor around `axis` (channels = 1 for per-tensor).
struct AxisSplit {
  int64_t outer = 1, channels = 1, inner = 1;
};

template <typename Ctx>
AxisSplit axis_split(const Ctx& ctx, const Shape& x, const Shape& scale) {
  const int64_t n = shape_numel(scale);
  if (ctx.node().attr_int("block_size", 0) != 0) ctx.unsupported("blocked quantisation (block_size)");
  AxisSplit s;
  if (scale.empty() || n == 1) {  // per tensor
    s.inner = shape_numel(x);
    return s;
  }
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is out of range for input " + shape_str(x));
  if (axis < 0) axis += rank;
  s.channels = x[static_cast<size_t>(axis)];
  for (int64_t d = 0; d < axis; ++d) s.outer *= x[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) s.inner *= x[static_cast<size_t>(d)];
  check_quant_param(ctx, scale, s.channels, "scale");
  return s;
}

// ---- QuantizeLinear --------------------------------------------------------------------------

void infer_quantize(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  if (x.dtype != DType::kF32 && x.dtype != DType::kI32) {
    ctx.fail("input x has dtype " + std::string(dtype_name(x.dtype)) + ", expected float32 or int32");
  }
  if (ctx.input(1).dtype != DType::kF32) ctx.fail("y_scale must be float32");
  DType out = DType::kU8;
  if (ctx.has_input(2)) {
    out = ctx.input(2).dtype;
    dispatch_int8(ctx, out, "y_zero_point", []<typename Q>() {});
    if (ctx.input(2).shape != ctx.input(1).shape && shape_numel(ctx.input(2).shape) != shape_numel(ctx.input(1).shape)) {
      ctx.fail("y_zero_point " + shape_str(ctx.input(2).shape) + " and y_scale " + shape_str(ctx.input(1).shape) +
               " differ in size");
    }
  }
  axis_split(ctx, x.shape, ctx.input(1).shape);
  ctx.set_output(0, out, x.shape);
}

void run_quantize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const AxisSplit s = axis_split(ctx, x.shape(), ctx.input(1).shape());
  const std::vector<double> scale = per_slice_floats(ctx.input(1), s.channels);
  const std::vector<int32_t> zp = per_slice_ints(ctx.has_input(2) ? &ctx.input(2) : nullptr, s.channels);
  Tensor& y = ctx.output(0);
  dispatch_int8(ctx, y.dtype(), "y", [&]<typename Q>() {
    Q* py = y.data<Q>();
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t c = 0; c < s.channels; ++c) {
        const int64_t base = (o * s.channels + c) * s.inner;
        const float sc = static_cast<float>(scale[static_cast<size_t>(c)]);
        const int32_t z = zp[static_cast<size_t>(c)];
        for (int64_t i = base; i < base + s.inner; ++i) {
          // float32 inputs divide in float32 (as the ONNX reference does); int32 ones in double.
          const double q = x.dtype() == DType::kF32 ? static_cast<double>(round_half_even(x.data<float>()[i] / sc))
                                                    : round_half_even(static_cast<double>(x.data<int32_t>()[i]) / sc);
          py[i] = saturate<Q>(q + z);
        }
      }
    }
  });
}

// ---- DequantizeLinear ------------------------------------------------------------------------

void infer_dequantize(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  if (x.dtype != DType::kU8 && x.dtype != DType::kI8 && x.dtype != DType::kI32) {
    ctx.fail("input x has dtype " + std::string(dtype_name(x.dtype)) + ", expected uint8, int8 or int32");
  }
  if (ctx.input(1).dtype != DType::kF32) ctx.fail("x_scale must be float32");
  if (ctx.has_input(2) && ctx.input(2).dtype != x.dtype) {
    ctx.fail("x_zero_point has dtype " + std::string(dtype_name(ctx.input(2).dtype)) + ", expected " +
             std::string(dtype_name(x.dtype)) + " like x");
  }
  axis_split(ctx, x.shape, ctx.input(1).shape);
  ctx.set_output(0, DType::kF32, x.shape);
}

void run_dequantize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const AxisSplit s = axis_split(ctx, x.shape(), ctx.input(1).shape());
  const std::vector<double> scale = per_slice_floats(ctx.input(1), s.channels);
  const std::vector<int32_t> zp = per_slice_ints(ctx.has_input(2) ? &ctx.input(2) : nullptr, s.channels);
  float* py = ctx.output(0).data<float>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.channels; ++c) {
      const int64_t base = (o * s.channels + c) * s.inner;
      const float sc = static_cast<float>(scale[static_cast<size_t>(c)]);
      const int32_t z = zp[static_cast<size_t>(c)];
      for (int64_t i = base; i < base + s.inner; ++i) {
        int32_t q = 0;
        switch (x.dtype()) {
          case DType::kU8: q = x.data<uint8_t>()[i]; break;
          case DType::kI8: q = x.data<int8_t>()[i]; break;
          default: q = x.data<int32_t>()[i]; break;
        }
        py[i] = static_cast<float>(q - z) * sc;
      }
    }
  }
}

// ---- DynamicQuantizeLinear -------------------------------------------------------------------

void infer_dynamic_quantize(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  if (x.dtype != DType::kF32) ctx.fail("input x has dtype " + std::string(dtype_name(x.dtype)) + ", expected float32");
  ctx.set_output(0, DType::kU8, x.shape);
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kF32, {});
  if (ctx.num_outputs() > 2) ctx.set_output(2, DType::kU8, {});
}

void run_dynamic_quantize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const float* px = x.data<float>();
  const int64_t n = x.numel();
  // The range always includes 0 so that 0 is exactly representable (padding, ReLU outputs).
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, px[i]);
    hi = std::max(hi, px[i]);
  }
  const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  const float zp = round_half_even(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  uint8_t* py = ctx.output(0).data<uint8_t>();
  for (int64_t i = 0; i < n; ++i) py[i] = saturate<uint8_t>(static_cast<double>(round_half_even(px[i] / scale) + zp));
  if (ctx.num_outputs() > 1 && ctx.output(1).defined()) ctx.output(1).data<float>()[0] = scale;
  if (ctx.num_outputs() > 2 && ctx.output(2).defined()) ctx.output(2).data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

}  // namespace

void register_quantization_ops(OpRegistry& r) {
  OpSchema q;
  q.type = "QuantizeLinear";
  q.min_inputs = 2;
  q.max_inputs = 3;
  q.infer = infer_quantize;
  q.reference = run_quantize;
  q.doc = "y = saturate(round_half_even(x / scale) + zero_point) to uint8/int8, per tensor or per axis";
  r.add(std::move(q));

  OpSchema dq;
  dq.type = "DequantizeLinear";
  dq.min_inputs = 2;
  dq.max_inputs = 3;
  dq.infer = infer_dequantize;
  dq.reference = run_dequantize;
  dq.doc = "y = (x - zero_point) * scale from uint8/int8/int32, per tensor or per axis";
  r.add(std::move(dq));

  OpSchema dyn;
  dyn.type = "DynamicQuantizeLinear";
  dyn.min_inputs = dyn.max_inputs = 1;
  dyn.min_outputs = 1;
  dyn.max_outputs = 3;
  dyn.infer = infer_dynamic_quantize;
  dyn.reference = run_dynamic_quantize;
  dyn.doc = "uint8 quantisation with scale and zero point from the data's range (which always includes 0)";
  r.add(std::move(dyn));
}

}  // namespace xnn
