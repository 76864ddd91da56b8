// Gemm and MatMul in training, on the fast GEMM. With A' = op(A), B' = op(B) (op: transpose
// when transA/transB), Y = alpha·A'·B' + beta·C:
//   dA' = alpha·dY·B'ᵀ,  dB' = alpha·A'ᵀ·dY,  dC = beta·Σ_broadcast dY
// Transposes are expressed as strides (MatrixRef), never copied; a transposed operand's
// gradient is computed directly in its stored layout (dA = dA'ᵀ = alpha·B'·dYᵀ).
#include <cstring>

#include "engine/kernels/gemm.h"
#include "engine/ops/op_helpers.h"
#include "engine/train/autograd.h"

namespace xnn::train {
namespace {

using kernels::GemmEpilogue;
using kernels::MatrixRef;

MatrixRef transposed(MatrixRef m) { return MatrixRef{m.data, m.col_stride, m.row_stride}; }

void scale(Tensor& t, float s) {
  if (s == 1.0f) return;
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] *= s;
}

struct GemmShape {
  int64_t m, n, k;
  MatrixRef a, b;  // A' and B' as stored
};

GemmShape gemm_shape(const Node& node, const Tensor& a, const Tensor& b) {
  if (a.rank() != 2 || b.rank() != 2 || a.dtype() != DType::kF32) {
    throw UnsupportedError("training: " + node.describe() + ": Gemm needs f32 matrices");
  }
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  GemmShape s;
  s.m = ta ? a.dim(1) : a.dim(0);
  s.k = ta ? a.dim(0) : a.dim(1);
  s.n = tb ? b.dim(0) : b.dim(1);
  s.a = ta ? MatrixRef{a.data<float>(), 1, a.dim(1)} : MatrixRef{a.data<float>(), a.dim(1), 1};
  s.b = tb ? MatrixRef{b.data<float>(), 1, b.dim(1)} : MatrixRef{b.data<float>(), b.dim(1), 1};
  return s;
}

void gemm_forward(ForwardContext& c) {
  const Tensor& a = *c.inputs[0];
  const Tensor& b = *c.inputs[1];
  const Tensor* cc = c.inputs.size() > 2 && c.inputs[2] && c.inputs[2]->defined() ? c.inputs[2] : nullptr;
  Tensor& y = *c.outputs[0];
  const GemmShape s = gemm_shape(c.node, a, b);
  const float alpha = c.node.attr_float("alpha", 1.0f), beta = c.node.attr_float("beta", 1.0f);
  float* yp = y.data<float>();
  kernels::f32_gemm(s.m, s.n, s.k, s.a, s.b, yp, s.n, GemmEpilogue{}, c.pool);
  scale(y, alpha);
  if (cc && beta != 0.0f) {
    broadcast_binary<float, float, float>(y, *cc, y, [beta](float v, float bias) { return v + beta * bias; });
  }
}

void gemm_backward(BackwardContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const GemmShape s = gemm_shape(c.node, a, b);
  const bool ta = c.node.attr_int("transA", 0) != 0, tb = c.node.attr_int("transB", 0) != 0;
  const float alpha = c.node.attr_float("alpha", 1.0f), beta = c.node.attr_float("beta", 1.0f);
  const Tensor& dy = c.grad_output(0);
  const MatrixRef dyr{dy.data<float>(), s.n, 1};
  if (c.wants(0)) {
    Tensor& da = c.grad_input(0);
    if (!ta) {
      kernels::f32_gemm(s.m, s.k, s.n, dyr, transposed(s.b), da.data<float>(), s.k, GemmEpilogue{}, c.pool);
    } else {
      kernels::f32_gemm(s.k, s.m, s.n, s.b, transposed(dyr), da.data<float>(), s.m, GemmEpilogue{}, c.pool);
    }
    scale(da, alpha);
  }
  if (c.wants(1)) {
    Tensor& db = c.grad_input(1);
    if (!tb) {
      kernels::f32_gemm(s.k, s.n, s.m, transposed(s.a), dyr, db.data<float>(), s.n, GemmEpilogue{}, c.pool);
    } else {
      kernels::f32_gemm(s.n, s.k, s.m, transposed(dyr), s.a, db.data<float>(), s.k, GemmEpilogue{}, c.pool);
    }
    scale(db, alpha);
  }
  if (c.wants(2)) {
    reduce_to_shape(dy, c.grad_input(2));
    scale(c.grad_input(2), beta);
  }
}

// MatMul with numpy batch broadcasting: both operands of rank >= 2 (1-D operands are not
// trained). Per broadcast batch index one GEMM; gradients of a broadcast operand are computed at
// the full batch shape and summed back.
struct BatchWalk {
  Shape out_batch;
  std::vector<int64_t> a_off, b_off;  // per output batch index: element offsets into A and B
  int64_t m, k, n;
};

BatchWalk batch_walk(const Node& node, const Tensor& a, const Tensor& b) {
  if (a.rank() < 2 || b.rank() < 2 || a.dtype() != DType::kF32) {
    throw UnsupportedError("training: " + node.describe() + ": MatMul training needs f32 operands of rank >= 2");
  }
  BatchWalk w;
  w.m = a.dim(a.rank() - 2), w.k = a.dim(a.rank() - 1), w.n = b.dim(b.rank() - 1);
  const Shape ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  w.out_batch = broadcast_shapes(ab, bb, node);
  const auto sa = broadcast_strides(ab, w.out_batch), sb = broadcast_strides(bb, w.out_batch);
  const int64_t count = shape_numel(w.out_batch);
  std::vector<int64_t> idx(w.out_batch.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < idx.size(); ++d) oa += idx[d] * sa[d], ob += idx[d] * sb[d];
    w.a_off.push_back(oa * w.m * w.k);
    w.b_off.push_back(ob * w.k * w.n);
    for (int d = static_cast<int>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < w.out_batch[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return w;
}

void matmul_forward(ForwardContext& c) {
  const Tensor& a = *c.inputs[0];
  const Tensor& b = *c.inputs[1];
  const BatchWalk w = batch_walk(c.node, a, b);
  float* y = c.outputs[0]->data<float>();
  for (size_t i = 0; i < w.a_off.size(); ++i) {
    kernels::f32_gemm(w.m, w.n, w.k, MatrixRef{a.data<float>() + w.a_off[i], w.k, 1},
                      MatrixRef{b.data<float>() + w.b_off[i], w.n, 1}, y + static_cast<int64_t>(i) * w.m * w.n, w.n,
                      GemmEpilogue{}, c.pool);
  }
}

void matmul_backward(BackwardContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const BatchWalk w = batch_walk(c.node, a, b);
  const float* dy = c.grad_output(0).data<float>();
  const int64_t batches = static_cast<int64_t>(w.a_off.size());
  for (int operand = 0; operand < 2; ++operand) {
    if (!c.wants(operand)) continue;
    Tensor& g = c.grad_input(operand);
    Shape full = w.out_batch;
    full.push_back(operand == 0 ? w.m : w.k);
    full.push_back(operand == 0 ? w.k : w.n);
    Tensor& dst = full == g.shape() ? g : c.state.slot(static_cast<size_t>(operand), DType::kF32, full);
    float* d = dst.data<float>();
    for (int64_t i = 0; i < batches; ++i) {
      const MatrixRef dyr{dy + i * w.m * w.n, w.n, 1};
      if (operand == 0) {  // dA = dY·Bᵀ
        kernels::f32_gemm(w.m, w.k, w.n, dyr, MatrixRef{b.data<float>() + w.b_off[static_cast<size_t>(i)], 1, w.n},
                          d + i * w.m * w.k, w.k, GemmEpilogue{}, c.pool);
      } else {  // dB = Aᵀ·dY
        kernels::f32_gemm(w.k, w.n, w.m, MatrixRef{a.data<float>() + w.a_off[static_cast<size_t>(i)], 1, w.k}, dyr,
                          d + i * w.k * w.n, w.n, GemmEpilogue{}, c.pool);
      }
    }
    if (&dst != &g) reduce_to_shape(dst, g);
  }
}

}  // namespace

void register_gemm_grads(GradRegistry& r) {
  r.add({"Gemm", {0, 1, 2}, gemm_forward, gemm_backward});
  r.add({"MatMul", {0, 1}, matmul_forward, matmul_backward});
}

}  // namespace xnn::train
