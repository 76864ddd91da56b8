#include "engine/kernels/float_rounding.h"

#include <cstring>

#include "engine/core/half.h"

namespace xnn::kernels {
namespace {

float round_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    x |= 0x00400000u;  // NaN stays a (quiet) NaN instead of rounding into infinity
  } else {
    x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even on the dropped 16 bits
  }
  x &= 0xffff0000u;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace

void round_to_f16_inplace(float* data, int64_t n, Isa isa) {
  if (isa == Isa::kAvx2 && cpu_features().f16c) return detail::round_to_f16_inplace_avx2(data, n);
  for (int64_t i = 0; i < n; ++i) data[i] = Half::to_float(Half::from_float(data[i]));
}

void round_to_bf16_inplace(float* data, int64_t n, Isa isa) {
  if (isa == Isa::kAvx2) return detail::round_to_bf16_inplace_avx2(data, n);
  for (int64_t i = 0; i < n; ++i) data[i] = round_bf16(data[i]);
}

}  // namespace xnn::kernels
