// numpy-matmul shape rules and the batched reference product, shared by MatMul (gemm.cpp) and
// the integer matrix products (MatMulInteger / QLinearMatMul in quantized_matmul.cpp).
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "engine/ops/gemm_reference.h"
#include "engine/ops/op_helpers.h"

namespace xnn {

// numpy matmul shapes: a 1-D A is a row [1, K], a 1-D B a column [K, 1] (the unit dim is dropped
// from the output); the batch dims before the last two broadcast.
struct MatMulShapes {
  int64_t m = 0, n = 0, k = 0;
  Shape a_batch, b_batch, batch;  // batch: broadcast of a_batch and b_batch
  Shape out;
};

template <typename Ctx>
MatMulShapes matmul_shapes(const Ctx& ctx, const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) ctx.fail("expects inputs of rank >= 1, got " + shape_str(a) + " and " + shape_str(b));
  MatMulShapes s;
  const Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  const Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  s.m = a2[a2.size() - 2];
  s.k = a2[a2.size() - 1];
  s.n = b2[b2.size() - 1];
  if (b2[b2.size() - 2] != s.k) {
    ctx.fail("inner dimensions differ: " + shape_str(a) + " times " + shape_str(b));
  }
  s.a_batch.assign(a2.begin(), a2.end() - 2);
  s.b_batch.assign(b2.begin(), b2.end() - 2);
  s.batch = broadcast_shapes(s.a_batch, s.b_batch, ctx.node());
  s.out = s.batch;
  if (a.size() > 1) s.out.push_back(s.m);
  if (b.size() > 1) s.out.push_back(s.n);
  return s;
}

// Y = A·B over the broadcast batch (Y is overwritten).
template <typename T>
void matmul_kernel(const MatMulShapes& s, const T* a, const T* b, T* y) {
  const int64_t a_mat = s.m * s.k, b_mat = s.k * s.n, y_mat = s.m * s.n;
  const int64_t batches = shape_numel(s.batch);
  std::fill(y, y + batches * y_mat, T(0));
  if (shape_numel(s.b_batch) == 1) {
    // One B for every batch: A's batch dims fold into its rows, a single large GEMM.
    gemm_reference<T>(shape_numel(s.a_batch) * s.m, s.n, s.k, a, s.k, b, s.n, y, s.n);
    return;
  }
  // Matrix strides of A and B when read as broadcast to the output batch shape.
  const std::vector<int64_t> a_strides = broadcast_strides(s.a_batch, s.batch);
  const std::vector<int64_t> b_strides = broadcast_strides(s.b_batch, s.batch);
  for (int64_t i = 0; i < batches; ++i) {
    int64_t a_index = 0, b_index = 0, rest = i;
    for (size_t d = s.batch.size(); d-- > 0;) {
      const int64_t coord = rest % s.batch[d];
      rest /= s.batch[d];
      a_index += coord * a_strides[d];
      b_index += coord * b_strides[d];
    }
    gemm_reference<T>(s.m, s.n, s.k, a + a_index * a_mat, s.k, b + b_index * b_mat, s.n, y + i * y_mat, s.n);
  }
}

}  // namespace xnn
