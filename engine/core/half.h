// IEEE 754 binary16 storage type with round-to-nearest-even conversion. Arithmetic happens in
// float; Half is only a storage format (as on most CPUs without native fp16).
#pragma once
#include <cstdint>
#include <cstring>

namespace xnn {

struct Half {
  uint16_t bits = 0;

  Half() = default;
  explicit Half(float f) : bits(from_float(f)) {}
  explicit operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // inf or nan
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
    if (abs < 0x38800000u) {  // subnormal half or zero
      if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
      const uint32_t e = abs >> 23;
      uint32_t m = (abs & 0x7fffffu) | 0x800000u;
      const uint32_t shift = 126 - e;  // value / 2^-24 = m * 2^(e-126); shift in 14..24
      // round to nearest even on the dropped bits
      const uint32_t dropped = m & ((1u << shift) - 1u);
      const uint32_t halfway = 1u << (shift - 1);
      uint32_t r = m >> shift;
      if (dropped > halfway || (dropped == halfway && (r & 1u))) ++r;
      return static_cast<uint16_t>(sign | r);
    }
    uint32_t r = ((abs - 0x38000000u) >> 13);
    const uint32_t dropped = abs & 0x1fffu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }

  static float to_float(uint16_t h) {
    const uint32_t sign = (h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu;
    const uint32_t m = h & 0x3ffu;
    uint32_t x;
    if (e == 0) {
      if (m == 0) {
        x = sign;
      } else {  // subnormal: normalise
        int shift = 0;
        uint32_t mm = m;
        while (!(mm & 0x400u)) { mm <<= 1; ++shift; }
        x = sign | ((113u - shift) << 23) | ((mm & 0x3ffu) << 13);
      }
    } else if (e == 31) {
      x = sign | 0x7f800000u | (m << 13);
    } else {
      x = sign | ((e + 112u) << 23) | (m << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

}  // namespace xnn
