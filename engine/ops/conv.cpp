// Convolution ops: Conv and ConvTranspose (1-D, 2-D and 3-D, groups, dilations, strides, pads,
// auto_pad). Both lower to the shared reference GEMM:
//   Conv:          Y[g] (M/g x P_out) = W[g] (M/g x C/g*k) * im2col(X[g]) (C/g*k x P_out)
//   ConvTranspose: col (M/g*k x P_in) = W[g]^T (M/g*k x C/g) * X[g] (C/g x P_in), then col2im
//                  scatters each column entry into Y.
// im2col/col2im compute, per kernel tap, the range of positions that fall inside the input
// (valid_range), so no bounds check runs per element.
#include <algorithm>
#include <vector>

#include "engine/ops/conv_geometry.h"
#include "engine/ops/gemm_reference.h"

namespace xnn {
namespace {

// ---- shared ----------------------------------------------------------------------------------

template <typename Ctx>
void check_bias(const Ctx& ctx, DType x_dtype, DType b_dtype, const Shape& b, int64_t channels) {
  if (b_dtype != x_dtype) {
    ctx.fail("bias has dtype " + std::string(dtype_name(b_dtype)) + ", expected " + std::string(dtype_name(x_dtype)));
  }
  if (b.size() != 1 || b[0] != channels) {
    ctx.fail("bias has shape " + shape_str(b) + ", expected [" + std::to_string(channels) + "]");
  }
}

// Sets every output channel plane of one image to its bias (or zero): the GEMM accumulates on top.
template <typename T>
void fill_bias(T* y, int64_t channels, int64_t plane, const T* bias) {
  for (int64_t m = 0; m < channels; ++m) std::fill(y + m * plane, y + (m + 1) * plane, bias ? bias[m] : T(0));
}

// ---- Conv ------------------------------------------------------------------------------------

void infer_conv(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const TensorInfo& w = ctx.input(1);
  check_float_dtype(ctx, x.dtype, "input X");
  if (w.dtype != x.dtype) {
    ctx.fail("weights have dtype " + std::string(dtype_name(w.dtype)) + ", expected " + std::string(dtype_name(x.dtype)));
  }
  const ConvParams p = conv_params(ctx, x.shape, w.shape);
  if (ctx.has_input(2)) check_bias(ctx, x.dtype, ctx.input(2).dtype, ctx.input(2).shape, p.out_channels);
  ctx.set_output(0, x.dtype, p.out_shape);
}

OpCost conv_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  OpCost c = default_cost(node, in, out);
  const Shape& w = in[1].shape;
  const Shape& y = out[0].shape;
  // Each output element takes C/group * kernel_elems MACs; W is [M, C/group, kernel...].
  c.macs = static_cast<double>(shape_numel(y)) * static_cast<double>(shape_numel(Shape(w.begin() + 1, w.end())));
  return c;
}

template <typename T>
void conv_kernel(const ConvParams& p, const T* x, const T* w, const T* bias, T* y) {
  const Spatial3& s = p.geo;
  const int64_t in_per_group = p.in_channels / p.group, out_per_group = p.out_channels / p.group;
  const int64_t k_rows = in_per_group * s.kernel_size();  // GEMM K
  const int64_t out_size = s.out_size(), in_size = s.in_size();
  // A 1x1 kernel with unit strides and no padding reads X as it is: no unfolding needed.
  const bool pointwise = s.kernel_size() == 1 && s.stride == std::array<int64_t, 3>{1, 1, 1} &&
                         s.pad_begin == std::array<int64_t, 3>{0, 0, 0} && s.in == s.out;
  std::vector<T> col(pointwise ? 0 : static_cast<size_t>(k_rows * out_size));
  for (int64_t n = 0; n < p.batch; ++n) {
    T* y_n = y + n * p.out_channels * out_size;
    fill_bias(y_n, p.out_channels, out_size, bias);
    for (int64_t g = 0; g < p.group; ++g) {
      const T* x_g = x + (n * p.in_channels + g * in_per_group) * in_size;
      const T* cols = x_g;
      if (!pointwise) {
        im2col(s, in_per_group, x_g, col.data());
        cols = col.data();
      }
      gemm_reference<T>(out_per_group, out_size, k_rows, w + g * out_per_group * k_rows, k_rows, cols, out_size,
                        y_n + g * out_per_group * out_size, out_size);
    }
  }
}

void run_conv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const ConvParams p = conv_params(ctx, x.shape(), w.shape());
  dispatch_float(ctx, x.dtype(), [&]<typename T>() {
    const T* bias = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
    conv_kernel<T>(p, x.data<T>(), w.data<T>(), bias, ctx.output(0).data<T>());
  });
}

