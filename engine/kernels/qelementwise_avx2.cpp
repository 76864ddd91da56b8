// AVX2 chunks of the elementwise int8 kernels (qelementwise.h; compiled with -mavx2 -mfma, called
// only when isa_supported(Isa::kAvx2)). 16 elements per step with the reference's float
// operations in its order; every byte equals the baseline kernel's (tests compare them):
//   - the products of QLinearAdd pass through an empty asm before the add, so the compiler cannot
//     contract mul + add into an FMA (one rounding instead of two: other bytes);
//   - cvtps2dq rounds half to even (the default MXCSR mode), as the baseline's 1.5·2^23 trick
//     does for the clamped |v| <= 255; + zero point lands in [0, 255], packed without saturating.
// A tail shorter than 16 goes through a stack copy of 16 elements.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "engine/kernels/qelementwise_internal.h"

namespace xnn::kernels::internal {
namespace {

inline __m256 u8x8_minus_zp(__m128i bytes8, __m256i zp) {
  return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(bytes8), zp));
}

// Two vectors of 8 float values in [lower, upper] after the clamp -> 16 bytes.
inline __m128i round_pack16(__m256 v0, __m256 v1, __m256 lower, __m256 upper, __m256i zp) {
  v0 = _mm256_min_ps(_mm256_max_ps(v0, lower), upper);
  v1 = _mm256_min_ps(_mm256_max_ps(v1, lower), upper);
  const __m256i r0 = _mm256_add_epi32(_mm256_cvtps_epi32(v0), zp);
  const __m256i r1 = _mm256_add_epi32(_mm256_cvtps_epi32(v1), zp);
  const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(r0, r1), 0xD8);  // int16, in order
  return _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
}

inline __m128i add16(const uint8_t* a, const uint8_t* b, __m256 ma, __m256 mb, __m256i za, __m256i zb, __m256 lower,
                     __m256 upper, __m256i zy) {
  const __m128i av = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
  const __m128i bv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
  __m256 pa0 = _mm256_mul_ps(ma, u8x8_minus_zp(av, za));
  __m256 pa1 = _mm256_mul_ps(ma, u8x8_minus_zp(_mm_srli_si128(av, 8), za));
  __m256 pb0 = _mm256_mul_ps(mb, u8x8_minus_zp(bv, zb));
  __m256 pb1 = _mm256_mul_ps(mb, u8x8_minus_zp(_mm_srli_si128(bv, 8), zb));
  asm("" : "+x"(pa0), "+x"(pa1), "+x"(pb0), "+x"(pb1));  // no FMA contraction, see above
  return round_pack16(_mm256_add_ps(pa0, pb0), _mm256_add_ps(pa1, pb1), lower, upper, zy);
}

inline __m128i quantize16(const float* x, __m256 scale, __m256 lower, __m256 upper, __m256i zp) {
  return round_pack16(_mm256_div_ps(_mm256_loadu_ps(x), scale), _mm256_div_ps(_mm256_loadu_ps(x + 8), scale), lower,
                      upper, zp);
}

}  // namespace

void u8_qlinear_add_chunk__avx2(int64_t n, const uint8_t* a, const uint8_t* b, float ma, float mb, int32_t za,
                                int32_t zb, int32_t zy, uint8_t* y) {
  const __m256 vma = _mm256_set1_ps(ma), vmb = _mm256_set1_ps(mb);
  const __m256i vza = _mm256_set1_epi32(za), vzb = _mm256_set1_epi32(zb), vzy = _mm256_set1_epi32(zy);
  const __m256 lower = _mm256_set1_ps(static_cast<float>(-zy)), upper = _mm256_set1_ps(static_cast<float>(255 - zy));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), add16(a + i, b + i, vma, vmb, vza, vzb, lower, upper, vzy));
  }
  if (i < n) {
    uint8_t ta[16] = {}, tb[16] = {}, ty[16];
    std::memcpy(ta, a + i, static_cast<size_t>(n - i));
    std::memcpy(tb, b + i, static_cast<size_t>(n - i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(ty), add16(ta, tb, vma, vmb, vza, vzb, lower, upper, vzy));
    std::memcpy(y + i, ty, static_cast<size_t>(n - i));
  }
}

void f32_quantize_u8_chunk__avx2(int64_t n, const float* x, float scale, int32_t zp, uint8_t* y) {
  const __m256 vs = _mm256_set1_ps(scale);
  const __m256i vzp = _mm256_set1_epi32(zp);
  const __m256 lower = _mm256_set1_ps(static_cast<float>(-zp)), upper = _mm256_set1_ps(static_cast<float>(255 - zp));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), quantize16(x + i, vs, lower, upper, vzp));
  }
  if (i < n) {
    float tx[16] = {};
    uint8_t ty[16];
    std::memcpy(tx, x + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(ty), quantize16(tx, vs, lower, upper, vzp));
    std::memcpy(y + i, ty, static_cast<size_t>(n - i));
  }
}

}  // namespace xnn::kernels::internal
