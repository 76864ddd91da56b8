// BatchNormalization in training mode: normalise with the batch statistics (biased variance),
// update the running statistics in place (running = momentum·running + (1−momentum)·batch, ONNX's
// momentum convention; the variance update uses the unbiased batch variance, as PyTorch does),
// and backpropagate through the batch statistics:
//   dγ = Σ dy·x̂,  dβ = Σ dy,  dx = γ·invstd/M · (M·dy − dβ − x̂·dγ),  M = N·spatial.
// In inference mode (evaluation) it normalises with the running statistics.
//
// One task per channel: its rows (one per image) are read for the statistics and again, while
// they are still in L2, for the normalisation; backward likewise. With a fused ReLU
// (GradOp::fuses_relu) the normalisation writes max(y, 0) straight into the ReLU's output, and
// the backward masks the ReLU's output gradient on the fly.
#include <algorithm>
#include <cmath>

#include "engine/kernels/training_kernels.h"
#include "engine/train/autograd.h"

namespace xnn::train {
namespace {

struct BnGeom {
  int64_t n, c, inner;
  int64_t count() const { return n * inner; }
};

BnGeom bn_geometry(const Node& node, const Tensor& x) {
  if (x.rank() < 2 || x.dtype() != DType::kF32) {
    throw UnsupportedError("training: " + node.describe() + ": BatchNormalization needs f32 input of rank >= 2");
  }
  BnGeom g{x.dim(0), x.dim(1), 1};
  for (int d = 2; d < x.rank(); ++d) g.inner *= x.dim(d);
  return g;
}

void bn_forward(ForwardContext& c) {
  const Tensor& x = *c.inputs[0];
  const BnGeom g = bn_geometry(c.node, x);
  const float eps = c.node.attr_float("epsilon", 1e-5f);
  const float momentum = c.node.attr_float("momentum", 0.9f);
  const float* xp = x.data<float>();
  const float* gamma = c.inputs[1]->data<float>();
  const float* beta = c.inputs[2]->data<float>();
  float* running_mean = c.inputs[3]->data<float>();
  float* running_var = c.inputs[4]->data<float>();
  float* yp = c.outputs[0]->data<float>();
  float* mean = c.state.slot(0, DType::kF32, {g.c}).data<float>();
  float* invstd = c.state.slot(1, DType::kF32, {g.c}).data<float>();
  const bool training = c.training, relu = c.fused_relu;
  const kernels::Isa isa = kernels::best_isa();
  parallel_for(c.pool, g.c, [&](int64_t ch) {
    float mu, istd;
    if (training) {
      // One pass over the channel: sums of d = x − shift and of d², shift = the channel's first
      // value, so the variance Σd²/M − (Σd/M)² does not cancel catastrophically. Float sums per
      // row (vectorised), double across rows.
      const float shift = xp[ch * g.inner];
      double s1 = 0, s2 = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        float a1 = 0, a2 = 0;
        kernels::f32_shifted_sums(xp + (n * g.c + ch) * g.inner, g.inner, shift, &a1, &a2, isa);
        s1 += a1;
        s2 += a2;
      }
      const double cnt = static_cast<double>(g.count());
      const double m = shift + s1 / cnt;
      const double ss = std::max(0.0, s2 - s1 * s1 / cnt);  // Σ (x − mean)²
      const double var = ss / static_cast<double>(g.count());
      mu = static_cast<float>(m);
      istd = static_cast<float>(1.0 / std::sqrt(var + eps));
      const double unbiased = g.count() > 1 ? ss / static_cast<double>(g.count() - 1) : var;
      running_mean[ch] = static_cast<float>(momentum * running_mean[ch] + (1.0 - momentum) * m);
      running_var[ch] = static_cast<float>(momentum * running_var[ch] + (1.0 - momentum) * unbiased);
    } else {
      mu = running_mean[ch];
      istd = 1.0f / std::sqrt(running_var[ch] + eps);
    }
    mean[ch] = mu;
    invstd[ch] = istd;
    const float a = gamma[ch] * istd, b = beta[ch] - mu * a;
    for (int64_t n = 0; n < g.n; ++n)
      kernels::f32_scale_shift(xp + (n * g.c + ch) * g.inner, g.inner, a, b, relu, yp + (n * g.c + ch) * g.inner, isa);
  });
}

void bn_backward(BackwardContext& c) {
  const Tensor& x = c.input(0);
  const BnGeom g = bn_geometry(c.node, x);
  const float* xp = x.data<float>();
  const float* gamma = c.input(1).data<float>();
  const float* dy = c.grad_output(0).data<float>();
  const float* mean = c.state.saved.at(0).data<float>();
  const float* invstd = c.state.saved.at(1).data<float>();
  float* dx = c.wants(0) ? c.grad_input(0).data<float>() : nullptr;
  float* dgamma = c.wants(1) ? c.grad_input(1).data<float>() : nullptr;
  float* dbeta = c.wants(2) ? c.grad_input(2).data<float>() : nullptr;
  // With a fused ReLU, outputs[0] is the ReLU's output: dz = dy where it is > 0.
  const float* r = c.fused_relu ? c.output(0).data<float>() : nullptr;
  const double count = static_cast<double>(g.count());
  const kernels::Isa isa = kernels::best_isa();
  parallel_for(c.pool, g.c, [&](int64_t ch) {
    const float mu = mean[ch], istd = invstd[ch];
    double sdy = 0, sdyx = 0;
    for (int64_t n = 0; n < g.n; ++n) {
      const int64_t off = (n * g.c + ch) * g.inner;
      float sa = 0, sb = 0;
      kernels::f32_bn_grad_sums(xp + off, dy + off, r ? r + off : nullptr, g.inner, mu, &sa, &sb, isa);
      sdy += sa;
      sdyx += static_cast<double>(sb) * istd;
    }
    if (dgamma) dgamma[ch] = static_cast<float>(sdyx);
    if (dbeta) dbeta[ch] = static_cast<float>(sdy);
    if (!dx) return;
    const float k = gamma[ch] * istd;
    const float mdy = static_cast<float>(sdy / count), mdyx = static_cast<float>(sdyx / count);
    for (int64_t n = 0; n < g.n; ++n) {
      const int64_t off = (n * g.c + ch) * g.inner;
      kernels::f32_bn_grad_apply(xp + off, dy + off, r ? r + off : nullptr, g.inner, mu, k, mdy, istd * mdyx, dx + off,
                                 isa);
    }
  });
}

}  // namespace

void register_normalization_grads(GradRegistry& r) { r.add({"BatchNormalization", {0, 1, 2}, bn_forward, bn_backward, /*fuses_relu=*/true}); }

}  // namespace xnn::train
