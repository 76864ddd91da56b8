#include "nas/darts/supernet.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace xnn::nas {

MixedOp add_mixed_op(arch::GraphBuilder& b, const arch::SearchSpace& space, const BlockPosition& position, int x) {
  const std::string name = position.name();
  const int64_t n = static_cast<int64_t>(position.op_count());
  MixedOp m;
  m.alpha = name + ".alpha";
  m.noise = name + ".alpha_noise";
  m.scale = name + ".alpha_scale";
  const int alpha = b.filled(m.alpha, {n}, 0.0f);
  const int noise = b.filled(m.noise, {n}, 0.0f);
  const int scale = b.filled(m.scale, {n}, 1.0f);
  int z = b.node("Add", name + ".alpha_perturbed", {alpha, noise});
  z = b.node("Mul", name + ".alpha_scaled", {z, scale});
  const int w = b.node("Softmax", name + ".alpha_softmax", {z}, {{"axis", int64_t{0}}});
  m.weights = b.g().value(w).name;
  int sum = -1;
  for (int64_t i = 0; i < n; ++i) {
    const std::string op = name + ".op" + std::to_string(i);
    const int y = position.is_skip(static_cast<size_t>(i))
                      ? x
                      : b.block(op, x, position.in_channels, position.out_channels, position.stride,
                                position.candidates[static_cast<size_t>(i)], space.channel_divisor);
    m.branches.push_back(y);
    const int index = b.g().add_constant(op + ".index", Tensor::scalar<int64_t>(i));
    const int wi = b.node("Gather", op + ".weight", {w, index}, {{"axis", int64_t{0}}});
    const int t = b.node("Mul", op + ".weighted", {y, wi});
    sum = sum < 0 ? t : b.node("Add", op + ".sum", {sum, t});
  }
  m.output = sum;
  return m;
}

Supernet build_supernet(const arch::SearchSpace& space, const std::vector<BlockPosition>& positions, int64_t resolution,
                        double width, uint64_t seed) {
  arch::GraphBuilder b(seed);
  Graph& g = b.g();
  g.name = "darts_supernet";
  int x = b.input(0, space.in_channels, resolution);
  int64_t c = arch::stem_channels(space, width);
  x = b.conv_bn_act("stem", x, space.in_channels, c, 3, space.stem_stride, 1, space.stem_activation);
  Supernet net;
  net.positions = positions;
  for (const BlockPosition& p : positions) {
    if (p.in_channels != c) throw Error("build_supernet: positions do not match the space at this width");
    MixedOp m = add_mixed_op(b, space, p, x);
    x = m.output;
    c = p.out_channels;
    net.ops.push_back(std::move(m));
  }
  x = b.classifier(space, x, c, width);
  g.value(x).name = "logits";
  g.value(x).has_shape = true;
  g.value(x).shape = {Dim::named("batch"), Dim::fixed(space.classes)};
  g.outputs.push_back(x);
  g.validate("build_supernet");
  net.model = b.model();
  net.model->opset = 14;  // HardSwish
  net.model->metadata.producer = "xnn-lab nas darts supernet";
  return net;
}

std::vector<double> mixing_weights(const float* alpha, const float* noise, const float* scale, size_t n) {
  std::vector<double> z(n);
  for (size_t i = 0; i < n; ++i) z[i] = (static_cast<double>(alpha[i]) + noise[i]) * scale[i];
  const double mx = *std::max_element(z.begin(), z.end());
  double total = 0;
  for (double& v : z) total += (v = std::exp(v - mx));
  for (double& v : z) v /= total;
  return z;
}

double expected_latency(const float* alpha, const float* noise, const float* scale,
                        const std::vector<double>& latency_ms, double lambda, float* grad) {
  const size_t n = latency_ms.size();
  const std::vector<double> p = mixing_weights(alpha, noise, scale, n);
  double e = 0;
  for (size_t i = 0; i < n; ++i) e += p[i] * latency_ms[i];
  if (grad) {
    for (size_t i = 0; i < n; ++i) grad[i] += static_cast<float>(lambda * scale[i] * p[i] * (latency_ms[i] - e));
  }
  return e;
}

}  // namespace xnn::nas
