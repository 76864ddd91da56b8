// Integer matrix products: MatMulInteger (int32 result) and QLinearMatMul (requantised 8-bit
// result), with numpy-matmul shapes (matmul_shapes.h). Zero points and scales of A may be given
// per row (the M axis), those of B per column (the N axis). The reference subtracts the zero
// points, multiplies exactly in int32 and requantises as quant_common.h defines.
#include <vector>

#include "engine/ops/matmul_shapes.h"
#include "engine/ops/nn_common.h"
#include "engine/ops/quant_common.h"

namespace xnn {
namespace {

// M (rows of A) and N (columns of B) for the per-row / per-column parameters.
struct RowsCols {
  int64_t m = 1, n = 1;
};
RowsCols rows_cols(const Shape& a, const Shape& b) {
  return RowsCols{a.size() >= 2 ? a[a.size() - 2] : 1, b.size() >= 2 ? b.back() : 1};
}

// X as int32 with its zero point subtracted; `zp` indexed by (i / stride) % count.
template <typename Q>
std::vector<int32_t> centred(const Tensor& x, const std::vector<int32_t>& zp, int64_t stride, int64_t count) {
  std::vector<int32_t> v(static_cast<size_t>(x.numel()));
  const Q* p = x.data<Q>();
  for (int64_t i = 0; i < x.numel(); ++i) v[static_cast<size_t>(i)] = p[i] - zp[static_cast<size_t>((i / stride) % count)];
  return v;
}

std::vector<int32_t> centred_any(const KernelContext& ctx, const Tensor& x, const std::vector<int32_t>& zp, int64_t stride,
                                 int64_t count) {
  std::vector<int32_t> out;
  dispatch_int8(ctx, x.dtype(), "input", [&]<typename Q>() { out = centred<Q>(x, zp, stride, count); });
  return out;
}

// A·B in int32 with zero points removed: A's per row, B's per column.
std::vector<int32_t> integer_product(const KernelContext& ctx, const MatMulShapes& s, const Tensor& a, const Tensor* a_zp,
                                     const Tensor& b, const Tensor* b_zp) {
  const RowsCols rc = rows_cols(a.shape(), b.shape());
  const std::vector<int32_t> ca = centred_any(ctx, a, per_slice_ints(a_zp, rc.m), s.k, rc.m);
  const std::vector<int32_t> cb = centred_any(ctx, b, per_slice_ints(b_zp, rc.n), 1, rc.n);
  std::vector<int32_t> acc(static_cast<size_t>(shape_numel(s.out)));
  matmul_kernel<int32_t>(s, ca.data(), cb.data(), acc.data());
  return acc;
}

template <typename Ctx>
void check_row_col_params(const Ctx& ctx, const Shape& a, const Shape& b, int a_param, int b_param) {
  const RowsCols rc = rows_cols(a, b);
  if (a_param >= 0 && ctx.has_input(a_param)) check_quant_param(ctx, ctx.input(a_param).shape, rc.m, "A's scale/zero point");
  if (b_param >= 0 && ctx.has_input(b_param)) check_quant_param(ctx, ctx.input(b_param).shape, rc.n, "B's scale/zero point");
}

OpCost integer_matmul_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out, int b_index) {
  OpCost c = default_cost(node, in, out);
  const Shape& b = in[static_cast<size_t>(b_index)].shape;
  c.macs = static_cast<double>(shape_numel(out[0].shape)) * static_cast<double>(b.size() >= 2 ? b[b.size() - 2] : b[0]);
  return c;
}

// ---- MatMulInteger: (A, B, a_zero_point?, b_zero_point?) -> int32 ------------------------------

void infer_matmul_integer(InferContext& ctx) {
  const TensorInfo& a = ctx.input(0);
  const TensorInfo& b = ctx.input(1);
  dispatch_int8(ctx, a.dtype, "A", []<typename Q>() {});
  dispatch_int8(ctx, b.dtype, "B", []<typename Q>() {});
  if (ctx.has_input(2) && ctx.input(2).dtype != a.dtype) ctx.fail("a_zero_point must have A's dtype");
  if (ctx.has_input(3) && ctx.input(3).dtype != b.dtype) ctx.fail("b_zero_point must have B's dtype");
  check_row_col_params(ctx, a.shape, b.shape, 2, 3);
  ctx.set_output(0, DType::kI32, matmul_shapes(ctx, a.shape, b.shape).out);
}

void run_matmul_integer(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const MatMulShapes s = matmul_shapes(ctx, a.shape(), b.shape());
  const std::vector<int32_t> acc = integer_product(ctx, s, a, ctx.has_input(2) ? &ctx.input(2) : nullptr, b,
                                                   ctx.has_input(3) ? &ctx.input(3) : nullptr);
  std::copy(acc.begin(), acc.end(), ctx.output(0).data<int32_t>());
}

// ---- QLinearMatMul: (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) -> 8-bit ----------------

void infer_qlinear_matmul(InferContext& ctx) {
  const TensorInfo& a = ctx.input(0);
  const TensorInfo& b = ctx.input(3);
  dispatch_int8(ctx, a.dtype, "a", []<typename Q>() {});
  dispatch_int8(ctx, b.dtype, "b", []<typename Q>() {});
  for (int i : {1, 4, 6}) {
    if (ctx.input(i).dtype != DType::kF32) ctx.fail("input " + std::to_string(i) + " (a scale) must be float32");
  }
  const DType out = ctx.input(7).dtype;
  dispatch_int8(ctx, out, "y_zero_point", []<typename Q>() {});
  check_row_col_params(ctx, a.shape, b.shape, 1, 4);
  check_row_col_params(ctx, a.shape, b.shape, 2, 5);
  check_quant_param(ctx, ctx.input(6).shape, 1, "y_scale");
  check_quant_param(ctx, ctx.input(7).shape, 1, "y_zero_point");
  ctx.set_output(0, out, matmul_shapes(ctx, a.shape, b.shape).out);
}

void run_qlinear_matmul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const MatMulShapes s = matmul_shapes(ctx, a.shape(), b.shape());
  const RowsCols rc = rows_cols(a.shape(), b.shape());
  const std::vector<int32_t> acc = integer_product(ctx, s, a, &ctx.input(2), b, &ctx.input(5));
  const std::vector<double> sa = per_slice_floats(ctx.input(1), rc.m), sb = per_slice_floats(ctx.input(4), rc.n);
  const float sy = ctx.input(6).data<float>()[0];
  const int32_t zy = per_slice_ints(&ctx.input(7), 1)[0];
  Tensor& y = ctx.output(0);
  const int64_t m = a.shape().size() >= 2 ? s.m : 1;  // 1-D A has no row axis in the output
  const int64_t n = b.shape().size() >= 2 ? s.n : 1;
  dispatch_int8(ctx, y.dtype(), "y", [&]<typename Q>() {
    Q* py = y.data<Q>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      const int64_t row = (i / n) % m, col = i % n;
      const float mult = requant_multiplier(static_cast<float>(sa[static_cast<size_t>(row)]),
                                            static_cast<float>(sb[static_cast<size_t>(col)]), sy);
      py[i] = requantize_to<Q>(acc[static_cast<size_t>(i)], mult, zy);
    }
  });
}

}  // namespace

void register_quantized_matmul_ops(OpRegistry& r) {
  OpSchema mi;
  mi.type = "MatMulInteger";
  mi.min_inputs = 2;
  mi.max_inputs = 4;
  mi.infer = infer_matmul_integer;
  mi.cost = [](const Node& n, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
    return integer_matmul_cost(n, in, out, 1);
  };
  mi.reference = run_matmul_integer;
  mi.doc = "int32 (A - a_zp)·(B - b_zp), numpy matmul shapes; zero points per tensor, per row of A, per column of B";
  r.add(std::move(mi));

  OpSchema qm;
  qm.type = "QLinearMatMul";
  qm.min_inputs = qm.max_inputs = 8;
  qm.infer = infer_qlinear_matmul;
  qm.cost = [](const Node& n, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
    return integer_matmul_cost(n, in, out, 3);
  };
  qm.reference = run_qlinear_matmul;
  qm.doc = "8-bit matmul: int32 product of centred inputs, requantised with a_scale·b_scale/y_scale";
  r.add(std::move(qm));
}

}  // namespace xnn
