// BatchNormalization in training mode: normalise with the batch statistics (biased variance),
// update the running statistics in place (running = momentum·running + (1−momentum)·batch, ONNX's
// momentum convention; the variance update uses the unbiased batch variance, as PyTorch does),
// and backpropagate through the batch statistics:
//   dγ = Σ dy·x̂,  dβ = Σ dy,  dx = γ·invstd/M · (M·dy − dβ − x̂·dγ),  M = N·spatial.
// In inference mode (evaluation) it normalises with the running statistics.
//
// One task per channel: its rows (one per image) are read for the statistics and again, while
// they are still in L2, for the normalisation; backward likewise. With a fused ReLU
// (GradOp::fuses_activation) the normalisation writes max(y, 0) straight into the ReLU's output, and
// the backward masks the ReLU's output gradient on the fly. Other elementwise activations (Clip,
// LeakyRelu, HardSwish, HardSigmoid: kernels::training_fusable) fuse the same way: the backward
// recomputes the normalised value z = x·a + b (the forward's own arithmetic) and takes the
// activation's derivative there. With the 2×2 max pool after the activation fused as well
// (GradOp::fuses_activation_maxpool), each plane is normalised into an L1-sized buffer and pooled
// from there (the pool's output and winning taps are all that is written), and the backward
// rebuilds the plane's gradient from the pooled one in an L2 buffer per channel: the full-size
// activation output and its gradient never exist. Every value equals the unfused chain's (for
// ReLU to the bit; the others up to the standalone kernels' own rounding).
#include <algorithm>
#include <cmath>

#include "engine/kernels/scratch.h"
#include "engine/kernels/training_kernels.h"
#include "engine/train/autograd.h"

