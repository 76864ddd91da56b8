// Copies and fills of short byte runs (the rows of uint8 feature maps: 7 to 112 bytes in the
// usual networks) with a few fixed-size, possibly overlapping moves instead of a libc call per
// run, whose overhead dominated int8 im2col and the depthwise kernels' padded rows on layers
// with small feature maps. Baseline ISA (the compiler turns the fixed-size memcpy into moves).
#pragma once
#include <emmintrin.h>

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

// d[i] = s[2·i] for i < n (the input row of a stride-2 convolution tap): 16 outputs per two
// 16-byte loads, keeping the even bytes (mask, then pack 16-bit lanes with unsigned saturation,
// exact for values < 256). Reads s[0 .. 2·n − 2] only: the vector loop stops while s[2·i + 31]
// is still in range. SSE2, so the baseline ISA.
inline void copy_byte_run_stride2(uint8_t* d, const uint8_t* s, int64_t n) {
  const __m128i even = _mm_set1_epi16(0x00ff);
  int64_t i = 0;
  for (; i + 17 <= n; i += 16) {
    const __m128i a = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 2 * i)), even);
    const __m128i b = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 2 * i + 16)), even);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm_packus_epi16(a, b));
  }
  for (; i < n; ++i) d[i] = s[2 * i];
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