// ---- ConvTranspose ---------------------------------------------------------------------------

struct ConvTransposeParams {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  Spatial3 geo;  // `in` is X's spatial size, `out` Y's; pad_begin may be negative (output_shape)
  Shape out_shape;
};

// Validates X [N, C, spatial...] and W [C, M/group, kernel...] and computes the output size and
// padding as the ONNX spec defines them: explicit pads, auto_pad, or an explicit output_shape
// (from which the pads follow; a negative total pad extends the output with bias-only cells).
template <typename Ctx>
ConvTransposeParams conv_transpose_params(const Ctx& ctx, const Shape& x, const Shape& w) {
  const Node& node = ctx.node();
  const size_t n = static_cast<size_t>(spatial_rank_or_fail(ctx, x, "ConvTranspose"));
  if (w.size() != x.size()) {
    ctx.fail("weights have shape " + shape_str(w) + ", expected rank " + std::to_string(x.size()) +
             " (C, M/group, kernel...) to match input " + shape_str(x));
  }
  ConvTransposeParams p;
  p.batch = x[0];
  p.in_channels = x[1];
  p.group = node.attr_int("group", 1);
  if (p.group <= 0) ctx.fail("group must be positive, got " + std::to_string(p.group));
  if (w[0] != p.in_channels) {
    ctx.fail("input has " + std::to_string(p.in_channels) + " channels, but weights " + shape_str(w) +
             " expect " + std::to_string(w[0]));
  }
  if (p.in_channels % p.group != 0) {
    ctx.fail("input channels " + std::to_string(p.in_channels) + " are not divisible by group " +
             std::to_string(p.group));
  }
  p.out_channels = w[1] * p.group;

  const std::vector<int64_t> kernel = kernel_from_weights(ctx, w);
  const auto strides = node.attr_ints("strides", std::vector<int64_t>(n, 1));
  const auto dilations = node.attr_ints("dilations", std::vector<int64_t>(n, 1));
  const auto output_padding = node.attr_ints("output_padding", std::vector<int64_t>(n, 0));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> output_shape = node.attr_ints("output_shape");
  if (output_shape.size() == n + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);  // N, C given too
  if (strides.size() != n || dilations.size() != n || output_padding.size() != n || pads.size() != 2 * n ||
      (!output_shape.empty() && output_shape.size() != n)) {
    ctx.fail("strides/dilations/output_padding/pads/output_shape do not match " + std::to_string(n) + " spatial dims");
  }
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!same && auto_pad != "VALID" && auto_pad != "NOTSET" && !auto_pad.empty()) {
    ctx.fail("unknown auto_pad '" + auto_pad + "'");
  }

  p.out_shape = {p.batch, p.out_channels};
  const size_t lead = kMaxSpatialDims - n;
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0 || kernel[i] <= 0) {
      ctx.fail("strides, dilations and kernel sizes must be positive");
    }
    if (output_padding[i] < 0 || pads[i] < 0 || pads[i + n] < 0) ctx.fail("pads and output_padding must be >= 0");
    // Bound every geometry attribute so the size arithmetic below cannot overflow int64.
    constexpr int64_t kMaxGeometry = int64_t{1} << 24;
    if (strides[i] > kMaxGeometry || dilations[i] > kMaxGeometry || kernel[i] > kMaxGeometry ||
        output_padding[i] > kMaxGeometry || pads[i] > kMaxGeometry || pads[i + n] > kMaxGeometry) {
      ctx.fail("strides, dilations, kernel sizes, pads and output_padding must be <= 2^24");
    }
    const int64_t in = x[2 + i];
    const int64_t full = strides[i] * (in - 1) + output_padding[i] + (kernel[i] - 1) * dilations[i] + 1;
    int64_t out = 0, pad_begin = 0;
    if (!output_shape.empty() || same) {
      out = !output_shape.empty() ? output_shape[i] : in * strides[i];
      const int64_t total = full - out;
      // SAME_UPPER puts the odd cell of padding at the end, everything else at the beginning.
      pad_begin = auto_pad == "SAME_UPPER" ? floor_div(total, 2) : total - floor_div(total, 2);
    } else if (auto_pad == "VALID") {
      out = full;
    } else {
      pad_begin = pads[i];
      out = full - pads[i] - pads[i + n];
    }
    if (out < 0) ctx.fail("output size would be negative (" + std::to_string(out) + ") along spatial dim " + std::to_string(i));
    p.out_shape.push_back(out);
    p.geo.in[lead + i] = in;
    p.geo.out[lead + i] = out;
    p.geo.kernel[lead + i] = kernel[i];
    p.geo.stride[lead + i] = strides[i];
    p.geo.dilation[lead + i] = dilations[i];
    p.geo.pad_begin[lead + i] = pad_begin;
  }
  return p;
}

