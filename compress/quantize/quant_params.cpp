#include "compress/quantize/quant_params.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/error.h"

namespace xnn::quantize {

ActivationParams uint8_params(Range r) {
  const double lo = std::min(0.0f, r.lo), hi = std::max(0.0f, r.hi);
  ActivationParams p;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return p;
  p.scale = static_cast<float>((hi - lo) / 255.0);
  if (!(p.scale > 0)) {  // a range too narrow for float: keep a usable step
    p.scale = std::numeric_limits<float>::min();
  }
  p.zero_point = static_cast<int32_t>(std::clamp(std::nearbyint(-lo / p.scale), 0.0, 255.0));
  return p;
}

uint8_t quantize_uint8(float x, const ActivationParams& p) {
  const double q = static_cast<double>(std::nearbyint(x / p.scale)) + p.zero_point;
  return static_cast<uint8_t>(std::clamp(q, 0.0, 255.0));
}

float dequantize_uint8(uint8_t q, const ActivationParams& p) {
  return static_cast<float>(static_cast<int32_t>(q) - p.zero_point) * p.scale;
}

namespace {

// outer × channels × inner view around `axis` (channels = 1 and inner = numel per tensor).
struct Split {
  int64_t outer = 1, channels = 1, inner = 1;
};

Split split_at(const Tensor& w, int axis) {
  Split s;
  if (axis < 0) {
    s.inner = w.numel();
    return s;
  }
  if (axis >= w.rank()) {
    throw Error("weight quantisation: axis " + std::to_string(axis) + " out of range for shape " + shape_str(w.shape()));
  }
  for (int d = 0; d < axis; ++d) s.outer *= w.dim(d);
  s.channels = w.dim(axis);
  for (int d = axis + 1; d < w.rank(); ++d) s.inner *= w.dim(d);
  return s;
}

}  // namespace

QuantizedWeights quantize_weights_symmetric(const Tensor& w, int axis, int qmax) {
  if (qmax < 1 || qmax > kWeightQmax) throw Error("weight quantisation: qmax " + std::to_string(qmax) + " outside 1..127");
  if (w.dtype() != DType::kF32) {
    throw Error("weight quantisation: expected a float32 tensor, got " + std::string(dtype_name(w.dtype())));
  }
  const Split s = split_at(w, axis);
  const float* pw = w.data<float>();
  std::vector<float> max_abs(static_cast<size_t>(s.channels), 0.0f);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.channels; ++c) {
      const float* p = pw + (o * s.channels + c) * s.inner;
      float& m = max_abs[static_cast<size_t>(c)];
      for (int64_t i = 0; i < s.inner; ++i) m = std::max(m, std::fabs(p[i]));
    }
  }
  QuantizedWeights q;
  q.axis = axis;
  q.values = Tensor(DType::kI8, w.shape());
  const float top = static_cast<float>(qmax);
  for (float m : max_abs) q.scales.push_back(m > 0 && std::isfinite(m) ? m / top : 1.0f);
  int8_t* pq = q.values.data<int8_t>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.channels; ++c) {
      const float scale = q.scales[static_cast<size_t>(c)];
      const int64_t base = (o * s.channels + c) * s.inner;
      for (int64_t i = base; i < base + s.inner; ++i) {
        pq[i] = static_cast<int8_t>(std::clamp(std::nearbyint(pw[i] / scale), -top, top));
      }
    }
  }
  return q;
}

Tensor dequantize_weights(const QuantizedWeights& q) {
  const Split s = split_at(q.values, q.axis);
  Tensor out(DType::kF32, q.values.shape());
  const int8_t* pq = q.values.data<int8_t>();
  float* po = out.data<float>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.channels; ++c) {
      const float scale = q.scales[static_cast<size_t>(q.scales.size() == 1 ? 0 : c)];
      const int64_t base = (o * s.channels + c) * s.inner;
      for (int64_t i = base; i < base + s.inner; ++i) po[i] = static_cast<float>(pq[i]) * scale;
    }
  }
  return out;
}

Tensor quantize_bias(const Tensor& b, float input_scale, const std::vector<float>& weight_scales) {
  if (b.dtype() != DType::kF32) throw Error("bias quantisation: expected a float32 bias, got " + std::string(dtype_name(b.dtype())));
  const int64_t n = b.numel();
  if (weight_scales.size() != 1 && static_cast<int64_t>(weight_scales.size()) != n) {
    throw Error("bias quantisation: " + std::to_string(n) + " biases but " + std::to_string(weight_scales.size()) +
                " weight scales");
  }
  Tensor out(DType::kI32, b.shape());
  const float* pb = b.data<float>();
  int32_t* po = out.data<int32_t>();
  constexpr double lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  for (int64_t i = 0; i < n; ++i) {
    const double scale = static_cast<double>(input_scale) * weight_scales[static_cast<size_t>(weight_scales.size() == 1 ? 0 : i)];
    po[i] = static_cast<int32_t>(std::clamp(std::nearbyint(static_cast<double>(pb[i]) / scale), lo, hi));
  }
  return out;
}

}  // namespace xnn::quantize
