// Matrix products: Gemm (alpha * A' * B' + beta * C) and MatMul (numpy matmul: 1-D promotion,
// batch broadcasting). Both run on gemm_reference.
#include <algorithm>
#include <vector>

#include "engine/ops/gemm_reference.h"
#include "engine/ops/matmul_shapes.h"
#include "engine/ops/nn_common.h"

namespace xnn {
namespace {

template <typename Ctx>
void check_same_dtype(const Ctx& ctx, DType expected, DType got, const char* what) {
  if (got != expected) {
    ctx.fail(std::string(what) + " has dtype " + std::string(dtype_name(got)) + ", expected " +
             std::string(dtype_name(expected)));
  }
}

// MatMul accepts any numeric type in ONNX; we implement f32/f64 and the 32/64-bit integers,
// which fall out of the templates. (Gemm, whose float alpha/beta make little sense for
// integers, is f32/f64 only.)
template <typename Ctx, typename F>
void dispatch_matmul_dtype(const Ctx& ctx, DType t, F&& f) {
  switch (t) {
    case DType::kF32: return f.template operator()<float>();
    case DType::kF64: return f.template operator()<double>();
    case DType::kI32: return f.template operator()<int32_t>();
    case DType::kI64: return f.template operator()<int64_t>();
    case DType::kF16: ctx.unsupported("dtype f16 (f32, f64, i32 and i64 are implemented)");
    default: ctx.fail("dtype " + std::string(dtype_name(t)) + " is not a numeric type this op accepts");
  }
}

// Row-major transpose of a rows x cols matrix.
template <typename T>
std::vector<T> transposed(const T* m, int64_t rows, int64_t cols) {
  std::vector<T> t(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) t[static_cast<size_t>(c * rows + r)] = m[r * cols + c];
  }
  return t;
}

// ---- Gemm ------------------------------------------------------------------------------------

struct GemmDims {
  int64_t m = 0, n = 0, k = 0;
};

template <typename Ctx>
GemmDims gemm_dims(const Ctx& ctx, const Shape& a, const Shape& b) {
  if (a.size() != 2 || b.size() != 2) {
    ctx.fail("expects 2-D A and B, got " + shape_str(a) + " and " + shape_str(b));
  }
  const bool trans_a = ctx.node().attr_int("transA", 0) != 0;
  const bool trans_b = ctx.node().attr_int("transB", 0) != 0;
  GemmDims d;
  d.m = trans_a ? a[1] : a[0];
  d.k = trans_a ? a[0] : a[1];
  const int64_t k_b = trans_b ? b[1] : b[0];
  d.n = trans_b ? b[0] : b[1];
  if (d.k != k_b) {
    ctx.fail("inner dimensions differ: A" + std::string(trans_a ? "^T " : " ") + shape_str(a) + " times B" +
             (trans_b ? "^T " : " ") + shape_str(b));
  }
  return d;
}

void infer_gemm(InferContext& ctx) {
  const TensorInfo& a = ctx.input(0);
  const TensorInfo& b = ctx.input(1);
  check_float_dtype(ctx, a.dtype, "A");
  check_same_dtype(ctx, a.dtype, b.dtype, "B");
  const GemmDims d = gemm_dims(ctx, a.shape, b.shape);
  if (ctx.has_input(2)) {
    const TensorInfo& c = ctx.input(2);
    check_same_dtype(ctx, a.dtype, c.dtype, "C");
    // C broadcasts unidirectionally to [M, N].
    const Shape target{d.m, d.n};
    bool ok = c.shape.size() <= 2;
    for (size_t i = 0; ok && i < c.shape.size(); ++i) {
      const int64_t want = target[2 - c.shape.size() + i];
      ok = c.shape[i] == want || c.shape[i] == 1;
    }
    if (!ok) ctx.fail("C of shape " + shape_str(c.shape) + " does not broadcast to " + shape_str(target));
  }
  ctx.set_output(0, a.dtype, {d.m, d.n});
}

OpCost gemm_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  OpCost c = default_cost(node, in, out);
  const Shape& a = in[0].shape;
  const int64_t k = node.attr_int("transA", 0) != 0 ? a[0] : a[1];
  c.macs = static_cast<double>(shape_numel(out[0].shape)) * static_cast<double>(k);
  return c;
}

