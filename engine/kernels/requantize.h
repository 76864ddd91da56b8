// Requantisation of int8 kernels: an int32 accumulator back to a uint8 activation. The one
// definition every int8 kernel (reference, scalar and AVX2) follows, operation for operation, so
// that all of them agree to the bit.
//
// Quantisation scheme (the int8 kernels' contract):
//   activations   uint8, asymmetric per tensor:  real = scale · (q − zero_point)
//   weights       int8, symmetric per output channel (zero point 0): real = w_scale[c] · w
//   bias          int32 in units of input_scale · w_scale[c]
//   accumulator   int32: acc = bias[c] + Σ w·(x − x_zero_point)
//   output        uint8 = requantize(acc, multiplier[c], ...), multiplier[c] =
//                 input_scale · w_scale[c] / output_scale
//
// requantize ("fp32 requantisation", as XNNPACK's): the accumulator converted to float (round to
// nearest even), multiplied by the multiplier (one correctly rounded float multiply), clamped to
// [qmin − zp, qmax − zp] (whole numbers, exact in float), rounded to the nearest integer, ties to
// even (lrintf / cvtps2dq in the default rounding mode), plus the output zero point. Clamping
// before rounding gives the same integer as rounding first (the bounds are integers and
// rounding is monotone) and keeps every float in int32 range, where lrintf and cvtps2dq agree.
// ReLU and ReLU6 fuse as the clamp (quantized_activation_bounds).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/kernels/activation.h"

namespace xnn::kernels {

struct QRequant {
  const float* multiplier = nullptr;  // one per output channel, finite and > 0
  int32_t zero_point = 0;             // output zero point, 0..255
  uint8_t qmin = 0, qmax = 255;       // output clamp (fused activation), qmin <= qmax
};

// The float clamp bounds requantize uses, qmin − zp and qmax − zp.
inline float requant_lower(const QRequant& rq) { return static_cast<float>(int32_t{rq.qmin} - rq.zero_point); }
inline float requant_upper(const QRequant& rq) { return static_cast<float>(int32_t{rq.qmax} - rq.zero_point); }

// The definition (lower/upper from requant_lower/requant_upper).
inline uint8_t requantize(int32_t acc, float multiplier, float lower, float upper, int32_t zero_point) {
  float v = static_cast<float>(acc) * multiplier;
  v = std::min(std::max(v, lower), upper);
  return static_cast<uint8_t>(static_cast<int32_t>(std::lrintf(v)) + zero_point);
}

// Throws xnn::Error (naming `what`) unless zero_point is in 0..255, qmin <= qmax and the
// `channels` multipliers are finite and positive.
void check_requant(const QRequant& rq, int64_t channels, const char* what);

struct QuantizedBounds {
  uint8_t qmin = 0, qmax = 255;
};
// The clamp that applies `act` on a uint8 output of this scale and zero point: None -> [0, 255],
// Relu -> [zp, 255], Clip(lo, hi) (ReLU6 = Clip(0, 6)) -> [zp + round(lo / scale),
// zp + round(hi / scale)] within [0, 255]. Other activations cannot fuse into a clamp: Error.
QuantizedBounds quantized_activation_bounds(const Activation& act, float output_scale, int32_t output_zero_point);

}  // namespace xnn::kernels
