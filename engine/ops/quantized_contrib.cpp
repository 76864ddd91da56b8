// ONNX Runtime's quantised contrib ops, domain "com.microsoft", so that the int8 graphs the
// post-training quantiser writes (compress/quantize) run here and load in ONNX Runtime as they
// are. Semantics follow ONNX Runtime's docs/ContribOperators.md:
//
//   QGemm(A, a_scale, a_zp, B, b_scale, b_zp?, C?, y_scale?, y_zp?)   attrs alpha, transA, transB
//       acc = C + Σ_k (A'[m,k] - a_zp)·(B'[k,n] - b_zp[n])        (int32; C int32, broadcast to M x N)
//       y_scale given: Y = requantise(acc, alpha·a_scale·b_scale[n] / y_scale) + y_zp  (8-bit)
//       else:          Y = float(acc) · alpha·a_scale·b_scale[n]                         (float)
//       b_scale / b_zp per tensor or per column (N); C is in units of alpha·a_scale·b_scale[n].
//   QLinearAdd(A, A_scale, A_zp?, B, B_scale, B_zp?, C_scale, C_zp?)    numpy broadcasting
//       C = (A_scale·(A - A_zp) + B_scale·(B - B_zp)) / C_scale + C_zp
//   QLinearConcat(Y_scale, Y_zp, X0, X0_scale, X0_zp, X1, ...)          attr axis
//       every input requantised to Y's scale and zero point (a plain copy where they are equal)
//   QLinearAveragePool(X, x_scale, x_zp?, y_scale, y_zp?)              AveragePool's attributes
//   QLinearGlobalAveragePool(X, x_scale, x_zp, y_scale, y_zp)          attr channels_last
//       Y = Quantize(Pool(Dequantize(X)))
//
// Rounding is quant_common.h's: round half to even, saturation to the 8-bit type. The integer
// products requantise exactly like QLinearConv / QLinearMatMul (requantize_to with a float
// multiplier), so an int8 CPU kernel can be compared with them bit for bit; the elementwise ops
// scale each centred input by a float multiplier (input_scale / output_scale) and round once.
// The average pools run the float AveragePool reference from the registry on the dequantised
// input (exactly the documented definition), so their window geometry is AveragePool's own.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/ops/gemm_reference.h"
#include "engine/ops/nn_common.h"
#include "engine/ops/quant_common.h"

