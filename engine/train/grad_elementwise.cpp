// Backward of the broadcasting arithmetic ops (Add, Sub, Mul, Div) and Sum: the gradient of each
// operand is the output gradient (times the other operand for Mul/Div) summed over the dims the
// operand was broadcast along.
#include "engine/ops/op_helpers.h"
#include "engine/train/autograd.h"

namespace xnn::train {
namespace {

// t = f(dy, operand) elementwise with the operand broadcast to dy's shape.
template <typename F>
Tensor& broadcast_with(BackwardContext& c, size_t slot, const Tensor& dy, const Tensor& operand, F&& f) {
  Tensor& t = c.state.slot(slot, DType::kF32, dy.shape());
  broadcast_binary<float, float, float>(dy, operand, t, f);
  return t;
}

void add_sub_grad(BackwardContext& c, float sign_b) {
  const Tensor& dy = c.grad_output(0);
  if (c.wants(0)) reduce_to_shape(dy, c.grad_input(0));
  if (c.wants(1)) {
    Tensor& db = c.grad_input(1);
    reduce_to_shape(dy, db);
    if (sign_b < 0) {
      float* p = db.data<float>();
      for (int64_t i = 0; i < db.numel(); ++i) p[i] = -p[i];
    }
  }
}

}  // namespace

void register_elementwise_grads(GradRegistry& r) {
  r.add({"Add", {0, 1}, {}, [](BackwardContext& c) { add_sub_grad(c, 1.0f); }});
  r.add({"Sub", {0, 1}, {}, [](BackwardContext& c) { add_sub_grad(c, -1.0f); }});
  r.add({"Mul", {0, 1}, {}, [](BackwardContext& c) {
           const Tensor& dy = c.grad_output(0);
           auto mul = [](float g, float v) { return g * v; };
           if (c.wants(0)) reduce_to_shape(broadcast_with(c, 0, dy, c.input(1), mul), c.grad_input(0));
           if (c.wants(1)) reduce_to_shape(broadcast_with(c, 0, dy, c.input(0), mul), c.grad_input(1));
         }});
  r.add({"Div", {0, 1}, {}, [](BackwardContext& c) {
           const Tensor& dy = c.grad_output(0);
           Tensor& q = broadcast_with(c, 0, dy, c.input(1), [](float g, float b) { return g / b; });
           if (c.wants(1)) {
             // d(a/b)/db = -(a/b)/b: -(dy/b) * y, with y the forward output (dy's shape).
             Tensor& t = c.state.slot(1, DType::kF32, dy.shape());
             const float* qp = q.data<float>();
             const float* y = c.output(0).data<float>();
             float* tp = t.data<float>();
             for (int64_t i = 0; i < t.numel(); ++i) tp[i] = -qp[i] * y[i];
             reduce_to_shape(t, c.grad_input(1));
           }
           if (c.wants(0)) reduce_to_shape(q, c.grad_input(0));
         }});
  r.add({"Sum", {0, 1, 2, 3, 4, 5, 6, 7}, {}, [](BackwardContext& c) {
           for (int i = 0; i < static_cast<int>(c.inputs.size()); ++i)
             if (c.wants(i)) reduce_to_shape(c.grad_output(0), c.grad_input(i));
         }});
}

}  // namespace xnn::train
