// f32_spmv_8x8perm__avx2: the sliced batch-1 sparse GEMV in its 8-row × 8-column shape (format
// and sum order in spmv_sliced.h), for CPUs with AVX2 but no AVX-512. One ymm holds a block's 8
// floats of x; vpermps picks each lane's x by the low 3 bits of its index dword, and one FMA adds
// 8 products. Compiled with -mavx2 -mfma; called only when best_isa() is AVX2.
#include <immintrin.h>

#include "engine/kernels/spmv_sliced.h"

namespace xnn::kernels {

void f32_spmv_sliced_groups__avx2(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x, float* y8) {
  constexpr int R = 8;  // kSlices8x8: every block has exactly 4 slices, stored in order
  const int64_t cols = w.cols();
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  struct Acc {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  };
  for (int64_t g = g0; g < g1; ++g) {
    const SlicedSparseWeights::Block* blk = w.blocks() + w.group_start()[g];
    const SlicedSparseWeights::Block* end = w.blocks() + w.group_start()[g + 1];
    if (blk == end) {
      _mm256_storeu_ps(y8 + (g - g0) * R, _mm256_setzero_ps());
      continue;
    }
    const float* wv = w.weights() + blk->first_slice * R;
    const uint8_t* lv = w.lanes() + blk->first_quad * 4 * R;
    // One block: its 8 floats of x, one index vector (slice j in byte j of each lane's dword:
    // vpermps reads the low 3 bits), four permutes and four FMAs.
    const auto block = [&](const SlicedSparseWeights::Block& b, Acc& acc) {
      const int64_t c0 = b.col0;
      __m256 xv;
      if (c0 + 8 <= cols) {
        xv = _mm256_loadu_ps(x + c0);
      } else {  // rows shorter than the window: columns past the end read as 0 (their weights are 0)
        xv = _mm256_maskload_ps(x + c0, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(cols - c0)), lane));
      }
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lv));
      acc.a0 = _mm256_fmadd_ps(_mm256_loadu_ps(wv), _mm256_permutevar8x32_ps(xv, q), acc.a0);
      acc.a1 = _mm256_fmadd_ps(_mm256_loadu_ps(wv + R), _mm256_permutevar8x32_ps(xv, _mm256_srli_epi32(q, 8)), acc.a1);
      acc.a2 = _mm256_fmadd_ps(_mm256_loadu_ps(wv + 2 * R), _mm256_permutevar8x32_ps(xv, _mm256_srli_epi32(q, 16)), acc.a2);
      acc.a3 = _mm256_fmadd_ps(_mm256_loadu_ps(wv + 3 * R), _mm256_permutevar8x32_ps(xv, _mm256_srli_epi32(q, 24)), acc.a3);
      wv += 4 * R;
      lv += 4 * R;
    };
    // Consecutive blocks alternate between two accumulator sets: one set would chain every FMA
    // on the previous block's (4-cycle latency per block).
    Acc even, odd;
    for (; blk + 2 <= end; blk += 2) {
      block(blk[0], even);
      block(blk[1], odd);
    }
    if (blk < end) block(blk[0], even);
    const __m256 sum_even = _mm256_add_ps(_mm256_add_ps(even.a0, even.a1), _mm256_add_ps(even.a2, even.a3));
    const __m256 sum_odd = _mm256_add_ps(_mm256_add_ps(odd.a0, odd.a1), _mm256_add_ps(odd.a2, odd.a3));
    _mm256_storeu_ps(y8 + (g - g0) * R, _mm256_add_ps(sum_even, sum_odd));
  }
}

}  // namespace xnn::kernels
