// exp, sigmoid and SiLU on zmm registers, operation for operation the AVX2 versions in
// elementwise_avx2.cpp (same Cephes polynomial, clamps, scaling and formulas), so a kernel's
// AVX-512 epilogue and the AVX2 activation pass give the same floats. Include only from files
// compiled for AVX-512 F+VL+BW (*_avx512.cpp and the headers they own).
#pragma once
#include <immintrin.h>

namespace xnn::kernels::vmath512 {

// exp(x) (see exp_ps in elementwise_avx2.cpp for the method): n = round(x / ln2), Cody-Waite
// reduction, degree-6 polynomial, scaled by 2^n.
inline __m512 exp_ps(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
  x = _mm512_max_ps(_mm512_set1_ps(-105.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  // p · 2^n in one vscalefps: exact, one rounding only where the result is subnormal, as the AVX2
  // version's two power-of-two multiplies (p · 2^(n/2) is normal, so only the second rounds);
  // checked equal for all 2^32 inputs.
  return _mm512_scalef_ps(p, n);
}

// e = exp(-|x|), then 1 / (1 + e) for x >= 0 (sign bit clear) and e / (1 + e) otherwise.
inline __m512 sigmoid_ps(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 e = exp_ps(_mm512_castsi512_ps(
      _mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u)))));
  // The sign bit, as blendv reads it in the AVX2 version (-0 and negative NaNs included).
  const __mmask16 negative = _mm512_cmplt_epi32_mask(_mm512_castps_si512(x), _mm512_setzero_si512());
  const __m512 num = _mm512_mask_blend_ps(negative, one, e);
  return _mm512_div_ps(num, _mm512_add_ps(one, e));
}

// x / (1 + exp(-x)), the scalar formula (see act_ps<kSilu> in elementwise_avx2.cpp).
inline __m512 silu_ps(__m512 x) {
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

}  // namespace xnn::kernels::vmath512