namespace xnn {
namespace {

constexpr const char* kContribDomain = "com.microsoft";

template <typename Ctx>
void check_f32_scale(const Ctx& ctx, int i, const char* what) {
  if (ctx.input(i).dtype != DType::kF32) ctx.fail(std::string(what) + " must be float32");
  check_quant_param(ctx, ctx.input(i).shape, 1, what);
}

// An optional zero point of the data's dtype, per tensor.
template <typename Ctx>
void check_zero_point(const Ctx& ctx, int i, DType data, const char* what) {
  if (!ctx.has_input(i)) return;
  if (ctx.input(i).dtype != data) {
    ctx.fail(std::string(what) + " has dtype " + std::string(dtype_name(ctx.input(i).dtype)) + ", expected " +
             std::string(dtype_name(data)));
  }
  check_quant_param(ctx, ctx.input(i).shape, 1, what);
}

float scalar_scale(const KernelContext& ctx, int i) { return ctx.input(i).data<float>()[0]; }
int32_t scalar_zero_point(const KernelContext& ctx, int i) {
  return per_slice_ints(ctx.has_input(i) ? &ctx.input(i) : nullptr, 1)[0];
}

// The 8-bit value nearest to `v` (already in output units, before adding the zero point):
// clamp to the type's range, round half to even, add the zero point (requantize.h's order).
template <typename Q>
Q round_to(float v, int32_t zero_point) {
  constexpr int32_t qmin = std::numeric_limits<Q>::min(), qmax = std::numeric_limits<Q>::max();
  v = std::min(std::max(v, static_cast<float>(qmin - zero_point)), static_cast<float>(qmax - zero_point));
  return static_cast<Q>(static_cast<int32_t>(std::lrintf(v)) + zero_point);
}

// ---- QGemm -----------------------------------------------------------------------------------

struct QGemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
};

template <typename Ctx>
QGemmShape qgemm_shape(const Ctx& ctx, const Shape& a, const Shape& b) {
  if (a.size() != 2 || b.size() != 2) ctx.fail("A and B must be 2-D, got " + shape_str(a) + " and " + shape_str(b));
  QGemmShape s;
  s.trans_a = ctx.node().attr_int("transA", 0) != 0;
  s.trans_b = ctx.node().attr_int("transB", 0) != 0;
  s.m = s.trans_a ? a[1] : a[0];
  s.k = s.trans_a ? a[0] : a[1];
  const int64_t kb = s.trans_b ? b[1] : b[0];
  s.n = s.trans_b ? b[0] : b[1];
  if (kb != s.k) ctx.fail("inner dimensions differ: A " + shape_str(a) + ", B " + shape_str(b));
  return s;
}

// C must broadcast unidirectionally to (M, N).
bool broadcasts_to(const Shape& c, int64_t m, int64_t n) {
  if (c.size() > 2) return false;
  const int64_t cn = c.empty() ? 1 : c.back();
  const int64_t cm = c.size() == 2 ? c[0] : 1;
  return (cn == 1 || cn == n) && (cm == 1 || cm == m);
}

void infer_qgemm(InferContext& ctx) {
  const TensorInfo& a = ctx.input(0);
  const TensorInfo& b = ctx.input(3);
  dispatch_int8(ctx, a.dtype, "A", []<typename Q>() {});
  dispatch_int8(ctx, b.dtype, "B", []<typename Q>() {});
  const QGemmShape s = qgemm_shape(ctx, a.shape, b.shape);
  check_f32_scale(ctx, 1, "a_scale");
  check_zero_point(ctx, 2, a.dtype, "a_zero_point");
  if (ctx.input(4).dtype != DType::kF32) ctx.fail("b_scale must be float32");
  check_quant_param(ctx, ctx.input(4).shape, s.n, "b_scale");
  if (ctx.has_input(5)) {
    if (ctx.input(5).dtype != b.dtype) ctx.fail("b_zero_point must have B's dtype");
    check_quant_param(ctx, ctx.input(5).shape, s.n, "b_zero_point");
  }
  if (ctx.has_input(6)) {
    const TensorInfo& c = ctx.input(6);
    if (c.dtype != DType::kI32) ctx.fail("C has dtype " + std::string(dtype_name(c.dtype)) + ", expected int32");
    if (!broadcasts_to(c.shape, s.m, s.n)) {
      ctx.fail("C " + shape_str(c.shape) + " does not broadcast to [" + std::to_string(s.m) + "," + std::to_string(s.n) + "]");
    }
  }
  DType out = DType::kF32;
  if (ctx.has_input(7)) {
    check_f32_scale(ctx, 7, "y_scale");
    out = ctx.has_input(8) ? ctx.input(8).dtype : DType::kU8;
    dispatch_int8(ctx, out, "y_zero_point", []<typename Q>() {});
    if (ctx.has_input(8)) check_quant_param(ctx, ctx.input(8).shape, 1, "y_zero_point");
  } else if (ctx.has_input(8)) {
    ctx.fail("y_zero_point is given without y_scale");
  }
  ctx.set_output(0, out, {s.m, s.n});
}

template <typename Q>
std::vector<int32_t> centred_matrix(const Tensor& t, bool transpose, int64_t rows, int64_t cols,
                                    const std::vector<int32_t>& col_zp) {
  // Result is rows x cols in row-major order; `transpose` reads t as cols x rows.
  std::vector<int32_t> out(static_cast<size_t>(rows * cols));
  const Q* p = t.data<Q>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t src = transpose ? c * rows + r : r * cols + c;
      out[static_cast<size_t>(r * cols + c)] = static_cast<int32_t>(p[src]) - col_zp[static_cast<size_t>(c)];
    }
  }
  return out;
}

