// Copies and fills of short byte runs (the rows of uint8 feature maps: 7 to 112 bytes in the
// usual networks) with a few fixed-size, possibly overlapping moves instead of a libc call per
// run, whose overhead dominated int8 im2col and the depthwise kernels' padded rows on layers
// with small feature maps. Baseline ISA (the compiler turns the fixed-size memcpy into moves).
#pragma once
#include <cstdint>
#include <cstring>

namespace xnn::kernels {

inline void copy_byte_run(uint8_t* d, const uint8_t* s, int64_t n) {
  if (n >= 16) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) std::memcpy(d + i, s + i, 16);
    if (i < n) std::memcpy(d + n - 16, s + n - 16, 16);  // the tail, overlapping
  } else if (n >= 8) {  // two overlapping 8-byte moves
    uint64_t a, b;
    std::memcpy(&a, s, 8);
    std::memcpy(&b, s + n - 8, 8);
    std::memcpy(d, &a, 8);
    std::memcpy(d + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + n - 4, 4);
    std::memcpy(d, &a, 4);
    std::memcpy(d + n - 4, &b, 4);
  } else {
    switch (n) {
      case 3: d[2] = s[2]; [[fallthrough]];
      case 2: d[1] = s[1]; [[fallthrough]];
      case 1: d[0] = s[0]; [[fallthrough]];
      default: break;
    }
  }
}

inline void fill_byte_run(uint8_t* d, uint8_t v, int64_t n) {
  if (n >= 16) {
    std::memset(d, v, static_cast<size_t>(n));
  } else if (n >= 8) {
    const uint64_t a = 0x0101010101010101ull * v;
    std::memcpy(d, &a, 8);
    std::memcpy(d + n - 8, &a, 8);
  } else if (n >= 4) {
    const uint32_t a = 0x01010101u * v;
    std::memcpy(d, &a, 4);
    std::memcpy(d + n - 4, &a, 4);
  } else {
    switch (n) {
      case 3: d[2] = v; [[fallthrough]];
      case 2: d[1] = v; [[fallthrough]];
      case 1: d[0] = v; [[fallthrough]];
      default: break;
    }
  }
}

}  // namespace xnn::kernels
