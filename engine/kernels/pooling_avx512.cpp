// AVX-512 path of the 3×3 stride-2 max pool (declared in pooling.h; compiled for AVX-512
// F+VL+BW, called only when avx512_enabled()). 16 outputs per zmm: per input row, two loads of
// 16 columns give the even and odd taps through one vpermt2ps each, and two loads two columns
// further the third tap, so a row costs 3 shuffles per 16 outputs where the AVX2 kernel's
// in-lane shuffles cost 3 per 8 (plus a lane reorder). Taps are taken in the reference's order
// (row by row, left to right) with max_ps(t, best), so NaNs and signed zeros come out as the
// reference's. The last block of a row is masked: no row-end overlap, no scalar rest.
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/pooling.h"

namespace xnn::kernels {

void f32_maxpool2d_3x3s2_row__avx512(const float* const* rows, int64_t nrows, int64_t count, float* out) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  // Lanes [0, n) of a load at column `from` of a block whose windows cover `cols` columns.
  const auto lanes = [](int64_t cols, int64_t from) {
    return static_cast<__mmask16>((uint32_t{1} << std::clamp<int64_t>(cols - from, 0, 16)) - 1);
  };
  for (int64_t o = 0; o < count; o += 16) {
    const int64_t n = std::min<int64_t>(16, count - o), cols = 2 * n + 1;
    const __mmask16 m0 = lanes(cols, 0), m16 = lanes(cols, 16), m2 = lanes(cols, 2), m18 = lanes(cols, 18);
    __m512 best = _mm512_setzero_ps();
    for (int64_t r = 0; r < nrows; ++r) {
      const float* p = rows[r] + 2 * o;
      const __m512 a = _mm512_maskz_loadu_ps(m0, p), b = _mm512_maskz_loadu_ps(m16, p + 16);
      const __m512 a2 = _mm512_maskz_loadu_ps(m2, p + 2), b2 = _mm512_maskz_loadu_ps(m18, p + 18);
      const __m512 t0 = _mm512_permutex2var_ps(a, even, b);    // columns 2j
      const __m512 t1 = _mm512_permutex2var_ps(a, odd, b);     // 2j + 1
      const __m512 t2 = _mm512_permutex2var_ps(a2, even, b2);  // 2j + 2
      best = r == 0 ? t0 : _mm512_max_ps(t0, best);  // row 0's first tap seeds the window
      best = _mm512_max_ps(t1, best);
      best = _mm512_max_ps(t2, best);
    }
    _mm512_mask_storeu_ps(out + o, lanes(n, 0), best);
  }
}

}  // namespace xnn::kernels