void run_qgemm(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const QGemmShape s = qgemm_shape(ctx, a.shape(), b.shape());
  std::vector<int32_t> ca, cb;
  const std::vector<int32_t> a_zp(static_cast<size_t>(s.k), scalar_zero_point(ctx, 2));
  dispatch_int8(ctx, a.dtype(), "A", [&]<typename Q>() { ca = centred_matrix<Q>(a, s.trans_a, s.m, s.k, a_zp); });
  const std::vector<int32_t> b_zp = per_slice_ints(ctx.has_input(5) ? &ctx.input(5) : nullptr, s.n);
  dispatch_int8(ctx, b.dtype(), "B", [&]<typename Q>() { cb = centred_matrix<Q>(b, s.trans_b, s.k, s.n, b_zp); });

  std::vector<int32_t> acc(static_cast<size_t>(s.m * s.n), 0);
  if (ctx.has_input(6)) {
    const Tensor& c = ctx.input(6);
    const int32_t* pc = c.data<int32_t>();
    const int64_t cn = c.rank() == 0 ? 1 : c.shape().back();
    const int64_t cm = c.rank() == 2 ? c.dim(0) : 1;
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) acc[static_cast<size_t>(i * s.n + j)] = pc[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
    }
  }
  gemm_reference<int32_t>(s.m, s.n, s.k, ca.data(), s.k, cb.data(), s.n, acc.data(), s.n);

  const float alpha = ctx.node().attr_float("alpha", 1.0f);
  const float a_scale = alpha * scalar_scale(ctx, 1);
  const std::vector<double> b_scale = per_slice_floats(ctx.input(4), s.n);
  Tensor& y = ctx.output(0);
  if (y.dtype() == DType::kF32) {
    float* py = y.data<float>();
    for (int64_t i = 0; i < s.m * s.n; ++i) {
      py[i] = static_cast<float>(acc[static_cast<size_t>(i)]) * (a_scale * static_cast<float>(b_scale[static_cast<size_t>(i % s.n)]));
    }
    return;
  }
  const float y_scale = scalar_scale(ctx, 7);
  const int32_t y_zp = scalar_zero_point(ctx, 8);
  std::vector<float> mult(static_cast<size_t>(s.n));
  for (int64_t j = 0; j < s.n; ++j) {
    mult[static_cast<size_t>(j)] = requant_multiplier(a_scale, static_cast<float>(b_scale[static_cast<size_t>(j)]), y_scale);
  }
  dispatch_int8(ctx, y.dtype(), "Y", [&]<typename Q>() {
    Q* py = y.data<Q>();
    for (int64_t i = 0; i < s.m * s.n; ++i) {
      py[i] = requantize_to<Q>(acc[static_cast<size_t>(i)], mult[static_cast<size_t>(i % s.n)], y_zp);
    }
  });
}

OpCost qgemm_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  OpCost c = default_cost(node, in, out);
  const Shape& a = in[0].shape;
  const bool trans_a = node.attr_int("transA", 0) != 0;
  c.macs = static_cast<double>(shape_numel(out[0].shape)) * static_cast<double>(a.size() == 2 ? a[trans_a ? 0 : 1] : 0);
  return c;
}

// ---- QLinearAdd ------------------------------------------------------------------------------

void infer_qlinear_add(InferContext& ctx) {
  const TensorInfo& a = ctx.input(0);
  const TensorInfo& b = ctx.input(3);
  dispatch_int8(ctx, a.dtype, "A", []<typename Q>() {});
  if (b.dtype != a.dtype) ctx.fail("A and B differ in dtype: " + std::string(dtype_name(a.dtype)) + " and " + std::string(dtype_name(b.dtype)));
  check_f32_scale(ctx, 1, "A_scale");
  check_zero_point(ctx, 2, a.dtype, "A_zero_point");
  check_f32_scale(ctx, 4, "B_scale");
  check_zero_point(ctx, 5, a.dtype, "B_zero_point");
  check_f32_scale(ctx, 6, "C_scale");
  check_zero_point(ctx, 7, a.dtype, "C_zero_point");
  ctx.set_output(0, a.dtype, broadcast_shapes(a.shape, b.shape, ctx.node()));
}

