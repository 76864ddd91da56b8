// Fake quantisation (domain ai.xnn), the op quantisation-aware training inserts
// (compress/quantize/qat.h): a float tensor rounded onto the grid an int8 model will use and
// returned as float, so training sees the quantisation error the int8 model will have.
//
//   FakeQuantize(x, scale, zero_point)   activations: uint8 per tensor, exactly
//       y = (saturate_uint8(round_half_even(x / scale) + zero_point) - zero_point) · scale
//       = DequantizeLinear(QuantizeLinear(x, scale, zero_point), scale, zero_point)
//   FakeQuantize(w)  attrs axis (-1: per tensor), qmax (default 127; 64 for reduced-range weights)
//       weights: int8 symmetric, the scale taken from the data as compress/quantize does
//       (max|w| / qmax per slice along axis, 1 for an all-zero slice):
//       y = clamp(round_half_even(w / scale), -qmax, qmax) · scale
// Weight scales follow the data because the weights change during training and the int8
// rewrite computes its scales from the trained weights. The gradient (straight-through
// estimator) is in engine/train/grad_quantize.cpp.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/ops/nn_common.h"
#include "engine/ops/op_helpers.h"
#include "engine/ops/quant_common.h"

namespace xnn {
namespace {

// Slices along a weight axis (-1: the whole tensor is one slice).
struct WeightSplit {
  int64_t outer = 1, channels = 1, inner = 1;
};

WeightSplit weight_split(const Shape& shape, int64_t axis) {
  WeightSplit s;
  if (axis < 0) {
    s.inner = shape_numel(shape);
    return s;
  }
  s.channels = shape[static_cast<size_t>(axis)];
  for (int64_t d = 0; d < axis; ++d) s.outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) s.inner *= shape[d];
  return s;
}

std::vector<float> fake_quantize_weight_scales(const Tensor& w, int64_t axis, float qmax) {
  const WeightSplit s = weight_split(w.shape(), axis);
  const float* pw = w.data<float>();
  std::vector<float> max_abs(static_cast<size_t>(s.channels), 0.0f);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.channels; ++c) {
      const float* p = pw + (o * s.channels + c) * s.inner;
      float& m = max_abs[static_cast<size_t>(c)];
      for (int64_t i = 0; i < s.inner; ++i) m = std::max(m, std::fabs(p[i]));
    }
  }
  std::vector<float> scales;
  for (float m : max_abs) scales.push_back(m > 0 && std::isfinite(m) ? m / qmax : 1.0f);
  return scales;
}

void infer_fake_quantize(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  if (x.dtype != DType::kF32) ctx.fail("input x has dtype " + std::string(dtype_name(x.dtype)) + ", expected float32");
  if (ctx.num_inputs() > 1) {
    if (!ctx.has_input(2)) ctx.fail("activation fake quantisation needs both scale and zero_point");
    if (ctx.input(1).dtype != DType::kF32 || shape_numel(ctx.input(1).shape) != 1) ctx.fail("scale must be one float32 value");
    if (ctx.input(2).dtype != DType::kU8 || shape_numel(ctx.input(2).shape) != 1) ctx.fail("zero_point must be one uint8 value");
  } else {
    const int64_t axis = ctx.node().attr_int("axis", -1);
    if (axis < -1 || axis >= static_cast<int64_t>(x.shape.size())) {
      ctx.fail("axis " + std::to_string(axis) + " must be -1 (per tensor) or an axis of input " + shape_str(x.shape));
    }
    const int64_t qmax = ctx.node().attr_int("qmax", 127);
    if (qmax < 1 || qmax > 127) ctx.fail("qmax " + std::to_string(qmax) + " must be in 1..127");
  }
  ctx.set_output(0, DType::kF32, x.shape);
}

void run_fake_quantize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const float* px = x.data<float>();
  float* py = ctx.output(0).data<float>();
  const int64_t n = x.numel();
  if (ctx.num_inputs() > 1) {
    const float scale = ctx.input(1).data<float>()[0];
    const int32_t zp = ctx.input(2).data<uint8_t>()[0];
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t q = saturate<uint8_t>(static_cast<double>(round_half_even(px[i] / scale)) + zp);
      py[i] = static_cast<float>(static_cast<int32_t>(q) - zp) * scale;
    }
    return;
  }
  const float qmax = static_cast<float>(ctx.node().attr_int("qmax", 127));
  const std::vector<float> scales = fake_quantize_weight_scales(x, ctx.node().attr_int("axis", -1), qmax);
  const WeightSplit s = weight_split(x.shape(), ctx.node().attr_int("axis", -1));
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.channels; ++c) {
      const float scale = scales[static_cast<size_t>(c)];
      const int64_t base = (o * s.channels + c) * s.inner;
      for (int64_t i = base; i < base + s.inner; ++i) py[i] = std::clamp(round_half_even(px[i] / scale), -qmax, qmax) * scale;
    }
  }
}

}  // namespace

void register_fake_quantize_ops(OpRegistry& r) {
  OpSchema s = make_schema("FakeQuantize", 1, 3, infer_fake_quantize, run_fake_quantize, {},
                           "Quantise and dequantise in one float op (QAT): uint8 with (scale, zero_point), or int8 "
                           "symmetric weights in [-qmax, qmax] with the scale from the data per `axis`");
  s.domain = "ai.xnn";
  r.add(std::move(s));
}

}  // namespace xnn
