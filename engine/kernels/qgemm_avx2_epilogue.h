// The requantising epilogue and small helpers shared by the int8 GEMM micro-kernels compiled for
// AVX2 (qgemm_avx2.cpp) and AVX-VNNI (qgemm_avxvnni.cpp). Include only from those files: the
// functions use AVX2 intrinsics. They sit in an unnamed namespace so every kernel file gets its
// own copy built with its own target flags (an inline function shared across files compiled with
// different -m flags could be linked from the file with the wider ISA).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "engine/kernels/qgemm_internal.h"
#include "engine/kernels/unroll.h"

namespace xnn::kernels::internal::avx2 {
namespace {  // NOLINT: one copy per including kernel file, see above

inline int32_t load32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Requantises one row of a tile (NV vectors of 8 int32) and stores its first nr bytes.
//
// requantize() clamps to [lower, upper] in float, rounds and adds the zero point. Here only the
// upper clamp is done in float (it also keeps cvtps2dq in range: above 2^31 it would return
// INT32_MIN); the lower one is done on the bytes, as XNNPACK does: with r = cvtps2dq(min(v,
// upper)) = round(min(v, upper)) (r may be INT32_MIN when v < −2^31),
//   v >= lower: lower <= r <= upper, so r + zp is in [qmin, qmax] and every saturating step
//               below (packssdw, paddsw, packuswb) is exact: the byte is requantize()'s;
//   v <  lower: r <= lower (rounding is monotone, lower is an integer), so the saturated
//               r + zp is <= qmin and max(·, qmin) gives qmin, as requantize() does.
// Two instructions per 16 outputs fewer than clamping both ends in float.
template <int NV>
inline void store_row(const __m256i (&acc)[NV], float multiplier, const QTileParams& p, size_t nr, uint8_t* row) {
  const __m256 mult = _mm256_set1_ps(multiplier);
  const __m256 upper = _mm256_set1_ps(p.upper);
  __m256i r[NV];
  unroll<NV>([&](auto v) {
    r[v] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc[v]), mult), upper));
  });
  __m128i b;
  if constexpr (NV == 2) {
    // packssdw interleaves 128-bit lanes: [r0 0-3, r1 0-3 | r0 4-7, r1 4-7]; the permute restores
    // column order before the final pack to bytes.
    __m256i s = _mm256_adds_epi16(_mm256_packs_epi32(r[0], r[1]), _mm256_set1_epi16(static_cast<int16_t>(p.zero_point)));
    s = _mm256_permute4x64_epi64(s, 0xD8);
    b = _mm_packus_epi16(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  } else {
    __m128i s = _mm_packs_epi32(_mm256_castsi256_si128(r[0]), _mm256_extracti128_si256(r[0], 1));
    s = _mm_adds_epi16(s, _mm_set1_epi16(static_cast<int16_t>(p.zero_point)));
    b = _mm_packus_epi16(s, s);
  }
  b = _mm_max_epu8(b, _mm_set1_epi8(static_cast<char>(p.qmin)));
  if (nr == 8 * NV) {
    if constexpr (NV == 2) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(row), b);
    } else {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(row), b);
    }
  } else {
    alignas(16) uint8_t t[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(t), b);
    std::memcpy(row, t, nr);
  }
}

// The accumulators are parked in a stack tile first and requantised from there. Without that, GCC
// (12) finds too few registers for the epilogue beside the live accumulators and places its spills
// and copies *inside* the k loop that produced them (the VNNI 6x16 kernel then ran at 55-60% of
// vpdpbusd's peak); the asm makes the tile escape, so the stores stay after the loop.
template <int MR, int NV>
inline void store_tile(const __m256i (&acc)[MR][NV], size_t mr, size_t nr, const QTileParams& p, uint8_t* y,
                       int64_t ldy) {
  alignas(32) __m256i tile[MR][NV];
  unroll<MR>([&](auto i) { unroll<NV>([&](auto v) { _mm256_store_si256(&tile[i][v], acc[i][v]); }); });
  asm volatile("" : : "r"(tile) : "memory");
  unroll<MR>([&](auto i) {
    if (static_cast<size_t>(i) < mr) store_row<NV>(tile[i], p.multiplier[i], p, nr, y + i * ldy);
  });
}

}  // namespace
}  // namespace xnn::kernels::internal::avx2
