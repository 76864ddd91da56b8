#include "harness/predict/op_features.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "engine/core/error.h"

namespace xnn::predict {
namespace {

enum Feature {
  kLogMacs, kLogBytes, kCin, kCout, kHin, kWin, kHout, kWout, kKernelH, kKernelW, kStride, kGroups,
  kDepthwise, kResidual, kIntensity, kLogOutElems, kLogWeightElems, kInputs, kActivation
};

double numel(const Shape& s) {
  double n = 1;
  for (int64_t d : s) n *= static_cast<double>(d);
  return n;
}

bool is_conv(const std::string& op) { return op == "Conv" || op == "FusedConv"; }
bool is_gemm(const std::string& op) { return op == "Gemm" || op == "FusedGemm" || op == "MatMul"; }

// Channels, height and width of an activation tensor: NCHW for rank 4, [N, C] for rank 2,
// [N, C, L] for rank 3; anything else counts as one channel of numel elements.
struct Chw {
  double c = 1, h = 1, w = 1;
};
Chw chw(const Shape& s) {
  switch (s.size()) {
    case 4: return {double(s[1]), double(s[2]), double(s[3])};
    case 3: return {double(s[1]), double(s[2]), 1};
    case 2: return {double(s[1]), double(s[0]), 1};
    default: return {numel(s), 1, 1};
  }
}

float log2p(double v) { return static_cast<float>(std::log2(1.0 + std::max(v, 0.0))); }

}  // namespace

const std::array<const char*, kOpFeatureCount>& op_feature_names() {
  static const std::array<const char*, kOpFeatureCount> names = {
      "log2_macs", "log2_bytes", "cin", "cout", "h_in", "w_in", "h_out", "w_out", "kernel_h",
      "kernel_w", "stride", "groups", "depthwise", "residual", "intensity", "log2_out_elems",
      "log2_weight_elems", "inputs", "activation"};
  return names;
}

std::string op_family(const std::string& op_type, const std::string& kernel) { return op_type + "|" + kernel; }

float activation_code(const std::string& activation) {
  static const char* const kOrder[] = {"", "Relu", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid", "Silu"};
  for (size_t i = 0; i < std::size(kOrder); ++i) {
    if (activation == kOrder[i]) return static_cast<float>(i);
  }
  return static_cast<float>(std::size(kOrder));
}

OpFeatures featurize_op(const std::string& name, const std::string& op_type, const std::string& kernel,
                        const OpShapes& shapes, const std::string& activation) {
  OpFeatures f;
  f.name = name;
  f.op_type = op_type;
  f.kernel = kernel;
  f.family = op_family(op_type, kernel);
  auto fail = [&](const std::string& what) {
    throw Error("op '" + name + "' (" + op_type + ", shapes " + shapes_text(shapes.inputs, shapes.outputs) + "): " + what);
  };
  if (shapes.outputs.empty()) fail("no output shape");
  const Shape empty;
  const Shape& x = shapes.inputs.empty() ? empty : shapes.inputs[0];
  const Shape& y = shapes.outputs[0];
  const Shape& w = shapes.inputs.size() > 1 ? shapes.inputs[1] : empty;

  double in_elems = 0, out_elems = 0, present_inputs = 0;
  for (const Shape& s : shapes.inputs) {
    if (s.empty()) continue;
    in_elems += numel(s);
    ++present_inputs;
  }
  for (const Shape& s : shapes.outputs) out_elems += numel(s);
  f.bytes = 4.0 * (in_elems + out_elems);

  const Chw in = chw(x), out = chw(y);
  double kh = 1, kw = 1, groups = 1, cin = in.c, cout = out.c, stride = 1;
  if (is_conv(op_type)) {
    if (x.size() != 4 || w.size() != 4 || y.size() != 4) fail("expected a 4-D input, weight and output");
    kh = double(w[2]);
    kw = double(w[3]);
    groups = w[1] > 0 ? std::max(1.0, cin / double(w[1])) : 1;
    f.macs = numel(y) * double(w[1]) * kh * kw;
  } else if (is_gemm(op_type)) {
    if (x.empty() || y.empty()) fail("expected non-scalar input and output");
    cin = double(x.back());  // K (row-major A, no transA: what the importers produce)
    cout = double(y.back());
    f.macs = numel(y) * cin;
  }
  if (out.h > 0 && in.h > out.h) stride = std::round(in.h / out.h);

  f.work = std::max(1.0, f.macs > 0 ? f.macs : (in_elems + out_elems));
  FeatureRow& r = f.x;
  r[kLogMacs] = log2p(f.macs);
  r[kLogBytes] = log2p(f.bytes);
  r[kCin] = static_cast<float>(cin);
  r[kCout] = static_cast<float>(cout);
  r[kHin] = static_cast<float>(in.h);
  r[kWin] = static_cast<float>(in.w);
  r[kHout] = static_cast<float>(out.h);
  r[kWout] = static_cast<float>(out.w);
  r[kKernelH] = static_cast<float>(kh);
  r[kKernelW] = static_cast<float>(kw);
  r[kStride] = static_cast<float>(stride);
  r[kGroups] = static_cast<float>(groups);
  r[kDepthwise] = groups > 1 && groups == cin ? 1.0f : 0.0f;
  // FusedConv(X, W, B?, Z?): a fourth, present input is the fused residual.
  r[kResidual] = is_conv(op_type) && shapes.inputs.size() > 3 && !shapes.inputs[3].empty() ? 1.0f : 0.0f;
  r[kIntensity] = static_cast<float>(f.macs / std::max(f.bytes, 1.0));
  r[kLogOutElems] = log2p(out_elems);
  r[kLogWeightElems] = log2p(w.empty() ? 0 : numel(w));
  r[kInputs] = static_cast<float>(present_inputs);
  r[kActivation] = activation_code(activation);
  return f;
}

}  // namespace xnn::predict
