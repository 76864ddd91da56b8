#include "engine/kernels/requantize.h"

#include <string>

#include "engine/core/error.h"

namespace xnn::kernels {

// Messages are built only on failure (XNN_CHECK evaluates them lazily): this runs on every
// kernel call, which must not allocate.
void check_requant(const QRequant& rq, int64_t channels, const char* what) {
  XNN_CHECK(rq.zero_point >= 0 && rq.zero_point <= 255,
            std::string(what) + ": output zero point " + std::to_string(rq.zero_point) + " is outside 0..255");
  XNN_CHECK(rq.qmin <= rq.qmax, std::string(what) + ": qmin " + std::to_string(rq.qmin) + " > qmax " +
                                    std::to_string(rq.qmax));
  XNN_CHECK(channels == 0 || rq.multiplier, std::string(what) + ": no requantisation multipliers");
  for (int64_t c = 0; c < channels; ++c) {
    const float m = rq.multiplier[c];
    XNN_CHECK(std::isfinite(m) && m > 0.0f, std::string(what) + ": requantisation multiplier of channel " +
                                                std::to_string(c) + " is " + std::to_string(m) +
                                                ", expected a finite value > 0");
  }
}

QuantizedBounds quantized_activation_bounds(const Activation& act, float output_scale, int32_t output_zero_point) {
  XNN_CHECK(std::isfinite(output_scale) && output_scale > 0.0f,
            "quantized_activation_bounds: output scale " + std::to_string(output_scale) + " must be finite and > 0");
  XNN_CHECK(output_zero_point >= 0 && output_zero_point <= 255,
            "quantized_activation_bounds: output zero point " + std::to_string(output_zero_point) +
                " is outside 0..255");
  // A real value's nearest code, saturated to the uint8 range.
  const auto quantize = [&](float v) {
    const double q = std::nearbyint(static_cast<double>(v) / output_scale) + output_zero_point;
    return static_cast<uint8_t>(std::clamp(q, 0.0, 255.0));
  };
  switch (act.kind) {
    case ActKind::kNone: return {0, 255};
    case ActKind::kRelu: return {static_cast<uint8_t>(output_zero_point), 255};
    case ActKind::kClip: {
      XNN_CHECK(act.alpha <= act.beta, "quantized_activation_bounds: Clip min " + std::to_string(act.alpha) +
                                           " > max " + std::to_string(act.beta));
      return {quantize(act.alpha), quantize(act.beta)};
    }
    default:
      throw Error(std::string("quantized_activation_bounds: activation ") + act_kind_name(act.kind) +
                  " cannot be fused into an int8 output clamp (expected none, Relu or Clip)");
  }
}

}  // namespace xnn::kernels