void infer_conv_transpose(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const TensorInfo& w = ctx.input(1);
  check_float_dtype(ctx, x.dtype, "input X");
  if (w.dtype != x.dtype) {
    ctx.fail("weights have dtype " + std::string(dtype_name(w.dtype)) + ", expected " + std::string(dtype_name(x.dtype)));
  }
  const ConvTransposeParams p = conv_transpose_params(ctx, x.shape, w.shape);
  if (ctx.has_input(2)) check_bias(ctx, x.dtype, ctx.input(2).dtype, ctx.input(2).shape, p.out_channels);
  ctx.set_output(0, x.dtype, p.out_shape);
}

OpCost conv_transpose_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  OpCost c = default_cost(node, in, out);
  // Each input element is multiplied into M/group * kernel_elems outputs; W is [C, M/group, kernel...].
  const Shape& w = in[1].shape;
  c.macs = static_cast<double>(shape_numel(in[0].shape)) * static_cast<double>(shape_numel(Shape(w.begin() + 1, w.end())));
  return c;
}

// Adds col [M/g * kernel_elems, in_elems] into Y [M/g, out...]: entry (m, kd, kh, kw; id, ih, iw)
// lands at output position i * stride + k * dilation - pad_begin when that is inside Y.
template <typename T>
void col2im_add(const Spatial3& s, int64_t channels, const T* col, T* y) {
  const int64_t in_size = s.in_size(), out_size = s.out_size();
  const T* src = col;
  for (int64_t m = 0; m < channels; ++m) {
    T* ym = y + m * out_size;
    for (int64_t kd = 0; kd < s.kernel[0]; ++kd) {
      const int64_t base_d = kd * s.dilation[0] - s.pad_begin[0];
      const IndexRange rd = valid_range(base_d, s.stride[0], s.out[0], s.in[0]);
      for (int64_t kh = 0; kh < s.kernel[1]; ++kh) {
        const int64_t base_h = kh * s.dilation[1] - s.pad_begin[1];
        const IndexRange rh = valid_range(base_h, s.stride[1], s.out[1], s.in[1]);
        for (int64_t kw = 0; kw < s.kernel[2]; ++kw, src += in_size) {
          const int64_t base_w = kw * s.dilation[2] - s.pad_begin[2];
          const IndexRange rw = valid_range(base_w, s.stride[2], s.out[2], s.in[2]);
          for (int64_t id = rd.begin; id < rd.end; ++id) {
            const int64_t od = base_d + id * s.stride[0];
            for (int64_t ih = rh.begin; ih < rh.end; ++ih) {
              const int64_t oh = base_h + ih * s.stride[1];
              T* dst = ym + (od * s.out[1] + oh) * s.out[2];
              const T* row = src + (id * s.in[1] + ih) * s.in[2];
              for (int64_t iw = rw.begin; iw < rw.end; ++iw) dst[base_w + iw * s.stride[2]] += row[iw];
            }
          }
        }
      }
    }
  }
}

