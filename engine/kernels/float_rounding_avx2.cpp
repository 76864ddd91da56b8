#include <immintrin.h>

#include <cstring>

#include "engine/kernels/float_rounding.h"

namespace xnn::kernels::detail {

void round_to_f16_inplace_avx2(float* data, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(data + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(data + i, _mm256_cvtph_ps(h));
  }
  if (i < n) {  // tail through a padded block, so the rounding is the same instruction
    float tmp[8] = {};
    std::memcpy(tmp, data + i, static_cast<size_t>(n - i) * sizeof(float));
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(tmp), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(tmp, _mm256_cvtph_ps(h));
    std::memcpy(data + i, tmp, static_cast<size_t>(n - i) * sizeof(float));
  }
}

void round_to_bf16_inplace_avx2(float* data, int64_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x00400000);
  const __m256i bias = _mm256_set1_epi32(0x7fff);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  auto round8 = [&](float* p) {
    const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(p));
    const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), one);
    const __m256i rounded = _mm256_add_epi32(x, _mm256_add_epi32(bias, lsb));
    const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(x, quiet), is_nan);
    _mm256_storeu_ps(p, _mm256_castsi256_ps(_mm256_and_si256(r, hi_mask)));
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) round8(data + i);
  if (i < n) {
    float tmp[8] = {};
    std::memcpy(tmp, data + i, static_cast<size_t>(n - i) * sizeof(float));
    round8(tmp);
    std::memcpy(data + i, tmp, static_cast<size_t>(n - i) * sizeof(float));
  }
}

}  // namespace xnn::kernels::detail
