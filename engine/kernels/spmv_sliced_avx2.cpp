// f32_spmv_8x16perm__avx2: the sliced batch-1 sparse GEMV in its 8-row × 16-column shape (format
// and sum order in spmv_sliced.h), for CPUs with AVX2 but no AVX-512. Two ymm hold a block's 16
// floats of x. AVX2 has no two-register permute, so each slice permutes both halves by the low 3
// bits of its index dword and blends them on bit 3 (shifted into the sign bit), then one FMA adds
// 8 products: two permutes per slice instead of one, for windows twice as wide as one register,
// which let 63% of the lanes carry a nonzero at 80% zeros instead of 40% (784->300 at 80%: 1.16x
// the one-register 8x8 shape, 1024->1024 2.2x; spmv_sliced.h). Compiled with -mavx2 -mfma;
// called only when best_isa() is AVX2.
#include <immintrin.h>

#include "engine/kernels/spmv_sliced.h"

namespace xnn::kernels {

namespace {
// Slice J of a block: x at the lanes' column offsets (byte J of each lane's index dword: bits 0-2
// pick within a half, bit 3 picks the half), times the slice's weights, added to acc.
template <int J>
__m256 slice(const float* wv, __m256i q, __m256 lo, __m256 hi, __m256 acc) {
  const __m256i idx = _mm256_srli_epi32(q, 8 * J);
  const __m256 upper = _mm256_castsi256_ps(_mm256_slli_epi32(q, 28 - 8 * J));
  const __m256 xv = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, idx), _mm256_permutevar8x32_ps(hi, idx), upper);
  return _mm256_fmadd_ps(_mm256_loadu_ps(wv + 8 * J), xv, acc);
}
}  // namespace

void f32_spmv_sliced_groups__avx2(const SlicedSparseWeights& w, int64_t g0, int64_t g1, const float* x, float* y8) {
  constexpr int R = 8;  // kSlices8x16: every block has exactly 4 slices, stored in order
  const int64_t cols = w.cols();
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  struct Acc {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  };
  const auto load_x = [&](int64_t c0, int64_t n) {  // n <= 8 floats from x + c0, 0 past the row's end
    return n >= 8 ? _mm256_loadu_ps(x + c0)
                  : _mm256_maskload_ps(x + c0, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lane));
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
    // One block: its 16 floats of x, one index vector, four slices.
    const auto block = [&](const SlicedSparseWeights::Block& b, Acc& acc) {
      const int64_t c0 = b.col0;
      __m256 lo, hi;
      if (c0 + 16 <= cols) {
        lo = _mm256_loadu_ps(x + c0);
        hi = _mm256_loadu_ps(x + c0 + 8);
      } else {  // rows shorter than the window: columns past the end read as 0 (their weights are 0)
        lo = load_x(c0, cols - c0);
        hi = cols - c0 > 8 ? load_x(c0 + 8, cols - c0 - 8) : _mm256_setzero_ps();
      }
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lv));
      acc.a0 = slice<0>(wv, q, lo, hi, acc.a0);
      acc.a1 = slice<1>(wv, q, lo, hi, acc.a1);
      acc.a2 = slice<2>(wv, q, lo, hi, acc.a2);
      acc.a3 = slice<3>(wv, q, lo, hi, acc.a3);
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
