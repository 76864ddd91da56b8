// Requantisation of 16 int32 accumulators to uint8 on zmm, shared by the 512-bit int8 kernels
// (qgemm_avx512vnni.cpp, qdepthwise_avx512vbmi.cpp, qdepthwise_flat_avx512vbmi.cpp). Include only
// from files compiled with AVX-512 F+VL+BW; unnamed namespace for the reason given in
// qgemm_avx2_epilogue.h.
//
// requantize() clamps to [lower, upper] in float, rounds half to even and adds the zero point.
// Here: v = min(acc · multiplier, upper), r = cvtps2dq(v) (round half to even), then
// s = saturate16(r) +sat zp and b = min(max(s, qmin), 255) as bytes. The lower clamp is moved to
// the bytes as in avx2::store_row (v < lower gives r + zp <= qmin, so max(·, qmin) = qmin), and
// the narrowing chain gives store_row's bytes: packssdw → paddsw → packuswb → max qmin is
// clamp(sat16(r) +sat zp, 0, 255) then max qmin = clamp(·, qmin, 255), since 0 <= qmin <= 255.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace xnn::kernels::internal::avx512 {
namespace {  // NOLINT: one copy per including kernel file

struct Requant16 {
  __m512 multiplier, upper;
  __m256i zero_point, qmin;  // int16 lanes
  Requant16(float m, float up, int32_t zp, uint8_t qm)
      : multiplier(_mm512_set1_ps(m)), upper(_mm512_set1_ps(up)),
        zero_point(_mm256_set1_epi16(static_cast<int16_t>(zp))), qmin(_mm256_set1_epi16(static_cast<int16_t>(qm))) {}
  __m128i operator()(__m512i acc) const {
    const __m512 v = _mm512_min_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc), multiplier), upper);
    __m256i s = _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(v));
    s = _mm256_max_epi16(_mm256_adds_epi16(s, zero_point), qmin);
    return _mm256_cvtusepi16_epi8(s);  // s >= qmin >= 0: unsigned saturation = min(s, 255)
  }
};

// Four rows of 16 int32 accumulators (multipliers m[0..3]) requantised together: the float
// steps as Requant16, then the narrowing of all four at once, packssdw (rows 0+1, 2+3) →
// paddsw/pmaxsw on 32 lanes → packuswb, the bytes of requantize() as above (same saturations in
// the same order: packssdw = vpmovsdw, packuswb = vpmovuswb for s >= qmin >= 0). The packs work
// within 128-bit lanes, so lane L holds columns 4L..4L+3 of rows 0..3 as dwords; one vpermd (a
// 4×4 dword transpose across lanes) puts row r in lane r. Per 4 rows 4 shuffle-port narrowing
// ops instead of 16 (two 2-uop vpmov per row), which is what a small-K GEMM tile (e.g. K = 16:
// 64 vpdpbusd per 16 rows) spends most on.
struct Requant16x4 {
  __m512 upper;
  __m512i zero_point, qmin, rows_to_lanes;  // int16 lanes; vpermd indices
  Requant16x4(float up, int32_t zp, uint8_t qm)
      : upper(_mm512_set1_ps(up)), zero_point(_mm512_set1_epi16(static_cast<int16_t>(zp))),
        qmin(_mm512_set1_epi16(static_cast<int16_t>(qm))),
        rows_to_lanes(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)) {}
  __m512i scale(__m512i acc, float m) const {
    return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(m)), upper));
  }
  // Row r of the result in 128-bit lane r (16 bytes each).
  __m512i operator()(__m512i a0, __m512i a1, __m512i a2, __m512i a3, const float* m) const {
    const __m512i s01 = _mm512_max_epi16(_mm512_adds_epi16(_mm512_packs_epi32(scale(a0, m[0]), scale(a1, m[1])), zero_point), qmin);
    const __m512i s23 = _mm512_max_epi16(_mm512_adds_epi16(_mm512_packs_epi32(scale(a2, m[2]), scale(a3, m[3])), zero_point), qmin);
    return _mm512_permutexvar_epi32(rows_to_lanes, _mm512_packus_epi16(s01, s23));
  }
};

// The first n <= 16 bytes of b.
inline void store_bytes16(uint8_t* out, __m128i b, int64_t n) {
  if (n >= 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), b);
  } else {
    _mm_mask_storeu_epi8(out, static_cast<__mmask16>((1u << n) - 1), b);
  }
}

}  // namespace
}  // namespace xnn::kernels::internal::avx512
