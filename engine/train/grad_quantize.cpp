// Backward of ai.xnn FakeQuantize (engine/ops/fake_quantize.cpp): the straight-through
// estimator. Rounding has a zero derivative almost everywhere, so the gradient is passed through
// as if the op were the identity wherever the input lies inside the representable range, and is
// zero where the input was clipped (there the output really does not move with the input).
// Activations: the range is [(0 - zero_point)·scale, (255 - zero_point)·scale]. Weights: the scale
// comes from max|w| of the slice, so every weight is inside its range and the gradient passes
// everywhere. Scales and zero points are fixed (calibrated), not learned: they get no gradient.
#include <cstdint>

#include "engine/train/autograd.h"

namespace xnn::train {

void register_quantize_grads(GradRegistry& r) {
  GradOp op;
  op.type = "FakeQuantize";
  op.differentiable_inputs = {0};
  op.backward = [](BackwardContext& c) {
    if (!c.wants(0)) return;
    const Tensor& dy = c.grad_output(0);
    Tensor& dx = c.grad_input(0);
    const float* g = dy.data<float>();
    float* d = dx.data<float>();
    const int64_t n = dx.numel();
    if (!c.has_input(1)) {
      for (int64_t i = 0; i < n; ++i) d[i] = g[i];
      return;
    }
    const float scale = c.input(1).data<float>()[0];
    const int32_t zp = c.input(2).data<uint8_t>()[0];
    const float lo = static_cast<float>(0 - zp) * scale, hi = static_cast<float>(255 - zp) * scale;
    const float* x = c.input(0).data<float>();
    for (int64_t i = 0; i < n; ++i) d[i] = (x[i] >= lo && x[i] <= hi) ? g[i] : 0.0f;
  };
  r.add(std::move(op), "ai.xnn");
}

}  // namespace xnn::train
