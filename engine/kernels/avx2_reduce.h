// Horizontal reductions of AVX2 registers shared by the AVX2 micro-kernels. Include only from
// *_avx2.cpp files (compiled with -mavx2 -mfma); the functions are inline so each kernel file
// keeps its own copy under its own target flags.
#pragma once
#include <immintrin.h>

namespace xnn::kernels {

// The sum of the 8 lanes of `v`.
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace xnn::kernels
