// The quantisation arithmetic of the post-training quantiser (compress/quantize), matching the
// int8 kernels' contract (engine/kernels/requantize.h):
//   activations  uint8, asymmetric, per tensor: real = scale · (q - zero_point), q in [0, 255];
//   weights      int8, symmetric (zero point 0), per output channel or per tensor, q in [-127, 127]
//                (-128 is never used: the range stays symmetric, and a product of two -128s
//                cannot saturate the kernels' 16-bit pair sums); with the reduced range
//                (QuantizeOptions::reduce_range) q in [-64, 64];
//   bias         int32 in units of input_scale · weight_scale[c].
// Rounding is half to even everywhere (std::nearbyint), as QuantizeLinear rounds.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/core/tensor.h"

namespace xnn::quantize {

// A clipping range [lo, hi] with lo <= 0 <= hi.
struct Range {
  float lo = 0, hi = 0;
};

struct ActivationParams {
  float scale = 1.0f;
  int32_t zero_point = 0;  // 0..255
  // The real range the 255 steps cover: [(0 - zp)·scale, (255 - zp)·scale].
  float min_real() const { return static_cast<float>(-zero_point) * scale; }
  float max_real() const { return static_cast<float>(255 - zero_point) * scale; }
};

// uint8 parameters covering `r` (widened to contain 0): scale = (hi - lo) / 255, zero point =
// round(-lo / scale) so that 0 is exact; an empty range gives scale 1, zero point 0.
ActivationParams uint8_params(Range r);

// Quantise / dequantise one value with uint8 parameters (QuantizeLinear's rounding).
uint8_t quantize_uint8(float x, const ActivationParams& p);
float dequantize_uint8(uint8_t q, const ActivationParams& p);

struct QuantizedWeights {
  Tensor values;              // int8, the float tensor's shape
  std::vector<float> scales;  // one per channel along `axis`, or one (per tensor)
  int axis = -1;              // -1: per tensor
};

// Largest |q| of int8 weights: the full range, and the reduced one. Reduced-range weights make
// every pair sum x1·w1 + x2·w2 of uint8 activations fit int16 (255·128 < 32768), so on CPUs without
// VNNI the int8 GEMM takes its vpmaddubsw path (engine/kernels/qgemm.h: c4, 2x fp32's peak rather
// than the exact int16 path's 1.5x) at the cost of one bit of weight precision. ONNX Runtime calls
// the same choice reduce_range; oneDNN and FBGEMM make it on pre-VNNI x86.
constexpr int kWeightQmax = 127;
constexpr int kReducedWeightQmax = 64;

// Symmetric int8 quantisation of a float tensor: per channel along `axis` (axis >= 0) or per
// tensor (axis = -1). scale = max|w| / qmax (1 where a channel is all zeros), q in [-qmax, qmax].
QuantizedWeights quantize_weights_symmetric(const Tensor& w, int axis, int qmax = kWeightQmax);
// Back to float (for tests and error measurements).
Tensor dequantize_weights(const QuantizedWeights& q);

// int32 bias: round(b[c] / (input_scale · weight_scale[c])), saturated to int32; `weight_scales`
// has one entry per channel of b or a single entry for all.
Tensor quantize_bias(const Tensor& b, float input_scale, const std::vector<float>& weight_scales);

}  // namespace xnn::quantize
