// Rounding float32 data to a narrower float format, kept in float32 storage. Emulates the
// arithmetic of targets that store tensors as fp16 (mobile GPUs, many NPUs) or bfloat16, so an
// fp32 engine computes what those targets compute at tensor boundaries (see
// SessionOptions::float_emulation). Both round to nearest, ties to even, as the hardware
// conversions do; fp16 overflows to ±inf and keeps subnormals, exactly like Half::from_float.
#pragma once
#include <cstdint>

#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

void round_to_f16_inplace(float* data, int64_t n, Isa isa = best_isa());
void round_to_bf16_inplace(float* data, int64_t n, Isa isa = best_isa());

namespace detail {
void round_to_f16_inplace_avx2(float* data, int64_t n);  // F16C vcvtps2ph/vcvtph2ps
void round_to_bf16_inplace_avx2(float* data, int64_t n);
}  // namespace detail

}  // namespace xnn::kernels