void run_qlinear_add(KernelContext& ctx) {
  const float c_scale = scalar_scale(ctx, 6);
  const float ma = scalar_scale(ctx, 1) / c_scale, mb = scalar_scale(ctx, 4) / c_scale;
  const int32_t za = scalar_zero_point(ctx, 2), zb = scalar_zero_point(ctx, 5), zc = scalar_zero_point(ctx, 7);
  dispatch_int8(ctx, ctx.input(0).dtype(), "A", [&]<typename Q>() {
    broadcast_binary<Q, Q, Q>(ctx.input(0), ctx.input(3), ctx.output(0), [&](Q a, Q b) {
      const float v = ma * static_cast<float>(static_cast<int32_t>(a) - za) + mb * static_cast<float>(static_cast<int32_t>(b) - zb);
      return round_to<Q>(v, zc);
    });
  });
}

// ---- QLinearConcat ---------------------------------------------------------------------------

int concat_input_count(const Node& node, int num_inputs) {
  if (num_inputs < 5 || (num_inputs - 2) % 3 != 0) {
    throw Error(node.describe() + ": takes Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples, got " +
                std::to_string(num_inputs) + " inputs");
  }
  return (num_inputs - 2) / 3;
}

void infer_qlinear_concat(InferContext& ctx) {
  const int count = concat_input_count(ctx.node(), ctx.num_inputs());
  check_f32_scale(ctx, 0, "Y_scale");
  const DType out = ctx.input(1).dtype;
  dispatch_int8(ctx, out, "Y_zero_point", []<typename Q>() {});
  check_quant_param(ctx, ctx.input(1).shape, 1, "Y_zero_point");
  const Shape& first = ctx.input(2).shape;
  const int axis = normalize_axis(ctx.node().attr_int("axis"), static_cast<int>(first.size()), ctx.node());
  Shape shape = first;
  shape[static_cast<size_t>(axis)] = 0;
  for (int i = 0; i < count; ++i) {
    const TensorInfo& x = ctx.input(2 + 3 * i);
    const std::string name = "input " + std::to_string(i);
    if (x.dtype != out) ctx.fail(name + " has dtype " + std::string(dtype_name(x.dtype)) + ", expected Y's " + std::string(dtype_name(out)));
    check_f32_scale(ctx, 3 + 3 * i, (name + "'s scale").c_str());
    check_zero_point(ctx, 4 + 3 * i, out, (name + "'s zero point").c_str());
    if (x.shape.size() != first.size()) ctx.fail(name + " has rank " + std::to_string(x.shape.size()) + ", expected " + std::to_string(first.size()));
    for (size_t d = 0; d < first.size(); ++d) {
      if (static_cast<int>(d) != axis && x.shape[d] != first[d]) {
        ctx.fail(name + " has shape " + shape_str(x.shape) + ", which differs from " + shape_str(first) + " off the axis");
      }
    }
    shape[static_cast<size_t>(axis)] += x.shape[static_cast<size_t>(axis)];
  }
  ctx.set_output(0, out, shape);
}

