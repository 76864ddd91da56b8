// Backward of the activations (and Softmax/LogSoftmax): elementwise from the forward input or
// output. Boundary conventions follow PyTorch so that gradients match it exactly: ReLU passes
// no gradient at 0, Clip (ReLU6 = hardtanh) none at either bound, HardSwish's middle segment
// includes +3.
#include <algorithm>
#include <cmath>

#include "engine/kernels/training_kernels.h"
#include "engine/runtime/executor.h"
#include "engine/train/autograd.h"

namespace xnn::train {
namespace {

// Elementwise loops over activations of a whole batch (megabytes) are split into blocks on the
// thread pool; serial, they would cap the speed-up of every other parallel kernel.
constexpr int64_t kBlock = 1 << 16;

template <typename F>
void unary_grad(BackwardContext& c, F&& f) {
  if (!c.wants(0)) return;
  const float* x = c.input(0).data<float>();
  const float* y = c.output(0).data<float>();
  const float* dy = c.grad_output(0).data<float>();
  float* dx = c.grad_input(0).data<float>();
  const int64_t n = c.input(0).numel();
  parallel_for(c.pool, (n + kBlock - 1) / kBlock, [&](int64_t b) {
    const int64_t end = std::min(n, (b + 1) * kBlock);
    for (int64_t i = b * kBlock; i < end; ++i) dx[i] = f(x[i], y[i], dy[i]);
  });
}

void relu_forward(ForwardContext& c) {
  const Tensor& x = *c.inputs[0];
  if (x.dtype() != DType::kF32) {
    KernelContext k(c.node, c.inputs, c.outputs, c.pool);
    schema_for(OpRegistry::builtin(), c.node).reference(k);
    return;
  }
  const float* xp = x.data<float>();
  float* yp = c.outputs[0]->data<float>();
  const int64_t n = x.numel();
  const kernels::Isa isa = kernels::best_isa();
  parallel_for(c.pool, (n + kBlock - 1) / kBlock, [&](int64_t b) {
    const int64_t begin = b * kBlock, end = std::min(n, begin + kBlock);
    kernels::f32_scale_shift(xp + begin, end - begin, 1.0f, 0.0f, kernels::Activation::relu(), yp + begin, isa);
  });
}

// ReLU backward from the output (y > 0 exactly where x > 0).
void relu_backward(BackwardContext& c) {
  if (!c.wants(0)) return;
  const float* y = c.output(0).data<float>();
  const float* dy = c.grad_output(0).data<float>();
  float* dx = c.grad_input(0).data<float>();
  const int64_t n = c.input(0).numel();
  const kernels::Isa isa = kernels::best_isa();
  parallel_for(c.pool, (n + kBlock - 1) / kBlock, [&](int64_t b) {
    const int64_t begin = b * kBlock, end = std::min(n, begin + kBlock);
    kernels::f32_relu_grad(y + begin, dy + begin, end - begin, dx + begin, isa);
  });
}

float optional_scalar(const BackwardContext& c, int i, float def) {
  return c.has_input(i) ? static_cast<float>(c.input(i).scalar_as_double()) : def;
}

void softmax_grad(BackwardContext& c, bool log) {
  if (!c.wants(0)) return;
  const Tensor& y = c.output(0);
  const int rank = y.rank();
  int64_t axis = c.node.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  int64_t outer = 1, len = y.dim(static_cast<int>(axis)), inner = 1;
  for (int d = 0; d < axis; ++d) outer *= y.dim(d);
  for (int d = static_cast<int>(axis) + 1; d < rank; ++d) inner *= y.dim(d);
  const float* yp = y.data<float>();
  const float* dy = c.grad_output(0).data<float>();
  float* dx = c.grad_input(0).data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = o * len * inner + in;
      double s = 0;
      for (int64_t j = 0; j < len; ++j) s += log ? dy[base + j * inner] : dy[base + j * inner] * yp[base + j * inner];
      for (int64_t j = 0; j < len; ++j) {
        const int64_t k = base + j * inner;
        dx[k] = log ? static_cast<float>(dy[k] - std::exp(yp[k]) * s) : static_cast<float>(yp[k] * (dy[k] - s));
      }
    }
  }
}

}  // namespace

void register_activation_grads(GradRegistry& r) {
  r.add({"Relu", {0}, relu_forward, relu_backward});
  r.add({"LeakyRelu", {0}, {}, [](BackwardContext& c) {
           const float alpha = c.node.attr_float("alpha", 0.01f);
           unary_grad(c, [alpha](float x, float, float dy) { return x > 0 ? dy : alpha * dy; });
         }});
  r.add({"Clip", {0}, {}, [](BackwardContext& c) {
           const float lo = optional_scalar(c, 1, -INFINITY), hi = optional_scalar(c, 2, INFINITY);
           unary_grad(c, [lo, hi](float x, float, float dy) { return x > lo && x < hi ? dy : 0.0f; });
         }});
  r.add({"Sigmoid", {0}, {}, [](BackwardContext& c) {
           unary_grad(c, [](float, float y, float dy) { return dy * y * (1.0f - y); });
         }});
  r.add({"Tanh", {0}, {}, [](BackwardContext& c) {
           unary_grad(c, [](float, float y, float dy) { return dy * (1.0f - y * y); });
         }});
  r.add({"HardSigmoid", {0}, {}, [](BackwardContext& c) {
           const float alpha = c.node.attr_float("alpha", 0.2f), beta = c.node.attr_float("beta", 0.5f);
           unary_grad(c, [alpha, beta](float x, float, float dy) {
             const float t = alpha * x + beta;
             return t > 0 && t < 1 ? alpha * dy : 0.0f;
           });
         }});
  r.add({"HardSwish", {0}, {}, [](BackwardContext& c) {
           unary_grad(c, [](float x, float, float dy) {
             if (x < -3.0f) return 0.0f;
             if (x <= 3.0f) return dy * (x / 3.0f + 0.5f);
             return dy;
           });
         }});
  r.add({"Softmax", {0}, {}, [](BackwardContext& c) { softmax_grad(c, false); }});
  r.add({"LogSoftmax", {0}, {}, [](BackwardContext& c) { softmax_grad(c, true); }});
}

}  // namespace xnn::train