template <typename T>
void conv_transpose_kernel(const ConvTransposeParams& p, const T* x, const T* w, const T* bias, T* y) {
  const Spatial3& s = p.geo;
  const int64_t in_per_group = p.in_channels / p.group, out_per_group = p.out_channels / p.group;
  const int64_t col_rows = out_per_group * s.kernel_size();  // GEMM M
  const int64_t in_size = s.in_size(), out_size = s.out_size();
  // W[g] is [C/g, M/g * kernel] row-major; the GEMM wants its transpose, packed once per call.
  std::vector<T> w_t(static_cast<size_t>(p.group * col_rows * in_per_group));
  for (int64_t g = 0; g < p.group; ++g) {
    const T* wg = w + g * in_per_group * col_rows;
    T* wtg = w_t.data() + g * col_rows * in_per_group;
    for (int64_t c = 0; c < in_per_group; ++c) {
      for (int64_t r = 0; r < col_rows; ++r) wtg[r * in_per_group + c] = wg[c * col_rows + r];
    }
  }
  std::vector<T> col(static_cast<size_t>(col_rows * in_size));
  for (int64_t n = 0; n < p.batch; ++n) {
    T* y_n = y + n * p.out_channels * out_size;
    fill_bias(y_n, p.out_channels, out_size, bias);
    for (int64_t g = 0; g < p.group; ++g) {
      const T* x_g = x + (n * p.in_channels + g * in_per_group) * in_size;
      std::fill(col.begin(), col.end(), T(0));
      gemm_reference<T>(col_rows, in_size, in_per_group, w_t.data() + g * col_rows * in_per_group, in_per_group, x_g,
                        in_size, col.data(), in_size);
      col2im_add(s, out_per_group, col.data(), y_n + g * out_per_group * out_size);
    }
  }
}

void run_conv_transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const ConvTransposeParams p = conv_transpose_params(ctx, x.shape(), w.shape());
  dispatch_float(ctx, x.dtype(), [&]<typename T>() {
    const T* bias = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
    conv_transpose_kernel<T>(p, x.data<T>(), w.data<T>(), bias, ctx.output(0).data<T>());
  });
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  OpSchema conv;
  conv.type = "Conv";
  conv.min_inputs = 2;
  conv.max_inputs = 3;
  conv.infer = infer_conv;
  conv.cost = conv_cost;
  conv.reference = run_conv;
  conv.doc = "N-d convolution (1-3 spatial dims) with groups, strides, dilations, pads, auto_pad; im2col + GEMM";
  r.add(std::move(conv));

  OpSchema convt;
  convt.type = "ConvTranspose";
  convt.min_inputs = 2;
  convt.max_inputs = 3;
  convt.infer = infer_conv_transpose;
  convt.cost = conv_transpose_cost;
  convt.reference = run_conv_transpose;
  convt.doc = "transposed convolution (1-3 spatial dims) with groups, strides, dilations, pads, output_padding, "
              "output_shape, auto_pad; GEMM + col2im";
  r.add(std::move(convt));
}

}  // namespace xnn