void run_qlinear_concat(KernelContext& ctx) {
  const int count = concat_input_count(ctx.node(), ctx.num_inputs());
  Tensor& y = ctx.output(0);
  const int axis = normalize_axis(ctx.node().attr_int("axis"), y.rank(), ctx.node());
  const float y_scale = scalar_scale(ctx, 0);
  const int32_t y_zp = scalar_zero_point(ctx, 1);
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= y.dim(d);
  const int64_t y_row = y.numel() / std::max<int64_t>(outer, 1);
  dispatch_int8(ctx, y.dtype(), "Y", [&]<typename Q>() {
    Q* py = y.data<Q>();
    int64_t offset = 0;  // within one outer row of Y
    for (int i = 0; i < count; ++i) {
      const Tensor& x = ctx.input(2 + 3 * i);
      const float x_scale = scalar_scale(ctx, 3 + 3 * i);
      const int32_t x_zp = scalar_zero_point(ctx, 4 + 3 * i);
      const bool same = x_scale == y_scale && x_zp == y_zp;
      const float mult = x_scale / y_scale;
      const int64_t row = x.numel() / std::max<int64_t>(outer, 1);
      const Q* px = x.data<Q>();
      for (int64_t o = 0; o < outer; ++o) {
        const Q* src = px + o * row;
        Q* dst = py + o * y_row + offset;
        if (same) {
          std::copy(src, src + row, dst);
          continue;
        }
        for (int64_t j = 0; j < row; ++j) dst[j] = round_to<Q>(mult * static_cast<float>(static_cast<int32_t>(src[j]) - x_zp), y_zp);
      }
      offset += row;
    }
  });
}

// ---- QLinearAveragePool, QLinearGlobalAveragePool --------------------------------------------

// X's info as the float pool sees it.
TensorInfo as_float(const TensorInfo& x) { return TensorInfo{DType::kF32, x.shape, nullptr}; }

Tensor dequantize_per_tensor(const KernelContext& ctx, const Tensor& x, float scale, int32_t zero_point) {
  Tensor out(DType::kF32, x.shape());
  float* po = out.data<float>();
  dispatch_int8(ctx, x.dtype(), "X", [&]<typename Q>() {
    const Q* px = x.data<Q>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = static_cast<float>(static_cast<int32_t>(px[i]) - zero_point) * scale;
  });
  return out;
}

// QuantizeLinear's rounding (quantization.cpp): x / scale in float, half to even, saturated.
void quantize_per_tensor(const KernelContext& ctx, const Tensor& x, float scale, int32_t zero_point, Tensor& y) {
  const float* px = x.data<float>();
  dispatch_int8(ctx, y.dtype(), "Y", [&]<typename Q>() {
    Q* py = y.data<Q>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      py[i] = saturate<Q>(static_cast<double>(round_half_even(px[i] / scale)) + zero_point);
    }
  });
}

void check_pool_params(InferContext& ctx) {
  dispatch_int8(ctx, ctx.input(0).dtype, "X", []<typename Q>() {});
  check_f32_scale(ctx, 1, "x_scale");
  check_zero_point(ctx, 2, ctx.input(0).dtype, "x_zero_point");
  check_f32_scale(ctx, 3, "y_scale");
  check_zero_point(ctx, 4, ctx.input(0).dtype, "y_zero_point");
}

OpSchema qlinear_average_pool_schema(const OpSchema& base) {
  OpSchema s;
  s.type = "QLinearAveragePool";
  s.domain = kContribDomain;
  s.min_inputs = 4;
  s.max_inputs = 5;
  s.infer = [infer = base.infer](InferContext& ctx) {
    check_pool_params(ctx);
    if (ctx.node().attr_int("channels_last", 0) != 0) ctx.unsupported("channels_last = 1 (NHWC input)");
    const std::array<TensorInfo, 1> ins{as_float(ctx.input(0))};
    std::vector<TensorInfo> outs(1);
    InferContext inner(ctx.node(), ins, outs);
    infer(inner);
    ctx.set_output(0, ctx.input(0).dtype, outs[0].shape);
  };
  s.cost = base.cost;
  s.reference = [kernel = base.reference](KernelContext& ctx) {
    const Tensor fx = dequantize_per_tensor(ctx, ctx.input(0), scalar_scale(ctx, 1), scalar_zero_point(ctx, 2));
    Tensor& y = ctx.output(0);
    Tensor fy(DType::kF32, y.shape());
    const std::array<const Tensor*, 1> ins{&fx};
    const std::array<Tensor*, 1> outs{&fy};
    KernelContext inner(ctx.node(), ins, outs);
    kernel(inner);
    quantize_per_tensor(ctx, fy, scalar_scale(ctx, 3), scalar_zero_point(ctx, 4), y);
  };
  s.doc = "8-bit AveragePool: Quantize(AveragePool(Dequantize(X))), AveragePool's attributes (NCHW only)";
  return s;
}

