// Pieces shared by the ONNX quantisation ops (quantization.cpp, quantized_matmul.cpp,
// quantized_conv.cpp): reading scales and zero points that are either one value for the whole
// tensor or one per slice along an axis, and the exact rounding the ONNX reference uses.
//
// Semantics follow the ONNX operator definitions and their reference implementation:
//   quantise:   q = saturate(round_half_even(x / scale) + zero_point)
//   dequantise: x = (q - zero_point) * scale
//   integer products accumulate (a - a_zp)·(b - b_zp) exactly in int32, and the QLinear ops then
//   requantise: y = saturate(round_half_even(acc · (a_scale·b_scale / y_scale)) + y_zp), with
//   the multiplier and the product both in float (requantize_to below).
//
// Why the product is in float: the int8 CPU kernels (engine/kernels/requantize.h) requantise
// with float(acc) · float multiplier, one correctly rounded float multiply, because that is what
// 8 lanes of vcvtdq2ps + vmulps compute. The references use the same operations so that every
// optimised kernel can be compared with them bit-exactly. The ONNX numpy reference multiplies in
// double instead; the two agree except where the double product lies within float rounding of a
// half-way point (or float(acc) itself rounds, |acc| > 2^24), and there differ by at most 1 LSB.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/kernels/requantize.h"
#include "engine/ops/op_helpers.h"

namespace xnn {

// Calls f.template operator()<T>() for the 8-bit integer types ONNX quantises to.
template <typename Ctx, typename F>
void dispatch_int8(const Ctx& ctx, DType t, const char* what, F&& f) {
  if (t == DType::kU8) return f.template operator()<uint8_t>();
  if (t == DType::kI8) return f.template operator()<int8_t>();
  ctx.fail(std::string(what) + " has dtype " + std::string(dtype_name(t)) + ", expected uint8 or int8");
}

// Saturating conversion of an already rounded value.
template <typename Q>
Q saturate(double v) {
  constexpr double lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  return static_cast<Q>(v < lo ? lo : (v > hi ? hi : v));
}

// Round half to even (the default floating-point rounding mode; std::nearbyint honours it).
inline double round_half_even(double v) { return std::nearbyint(v); }
inline float round_half_even(float v) { return std::nearbyint(v); }

// The requantisation multiplier of one output channel, in_scale·w_scale / out_scale, formed in
// float left to right (the references and the CPU kernels share this, so their multipliers are
// the same float).
inline float requant_multiplier(float in_scale, float w_scale, float out_scale) { return in_scale * w_scale / out_scale; }

// The 8-bit result of an int32 accumulator: kernels::requantize with Q's whole range as the
// clamp (clamping before rounding gives what rounding then saturating gives: the bounds are
// integers and rounding is monotone). uint8 goes through kernels::requantize itself; int8 does
// the same operations with [-128, 127].
template <typename Q>
Q requantize_to(int32_t acc, float multiplier, int32_t zero_point) {
  constexpr int32_t qmin = std::numeric_limits<Q>::min(), qmax = std::numeric_limits<Q>::max();
  const float lower = static_cast<float>(qmin - zero_point), upper = static_cast<float>(qmax - zero_point);
  if constexpr (std::is_same_v<Q, uint8_t>) {
    return kernels::requantize(acc, multiplier, lower, upper, zero_point);
  } else {
    const float v = std::min(std::max(static_cast<float>(acc) * multiplier, lower), upper);
    return static_cast<Q>(static_cast<int32_t>(std::lrintf(v)) + zero_point);
  }
}

// A scale or zero point given per tensor (a scalar or a 1-element tensor) or per slice along
// one axis (a 1-D tensor of that axis' size). `count` is the axis size when per-axis applies.
template <typename Ctx>
void check_quant_param(const Ctx& ctx, const Shape& param, int64_t count, const std::string& what) {
  const int64_t n = shape_numel(param);
  if (param.size() <= 1 && (n == 1 || n == count)) return;
  ctx.fail(what + " has shape " + shape_str(param) + ", expected a scalar or a 1-D tensor of " + std::to_string(count));
}

// The values of a float scale tensor, one per slice (a scalar repeated `count` times).
inline std::vector<double> per_slice_floats(const Tensor& t, int64_t count) {
  std::vector<double> v(static_cast<size_t>(count));
  const float* p = t.data<float>();
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = p[t.numel() == 1 ? 0 : i];
  return v;
}

// The values of an integer zero-point tensor as int32, one per slice; absent means 0.
inline std::vector<int32_t> per_slice_ints(const Tensor* t, int64_t count) {
  std::vector<int32_t> v(static_cast<size_t>(count), 0);
  if (!t) return v;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t j = t->numel() == 1 ? 0 : i;
    switch (t->dtype()) {
      case DType::kU8: v[static_cast<size_t>(i)] = t->data<uint8_t>()[j]; break;
      case DType::kI8: v[static_cast<size_t>(i)] = t->data<int8_t>()[j]; break;
      case DType::kI32: v[static_cast<size_t>(i)] = t->data<int32_t>()[j]; break;
      default: throw Error("zero point of dtype " + std::string(dtype_name(t->dtype())) + " (expected int8, uint8 or int32)");
    }
  }
  return v;
}

}  // namespace xnn
