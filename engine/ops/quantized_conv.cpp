// Integer convolutions: ConvInteger (int32 result) and QLinearConv (requantised 8-bit result).
// Same geometry as Conv (conv_geometry.h): inputs are centred on their zero points in int32, so
// padding contributes exactly 0 (the real value the input zero point stands for), unfolded with
// im2col and multiplied with the reference GEMM in int32; QLinearConv adds the int32 bias and
// requantises per output channel as quant_common.h defines.
#include <vector>

#include "engine/ops/conv_geometry.h"
#include "engine/ops/gemm_reference.h"
#include "engine/ops/quant_common.h"

namespace xnn {
namespace {

template <typename Q>
std::vector<int32_t> centred(const Tensor& t, const std::vector<int32_t>& zp, int64_t per_slice) {
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  const Q* p = t.data<Q>();
  const int64_t slices = static_cast<int64_t>(zp.size());
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = p[i] - zp[static_cast<size_t>((i / per_slice) % slices)];
  return v;
}

// int32 accumulators [N, M, out...] of the convolution of centred X and W, plus the bias.
std::vector<int32_t> integer_conv(const KernelContext& ctx, const ConvParams& p, const Tensor& x, const Tensor* x_zp,
                                  const Tensor& w, const Tensor* w_zp, const Tensor* bias) {
  std::vector<int32_t> cx, cw;
  dispatch_int8(ctx, x.dtype(), "x", [&]<typename Q>() { cx = centred<Q>(x, per_slice_ints(x_zp, 1), x.numel()); });
  const int64_t per_filter = shape_numel(Shape(w.shape().begin() + 1, w.shape().end()));
  dispatch_int8(ctx, w.dtype(), "w", [&]<typename Q>() {
    cw = centred<Q>(w, per_slice_ints(w_zp, w_zp && w_zp->numel() > 1 ? p.out_channels : 1), per_filter);
  });
  const Spatial3& s = p.geo;
  const int64_t in_per_group = p.in_channels / p.group, out_per_group = p.out_channels / p.group;
  const int64_t k_rows = in_per_group * s.kernel_size();
  const int64_t out_size = s.out_size(), in_size = s.in_size();
  std::vector<int32_t> acc(static_cast<size_t>(p.batch * p.out_channels * out_size));
  std::vector<int32_t> col(static_cast<size_t>(k_rows * out_size));
  for (int64_t n = 0; n < p.batch; ++n) {
    int32_t* y_n = acc.data() + n * p.out_channels * out_size;
    for (int64_t m = 0; m < p.out_channels; ++m) {
      std::fill(y_n + m * out_size, y_n + (m + 1) * out_size, bias ? bias->data<int32_t>()[m] : 0);
    }
    for (int64_t g = 0; g < p.group; ++g) {
      im2col(s, in_per_group, cx.data() + (n * p.in_channels + g * in_per_group) * in_size, col.data());
      gemm_reference<int32_t>(out_per_group, out_size, k_rows, cw.data() + g * out_per_group * k_rows, k_rows, col.data(),
                              out_size, y_n + g * out_per_group * out_size, out_size);
    }
  }
  return acc;
}

template <typename Ctx>
ConvParams checked_params(const Ctx& ctx, int x_index, int w_index) {
  return conv_params(ctx, ctx.input(x_index).shape, ctx.input(w_index).shape);
}

OpCost integer_conv_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out, int w_index) {
  OpCost c = default_cost(node, in, out);
  const Shape& w = in[static_cast<size_t>(w_index)].shape;
  c.macs = static_cast<double>(shape_numel(out[0].shape)) * static_cast<double>(shape_numel(Shape(w.begin() + 1, w.end())));
  return c;
}

// ---- ConvInteger: (x, w, x_zero_point?, w_zero_point?) -> int32 ------------------------------

void infer_conv_integer(InferContext& ctx) {
  dispatch_int8(ctx, ctx.input(0).dtype, "x", []<typename Q>() {});
  dispatch_int8(ctx, ctx.input(1).dtype, "w", []<typename Q>() {});
  const ConvParams p = checked_params(ctx, 0, 1);
  if (ctx.has_input(2)) check_quant_param(ctx, ctx.input(2).shape, 1, "x_zero_point");
  if (ctx.has_input(3)) check_quant_param(ctx, ctx.input(3).shape, p.out_channels, "w_zero_point");
  ctx.set_output(0, DType::kI32, p.out_shape);
}

void run_conv_integer(KernelContext& ctx) {
  const ConvParams p = conv_params(ctx, ctx.input(0).shape(), ctx.input(1).shape());
  const std::vector<int32_t> acc = integer_conv(ctx, p, ctx.input(0), ctx.has_input(2) ? &ctx.input(2) : nullptr,
                                                ctx.input(1), ctx.has_input(3) ? &ctx.input(3) : nullptr, nullptr);
  std::copy(acc.begin(), acc.end(), ctx.output(0).data<int32_t>());
}

// ---- QLinearConv: (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?) -> 8-bit --------------

void infer_qlinear_conv(InferContext& ctx) {
  dispatch_int8(ctx, ctx.input(0).dtype, "x", []<typename Q>() {});
  dispatch_int8(ctx, ctx.input(3).dtype, "w", []<typename Q>() {});
  for (int i : {1, 4, 6}) {
    if (ctx.input(i).dtype != DType::kF32) ctx.fail("input " + std::to_string(i) + " (a scale) must be float32");
  }
  const DType out = ctx.input(7).dtype;
  dispatch_int8(ctx, out, "y_zero_point", []<typename Q>() {});
  const ConvParams p = checked_params(ctx, 0, 3);
  check_quant_param(ctx, ctx.input(1).shape, 1, "x_scale");
  check_quant_param(ctx, ctx.input(2).shape, 1, "x_zero_point");
  check_quant_param(ctx, ctx.input(4).shape, p.out_channels, "w_scale");
  check_quant_param(ctx, ctx.input(5).shape, p.out_channels, "w_zero_point");
  check_quant_param(ctx, ctx.input(6).shape, 1, "y_scale");
  check_quant_param(ctx, ctx.input(7).shape, 1, "y_zero_point");
  if (ctx.has_input(8)) {
    const TensorInfo& b = ctx.input(8);
    if (b.dtype != DType::kI32 || b.shape != Shape{p.out_channels}) {
      ctx.fail("bias B is " + std::string(dtype_name(b.dtype)) + " " + shape_str(b.shape) + ", expected int32 [" +
               std::to_string(p.out_channels) + "]");
    }
  }
  ctx.set_output(0, out, p.out_shape);
}

void run_qlinear_conv(KernelContext& ctx) {
  const ConvParams p = conv_params(ctx, ctx.input(0).shape(), ctx.input(3).shape());
  const std::vector<int32_t> acc = integer_conv(ctx, p, ctx.input(0), &ctx.input(2), ctx.input(3), &ctx.input(5),
                                                ctx.has_input(8) ? &ctx.input(8) : nullptr);
  const float sx = ctx.input(1).data<float>()[0], sy = ctx.input(6).data<float>()[0];
  const std::vector<double> sw = per_slice_floats(ctx.input(4), p.out_channels);
  const int32_t zy = per_slice_ints(&ctx.input(7), 1)[0];
  const int64_t plane = p.geo.out_size();
  Tensor& y = ctx.output(0);
  dispatch_int8(ctx, y.dtype(), "y", [&]<typename Q>() {
    Q* py = y.data<Q>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      const int64_t m = (i / plane) % p.out_channels;
      const float mult = requant_multiplier(sx, static_cast<float>(sw[static_cast<size_t>(m)]), sy);
      py[i] = requantize_to<Q>(acc[static_cast<size_t>(i)], mult, zy);
    }
  });
}

}  // namespace

void register_quantized_conv_ops(OpRegistry& r) {
  OpSchema ci;
  ci.type = "ConvInteger";
  ci.min_inputs = 2;
  ci.max_inputs = 4;
  ci.infer = infer_conv_integer;
  ci.cost = [](const Node& n, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
    return integer_conv_cost(n, in, out, 1);
  };
  ci.reference = run_conv_integer;
  ci.doc = "int32 convolution of (x - x_zp) and (w - w_zp); Conv's geometry attributes";
  r.add(std::move(ci));

  OpSchema qc;
  qc.type = "QLinearConv";
  qc.min_inputs = 8;
  qc.max_inputs = 9;
  qc.infer = infer_qlinear_conv;
  qc.cost = [](const Node& n, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
    return integer_conv_cost(n, in, out, 3);
  };
  qc.reference = run_qlinear_conv;
  qc.doc = "8-bit convolution: int32 accumulation + int32 bias, requantised per output channel with x_scale·w_scale/y_scale";
  r.add(std::move(qc));
}

}  // namespace xnn
