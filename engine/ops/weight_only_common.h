// Shape inference and run-time checks shared by the weight-only ops of domain ai.xnn
// (RowQuantizedGather/Gemm in row_quantized.cpp, CodebookGather/Gemm in codebook.cpp): both
// store a table of `cols`-element rows in some coded form and differ only in how a row decodes.
#pragma once
#include <string>

#include "engine/ops/op_helpers.h"
#include "engine/ops/tensor_ops.h"

namespace xnn::weight_only {

// Rows must be >= 1 element wide ("cols" attribute).
inline int64_t checked_cols(const Node& node) {
  const int64_t cols = node.attr_int("cols", 0);
  if (cols < 1) fail_node(node, "cols (elements per row) must be >= 1, got " + std::to_string(cols));
  return cols;
}

// The Gather form: indices (i32/i64) at input `indices_i`, output f32 [indices..., cols].
inline void infer_gather_output(InferContext& ctx, int indices_i, int64_t cols) {
  const TensorInfo& indices = ctx.input(indices_i);
  if (indices.dtype != DType::kI32 && indices.dtype != DType::kI64) {
    ctx.fail("indices must be i32 or i64, got " + std::string(dtype_name(indices.dtype)));
  }
  Shape out = indices.shape;
  out.push_back(cols);
  ctx.set_output(0, DType::kF32, out);
}

// The Gemm form: A f32 [..., cols] at input 0, a table of `n` rows, an optional f32 [n] bias at
// input `bias_i`; output f32 [..., n] (A·Wᵀ + b).
inline void infer_gemm_output(InferContext& ctx, int64_t cols, int64_t n, int bias_i) {
  const TensorInfo& a = ctx.input(0);
  if (a.dtype != DType::kF32) ctx.fail("A must be float32, got " + std::string(dtype_name(a.dtype)));
  if (a.shape.empty() || a.shape.back() != cols) {
    ctx.fail("A " + shape_str(a.shape) + " must end in K = cols = " + std::to_string(cols));
  }
  if (ctx.has_input(bias_i)) {
    const TensorInfo& bias = ctx.input(bias_i);
    if (bias.dtype != DType::kF32 || bias.shape != Shape{n}) {
      ctx.fail("bias must be float32 [" + std::to_string(n) + "], got " + std::string(dtype_name(bias.dtype)) + " " +
               shape_str(bias.shape));
    }
  }
  Shape out = a.shape;
  out.back() = n;
  ctx.set_output(0, DType::kF32, out);
}

// Element i of `indices` as a row of a `rows`-row table (negative counts from the end); an
// index outside [-rows, rows) is an error naming it.
template <typename Context>
int64_t table_row(Context& ctx, const Tensor& indices, int64_t i, int64_t rows) {
  int64_t r = indices.scalar_as_int(i);
  if (r < -rows || r >= rows) {
    ctx.fail("index " + std::to_string(r) + " is out of range [" + std::to_string(-rows) + ", " +
             std::to_string(rows - 1) + "] of the " + std::to_string(rows) + "-row table");
  }
  return r < 0 ? r + rows : r;
}

}  // namespace xnn::weight_only