template <typename T>
void gemm_kernel(KernelContext& ctx, const GemmDims& d) {
  const Node& node = ctx.node();
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  // Transposed operands are copied into row-major form: O(M*K + K*N) next to O(M*N*K).
  std::vector<T> a_t, b_t;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  if (node.attr_int("transA", 0) != 0) {
    a_t = transposed(pa, d.k, d.m);
    pa = a_t.data();
  }
  if (node.attr_int("transB", 0) != 0) {
    b_t = transposed(pb, d.n, d.k);
    pb = b_t.data();
  }
  T* py = y.data<T>();
  std::fill(py, py + d.m * d.n, T(0));
  gemm_reference<T>(d.m, d.n, d.k, pa, d.k, pb, d.n, py, d.n);

  const T alpha = static_cast<T>(node.attr_float("alpha", 1.0f));
  const T beta = static_cast<T>(node.attr_float("beta", 1.0f));
  const bool add_c = ctx.has_input(2) && beta != T(0);  // beta = 0 ignores C (as onnxruntime)
  if (alpha == T(1) && !add_c) return;
  const T* pc = add_c ? ctx.input(2).data<T>() : nullptr;
  std::vector<int64_t> c_strides{0, 0};
  if (add_c) c_strides = broadcast_strides(ctx.input(2).shape(), {d.m, d.n});
  for (int64_t i = 0; i < d.m; ++i) {
    T* row = py + i * d.n;
    for (int64_t j = 0; j < d.n; ++j) {
      row[j] = alpha * row[j] + (add_c ? beta * pc[i * c_strides[0] + j * c_strides[1]] : T(0));
    }
  }
}

void run_gemm(KernelContext& ctx) {
  const GemmDims d = gemm_dims(ctx, ctx.input(0).shape(), ctx.input(1).shape());
  dispatch_float(ctx, ctx.input(0).dtype(), [&]<typename T>() { gemm_kernel<T>(ctx, d); });
}

// ---- MatMul ----------------------------------------------------------------------------------

void infer_matmul(InferContext& ctx) {
  const TensorInfo& a = ctx.input(0);
  const TensorInfo& b = ctx.input(1);
  check_same_dtype(ctx, a.dtype, b.dtype, "B");
  dispatch_matmul_dtype(ctx, a.dtype, []<typename T>() {});  // rejects what we cannot run
  ctx.set_output(0, a.dtype, matmul_shapes(ctx, a.shape, b.shape).out);
}

OpCost matmul_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  OpCost c = default_cost(node, in, out);
  const Shape& a = in[0].shape;
  c.macs = static_cast<double>(shape_numel(out[0].shape)) * static_cast<double>(a.empty() ? 0 : a.back());
  return c;
}

void run_matmul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const MatMulShapes s = matmul_shapes(ctx, a.shape(), b.shape());
  dispatch_matmul_dtype(ctx, a.dtype(), [&]<typename T>() {
    matmul_kernel<T>(s, a.data<T>(), b.data<T>(), ctx.output(0).data<T>());
  });
}

}  // namespace

void register_gemm_ops(OpRegistry& r) {
  OpSchema gemm;
  gemm.type = "Gemm";
  gemm.min_inputs = 2;
  gemm.max_inputs = 3;
  gemm.infer = infer_gemm;
  gemm.cost = gemm_cost;
  gemm.reference = run_gemm;
  gemm.doc = "Y = alpha * A' * B' + beta * C (A' = transA ? A^T : A), C broadcast to [M, N]";
  r.add(std::move(gemm));

  OpSchema matmul;
  matmul.type = "MatMul";
  matmul.min_inputs = matmul.max_inputs = 2;
  matmul.infer = infer_matmul;
  matmul.cost = matmul_cost;
  matmul.reference = run_matmul;
  matmul.doc = "numpy matmul: 1-D promotion, broadcast batch dims";
  r.add(std::move(matmul));
}

}  // namespace xnn
