// f32_spmv_16x32perm__avx512: the sliced batch-1 sparse GEMV in its 16-row × 32-column shape
// (format and sum order in spmv_sliced.h). Two zmm hold a block's 32 floats of x; vpermt2ps picks
// each lane's x by the low 5 bits of its index dword, and one FMA adds 16 products. Compiled with
// -mavx512f; called only when spmv_sliced_fast() and the shape is 16×32.
#include <immintrin.h>

#include "engine/kernels/spmv_sliced.h"

namespace xnn::kernels {

void f32_spmv_sliced_groups__avx512(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x, float* y16) {
  constexpr int R = 16;  // kSlices16x32: every block has exactly 4 slices, stored in order
  const int64_t cols = w.cols();
  struct Acc {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
  };
  const auto mask = [](int64_t n) { return static_cast<__mmask16>(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1); };
  for (int64_t g = g0; g < g1; ++g) {
    const SlicedSparseWeights::Block* blk = w.blocks() + w.group_start()[g];
    const SlicedSparseWeights::Block* end = w.blocks() + w.group_start()[g + 1];
    if (blk == end) {
      _mm512_storeu_ps(y16 + (g - g0) * R, _mm512_setzero_ps());
      continue;
    }
    const float* wv = w.weights() + blk->first_slice * R;
    const uint8_t* lv = w.lanes() + blk->first_quad * 4 * R;
    // One block: its 32 floats of x, one index vector, four permutes and four FMAs.
    const auto block = [&](const SlicedSparseWeights::Block& b, Acc& acc) {
      const int64_t c0 = b.col0;
      __m512 lo, hi;
      if (c0 + 32 <= cols) {
        lo = _mm512_loadu_ps(x + c0);
        hi = _mm512_loadu_ps(x + c0 + 16);
      } else {  // rows shorter than the window: columns past the end read as 0 (their weights are 0)
        lo = _mm512_maskz_loadu_ps(mask(cols - c0), x + c0);
        hi = _mm512_maskz_loadu_ps(mask(cols - c0 - 16), x + c0 + 16);
      }
      const __m512i q = _mm512_loadu_si512(lv);
      acc.a0 = _mm512_fmadd_ps(_mm512_loadu_ps(wv), _mm512_permutex2var_ps(lo, q, hi), acc.a0);
      acc.a1 = _mm512_fmadd_ps(_mm512_loadu_ps(wv + R), _mm512_permutex2var_ps(lo, _mm512_srli_epi32(q, 8), hi), acc.a1);
      acc.a2 =
          _mm512_fmadd_ps(_mm512_loadu_ps(wv + 2 * R), _mm512_permutex2var_ps(lo, _mm512_srli_epi32(q, 16), hi), acc.a2);
      acc.a3 =
          _mm512_fmadd_ps(_mm512_loadu_ps(wv + 3 * R), _mm512_permutex2var_ps(lo, _mm512_srli_epi32(q, 24), hi), acc.a3);
      wv += 4 * R;
      lv += 4 * R;
    };
    // Consecutive blocks alternate between two accumulator sets, as in the AVX2 kernel.
    Acc even, odd;
    for (; blk + 2 <= end; blk += 2) {
      block(blk[0], even);
      block(blk[1], odd);
    }
    if (blk < end) block(blk[0], even);
    const __m512 sum_even = _mm512_add_ps(_mm512_add_ps(even.a0, even.a1), _mm512_add_ps(even.a2, even.a3));
    const __m512 sum_odd = _mm512_add_ps(_mm512_add_ps(odd.a0, odd.a1), _mm512_add_ps(odd.a2, odd.a3));
    _mm512_storeu_ps(y16 + (g - g0) * R, _mm512_add_ps(sum_even, sum_odd));
  }
}

}  // namespace xnn::kernels
