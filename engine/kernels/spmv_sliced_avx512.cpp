// f32_spmv_16x32perm__avx512: the sliced batch-1 sparse GEMV (format and sum order in
// spmv_sliced.h). Compiled with -mavx512f; called only when spmv_sliced_fast().
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/spmv_sliced.h"

namespace xnn::kernels {

void f32_spmv_sliced_groups__avx512(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x, float* y16) {
  constexpr int R = 16;  // kSlices16x32
  const int64_t cols = w.cols();
  for (int64_t g = g0; g < g1; ++g) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    for (int32_t bi = w.group_start()[g]; bi < w.group_start()[g + 1]; ++bi) {
      const SlicedSparseWeights::Block& blk = w.blocks()[bi];
      const int64_t c0 = int64_t{blk.col_block} * 32;
      __m512 lo, hi;
      if (c0 + 32 <= cols) {
        lo = _mm512_loadu_ps(x + c0);
        hi = _mm512_loadu_ps(x + c0 + 16);
      } else {  // the last, partial block: columns past the end read as 0 (their weights are 0)
        const int64_t left = cols - c0;
        const auto mask = [](int64_t n) {
          return static_cast<__mmask16>(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1);
        };
        lo = _mm512_maskz_loadu_ps(mask(left), x + c0);
        hi = _mm512_maskz_loadu_ps(mask(left - 16), x + c0 + 16);
      }
      const float* wv = w.weights() + blk.first_slice * R;
      const uint8_t* lv = w.lanes() + blk.first_quad * 4 * R;
      // Slice s: its weights times x at the lanes' column offsets (the low 5 bits of idx).
      const auto slice = [&](int s, __m512i idx, __m512 acc) {
        return _mm512_fmadd_ps(_mm512_loadu_ps(wv + s * R), _mm512_permutex2var_ps(lo, idx, hi), acc);
      };
      int s = 0;
      for (; s + 4 <= blk.slices; s += 4, lv += 4 * R) {
        const __m512i q = _mm512_loadu_si512(lv);
        a0 = slice(s, q, a0);
        a1 = slice(s + 1, _mm512_srli_epi32(q, 8), a1);
        a2 = slice(s + 2, _mm512_srli_epi32(q, 16), a2);
        a3 = slice(s + 3, _mm512_srli_epi32(q, 24), a3);
      }
      const int rest = blk.slices - s;
      if (rest > 0) {
        const __m512i q = _mm512_loadu_si512(lv);
        a0 = slice(s, q, a0);
        if (rest > 1) a1 = slice(s + 1, _mm512_srli_epi32(q, 8), a1);
        if (rest > 2) a2 = slice(s + 2, _mm512_srli_epi32(q, 16), a2);
      }
    }
    _mm512_storeu_ps(y16 + (g - g0) * R, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  }
}

}  // namespace xnn::kernels
