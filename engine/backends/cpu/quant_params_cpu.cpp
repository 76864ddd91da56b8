#include "engine/backends/cpu/quant_params_cpu.h"

#include <cmath>

#include "engine/ops/quant_common.h"

namespace xnn {

std::optional<float> constant_scale(const TensorInfo& t) {
  if (!t.value || t.dtype != DType::kF32 || t.value->numel() != 1) return std::nullopt;
  return t.value->data<float>()[0];
}

std::optional<std::vector<float>> constant_scales(const TensorInfo& t, int64_t count) {
  if (!t.value || t.dtype != DType::kF32 || t.shape.size() > 1) return std::nullopt;
  const int64_t n = t.value->numel();
  if (n != 1 && n != count) return std::nullopt;
  const float* p = t.value->data<float>();
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = p[n == 1 ? 0 : i];
  return v;
}

std::optional<uint8_t> constant_u8_zero_point(const TensorInfo& t) {
  if (!t.value || t.dtype != DType::kU8 || t.value->numel() != 1) return std::nullopt;
  return t.value->data<uint8_t>()[0];
}

bool zero_i8_zero_point(const TensorInfo& t) {
  if (t.dtype == DType::kUnknown) return true;
  if (!t.value || t.dtype != DType::kI8) return false;
  const int8_t* p = t.value->data<int8_t>();
  for (int64_t i = 0; i < t.value->numel(); ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

std::optional<std::vector<int32_t>> constant_bias(const TensorInfo& t, int64_t count) {
  if (t.dtype == DType::kUnknown) return std::vector<int32_t>{};
  if (!t.value || t.dtype != DType::kI32 || t.value->numel() != count) return std::nullopt;
  const int32_t* p = t.value->data<int32_t>();
  return std::vector<int32_t>(p, p + count);
}

std::optional<std::vector<float>> requant_multipliers(float in_scale, const std::vector<float>& w_scales,
                                                      float out_scale) {
  std::vector<float> m(w_scales.size());
  for (size_t c = 0; c < w_scales.size(); ++c) {
    m[c] = requant_multiplier(in_scale, w_scales[c], out_scale);
    if (!std::isfinite(m[c]) || m[c] <= 0.0f) return std::nullopt;
  }
  return m;
}

}  // namespace xnn