void infer_qlinear_global_average_pool(InferContext& ctx) {
  check_pool_params(ctx);
  const Shape& x = ctx.input(0).shape;
  if (x.size() < 3) ctx.fail("expects input of rank >= 3, got " + shape_str(x));
  const bool channels_last = ctx.node().attr_int("channels_last", 0) != 0;
  Shape out(x.size(), 1);
  out[0] = x[0];
  if (channels_last) out.back() = x.back();
  else out[1] = x[1];
  ctx.set_output(0, ctx.input(0).dtype, out);
}

void run_qlinear_global_average_pool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool channels_last = ctx.node().attr_int("channels_last", 0) != 0;
  const int64_t batch = x.dim(0), channels = channels_last ? x.shape().back() : x.dim(1);
  const int64_t spatial = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
  const float x_scale = scalar_scale(ctx, 1), y_scale = scalar_scale(ctx, 3);
  const int32_t x_zp = scalar_zero_point(ctx, 2), y_zp = scalar_zero_point(ctx, 4);
  dispatch_int8(ctx, x.dtype(), "X", [&]<typename Q>() {
    const Q* px = x.data<Q>();
    Q* py = ctx.output(0).data<Q>();
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        int64_t sum = 0;  // exact: the mean of the dequantised values is x_scale · sum / count
        for (int64_t i = 0; i < spatial; ++i) {
          const int64_t at = channels_last ? (n * spatial + i) * channels + c : (n * channels + c) * spatial + i;
          sum += static_cast<int32_t>(px[at]) - x_zp;
        }
        const double mean = spatial > 0 ? static_cast<double>(x_scale) * static_cast<double>(sum) / static_cast<double>(spatial) : 0.0;
        py[n * channels + c] = saturate<Q>(round_half_even(mean / static_cast<double>(y_scale)) + y_zp);
      }
    }
  });
}

OpCost global_pool_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  OpCost c = default_cost(node, in, out);
  c.macs = static_cast<double>(shape_numel(in[0].shape));
  return c;
}

OpSchema contrib(OpSchema s) {
  s.domain = kContribDomain;
  return s;
}

}  // namespace

void register_quantized_contrib_ops(OpRegistry& r) {
  OpSchema qgemm = make_schema("QGemm", 6, 9, infer_qgemm, run_qgemm, qgemm_cost,
                               "int8 Gemm: int32 C + (A - a_zp)·(B - b_zp), requantised per column (or float out without y_scale)");
  r.add(contrib(std::move(qgemm)));
  r.add(contrib(make_schema("QLinearAdd", 7, 8, infer_qlinear_add, run_qlinear_add, {},
                            "8-bit Add: (A_scale·(A - A_zp) + B_scale·(B - B_zp)) / C_scale + C_zp, broadcasting")));
  r.add(contrib(make_schema("QLinearConcat", 5, OpSchema::kVariadic, infer_qlinear_concat, run_qlinear_concat, {},
                            "8-bit Concat: (Y_scale, Y_zp, (X, X_scale, X_zp)...), inputs requantised to Y's parameters")));
  const OpSchema* average_pool = r.find("AveragePool");
  if (!average_pool) throw Error("register_quantized_contrib_ops: AveragePool must be registered first");
  r.add(qlinear_average_pool_schema(*average_pool));
  r.add(contrib(make_schema("QLinearGlobalAveragePool", 4, 5, infer_qlinear_global_average_pool,
                            run_qlinear_global_average_pool, global_pool_cost,
                            "8-bit GlobalAveragePool: Quantize(mean(Dequantize(X))) per channel; channels_last")));
}

}  // namespace xnn