namespace xnn::train {
namespace {

struct BnGeom {
  int64_t n, c, inner;
  int64_t count() const { return n * inner; }
};

// The fused 2×2 pool's geometry (oh < 0: none): input planes h × w, output oh × ow.
struct FusedPool {
  int64_t h = 0, w = 0, oh = -1, ow = -1;
};

FusedPool fused_pool(bool fused, const Tensor& x, const Tensor& pooled, const Node& node) {
  if (!fused) return {};
  if (x.rank() != 4 || pooled.rank() != 4 || pooled.dim(2) != x.dim(2) / 2 || pooled.dim(3) != x.dim(3) / 2) {
    throw UnsupportedError("training: " + node.describe() + ": the fused 2×2 max pool needs N×C×H×W input, got " +
                           shape_str(x.shape()) + " → " + shape_str(pooled.shape()));
  }
  return {x.dim(2), x.dim(3), pooled.dim(2), pooled.dim(3)};
}

// A channel's rows (one per image, a few KB each) lie a whole image apart, too short for the
// hardware prefetcher to ramp up on before each ends: the passes that read them from memory ask
// for the next image's row while summing this one.
void prefetch_row(const float* row, int64_t n) {
  const char* p = reinterpret_cast<const char*>(row);
  for (int64_t b = 0; b < n * static_cast<int64_t>(sizeof(float)); b += 64) __builtin_prefetch(p + b, 0, 3);
}

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
  const bool training = c.training;
  const kernels::Activation act = c.fused_act ? *c.fused_act : kernels::Activation{};
  const kernels::Isa isa = kernels::best_isa();
  const FusedPool pool = fused_pool(c.fused_maxpool, x, *c.outputs[0], c.node);
  uint8_t* taps = pool.oh < 0 ? nullptr : c.state.slot(2, DType::kU8, c.outputs[0]->shape()).data<uint8_t>();
  parallel_for(c.pool, g.c, [&](int64_t ch) {
    float mu, istd;
    if (training) {
      // One pass over the channel: sums of d = x − shift and of d², shift = the channel's first
      // value, so the variance Σd²/M − (Σd/M)² does not cancel catastrophically. Float sums per
      // row (vectorised), double across rows.
      double m, var, ss;
      if (c.input_stats) {
        // Per-plane shifted sums from the producer, combined image by image (Chan et al.'s
        // parallel variance: each plane's own mean and squared deviations, merged exactly).
        const double plane = static_cast<double>(g.inner);
        double count = 0, acc_mean = 0, acc_m2 = 0;
        for (int64_t n = 0; n < g.n; ++n) {
          const float* st = c.input_stats + (n * g.c + ch) * 3;
          const double pm = st[2] + st[0] / plane, pm2 = std::max(0.0, st[1] - static_cast<double>(st[0]) * st[0] / plane);
          const double total = count + plane, delta = pm - acc_mean;
          acc_mean += delta * plane / total;
          acc_m2 += pm2 + delta * delta * count * plane / total;
          count = total;
        }
        m = acc_mean;
        ss = acc_m2;
      } else {
        const float shift = xp[ch * g.inner];
        double s1 = 0, s2 = 0;
        for (int64_t n = 0; n < g.n; ++n) {
          if (n + 1 < g.n) prefetch_row(xp + ((n + 1) * g.c + ch) * g.inner, g.inner);
          float a1 = 0, a2 = 0;
          kernels::f32_shifted_sums(xp + (n * g.c + ch) * g.inner, g.inner, shift, &a1, &a2, isa);
          s1 += a1;
          s2 += a2;
        }
        const double cnt = static_cast<double>(g.count());
        m = shift + s1 / cnt;
        ss = std::max(0.0, s2 - s1 * s1 / cnt);  // Σ (x − mean)²
      }
      var = ss / static_cast<double>(g.count());
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
    // With the statistics handed over, this is the first read of the channel's rows.
    const bool cold = c.input_stats != nullptr;
    if (pool.oh < 0) {
      for (int64_t n = 0; n < g.n; ++n) {
        if (cold && n + 1 < g.n) prefetch_row(xp + ((n + 1) * g.c + ch) * g.inner, g.inner);
        kernels::f32_scale_shift(xp + (n * g.c + ch) * g.inner, g.inner, a, b, act, yp + (n * g.c + ch) * g.inner, isa);
      }
      return;
    }
    float* plane = kernels::thread_scratch_f32(static_cast<size_t>(g.inner), 2);
    for (int64_t n = 0; n < g.n; ++n) {
      if (cold && n + 1 < g.n) prefetch_row(xp + ((n + 1) * g.c + ch) * g.inner, g.inner);
      kernels::f32_scale_shift(xp + (n * g.c + ch) * g.inner, g.inner, a, b, act, plane, isa);
      const int64_t o = (n * g.c + ch) * pool.oh * pool.ow;
      for (int64_t oy = 0; oy < pool.oh; ++oy) {
        const float* r0 = plane + 2 * oy * pool.w;
        kernels::f32_maxpool2x2_argmax_row(r0, r0 + pool.w, pool.ow, yp + o + oy * pool.ow, taps + o + oy * pool.ow, isa);
      }
    }
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
  // With a fused activation, dy is the activation output's gradient: the kernels take it through
  // the activation's derivative at z = x·a + b. With the pool fused too, outputs[0] and dy are
  // the pool's: dy is first routed back to each window's winning tap per channel (`dz` below).
  const FusedPool pool = fused_pool(c.fused_maxpool, x, c.output(0), c.node);
  const kernels::Activation act = c.fused_act ? *c.fused_act : kernels::Activation{};
  const float* beta = c.input(2).data<float>();
  const bool pooled = pool.oh >= 0;
  const uint8_t* taps = pool.oh < 0 ? nullptr : c.state.saved.at(2).data<uint8_t>();
  const double count = static_cast<double>(g.count());
  const kernels::Isa isa = kernels::best_isa();
  // dx larger than the last-level cache share of a few cores: streaming stores (measured: they
  // pay on the 12.8 MB input layer of the small CNN, and cost 3x on its 1.6 MB last layer,
  // whose dx the convolution reads straight back from the cache).
  const bool stream = x.nbytes() >= (size_t{8} << 20);
  parallel_for(c.pool, g.c, [&](int64_t ch) {
    const float mu = mean[ch], istd = invstd[ch];
    const float a = gamma[ch] * istd, b = beta[ch] - mu * a;  // the forward's z = x·a + b
    // Fused pool: this channel's activation-output gradient for every image, [N][inner]
    // (L2-sized): the pooled gradient at each window's winning tap, 0 elsewhere.
    float* dz = nullptr;
    if (pooled) {
      const int64_t pp = pool.oh * pool.ow;
      dz = kernels::thread_scratch_f32(static_cast<size_t>(g.n * g.inner), 2);
      for (int64_t n = 0; n < g.n; ++n) {
        const int64_t o = (n * g.c + ch) * pp;
        float* plane = dz + n * g.inner;
        for (int64_t oy = 0; oy < pool.oh; ++oy) {
          float* d0 = plane + 2 * oy * pool.w;
          kernels::f32_maxpool2x2_grad_row(dy + o + oy * pool.ow, taps + o + oy * pool.ow, pool.ow, d0, d0 + pool.w, isa);
          if (pool.w > 2 * pool.ow) d0[pool.w - 1] = d0[2 * pool.w - 1] = 0.0f;  // odd width: the last column
        }
        if (pool.h > 2 * pool.oh) std::fill(plane + (pool.h - 1) * pool.w, plane + g.inner, 0.0f);  // odd height
      }
    }
    auto dz_of = [&](int64_t n, int64_t off) { return dz ? dz + n * g.inner : dy + off; };
    double sdy = 0, sdyx = 0;
    for (int64_t n = 0; n < g.n; ++n) {
      const int64_t off = (n * g.c + ch) * g.inner;
      if (n + 1 < g.n) {
        prefetch_row(xp + off + g.c * g.inner, g.inner);
        if (!dz) prefetch_row(dy + off + g.c * g.inner, g.inner);
      }
      float sa = 0, sb = 0;
      kernels::f32_bn_grad_sums(xp + off, dz_of(n, off), g.inner, mu, a, b, act, &sa, &sb, isa);
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
      kernels::f32_bn_grad_apply(xp + off, dz_of(n, off), g.inner, mu, a, b, act, k, mdy, istd * mdyx, dx + off, stream,
                                 isa);
    }
  });
}

}  // namespace

void register_normalization_grads(GradRegistry& r) {
  GradOp bn{"BatchNormalization", {0, 1, 2}, bn_forward, bn_backward};
  bn.takes_input_stats = true;
  bn.fuses_activation = true;
  bn.fuses_activation_maxpool = true;
  r.add(std::move(bn));
}

}  // namespace xnn::train
