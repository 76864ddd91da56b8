// Constant quantisation parameters of an int8 node (scales, zero points, bias) read at
// preparation from the inputs' TensorInfo::value, in the form the int8 CPU kernels take them.
// Each reader returns nullopt (or false) when the input is not a constant of the expected form:
// the factory then declines the node and the op's reference kernel runs it.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/core/op_registry.h"

namespace xnn {

// A float32 constant with exactly one element (a per-tensor scale).
std::optional<float> constant_scale(const TensorInfo& t);

// A float32 constant with 1 or `count` elements (per tensor or per channel), as `count` values.
std::optional<std::vector<float>> constant_scales(const TensorInfo& t, int64_t count);

// A uint8 constant with exactly one element (a per-tensor activation zero point).
std::optional<uint8_t> constant_u8_zero_point(const TensorInfo& t);

// An absent input, or an int8 constant whose elements are all 0 (symmetric weights).
bool zero_i8_zero_point(const TensorInfo& t);

// An absent input (empty result), or an int32 constant of exactly `count` elements.
std::optional<std::vector<int32_t>> constant_bias(const TensorInfo& t, int64_t count);

// in_scale·w_scale[c] / out_scale per channel (quant_common.h's requant_multiplier, the op
// references' float), or nullopt unless every one is finite and > 0 (the kernels' contract).
std::optional<std::vector<float>> requant_multipliers(float in_scale, const std::vector<float>& w_scales,
                                                      float out_scale);

}  // namespace xnn
