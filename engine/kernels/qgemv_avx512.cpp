// qs8_gemv__avx512 (qgemv.h): rows [j0, j1) of the int8 GEMV with AVX-512BW (compiled for AVX-512
// F+VL+BW; called only when avx512_enabled()). Four rows share each load of 32 activations; the
// weights are widened to int16 (vpmovsxbw from memory) and vpmaddwd forms exact int32 sums of
// product pairs (|w·x| <= 128·255), added with wrapping vpaddd like the scalar loop's int32 sum,
// whose final value is the same (exact: qs8_gemm_max_depth bounds it). The K tail uses masked
// loads (zeros past k).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "engine/kernels/qgemv.h"
#include "engine/kernels/qgemv_rows.h"

namespace xnn::kernels::internal {
namespace {

template <int R>
inline void rows_dot(int64_t k, const int8_t* w, int64_t ldw, const int16_t* x, int32_t* out) {
  __m512i acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
  int64_t p = 0;
  for (; p + 32 <= k; p += 32) {
    const __m512i xv = _mm512_loadu_si512(x + p);
    for (int r = 0; r < R; ++r) {
      const __m512i wv = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + r * ldw + p)));
      acc[r] = _mm512_add_epi32(acc[r], _mm512_madd_epi16(wv, xv));
    }
  }
  if (p < k) {
    const __mmask32 m = static_cast<__mmask32>((uint64_t{1} << (k - p)) - 1);
    const __m512i xv = _mm512_maskz_loadu_epi16(m, x + p);
    for (int r = 0; r < R; ++r) {
      const __m512i wv = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, w + r * ldw + p));
      acc[r] = _mm512_add_epi32(acc[r], _mm512_madd_epi16(wv, xv));
    }
  }
  for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_epi32(acc[r]);
}

}  // namespace

void qs8_gemv_rows__avx512(int64_t j0, int64_t j1, int64_t k, const int8_t* w, int64_t ldw, const int16_t* x,
                           const int32_t* init, int32_t* acc) {
  qs8_gemv_rows_in_blocks(j0, j1, w, ldw, init, acc, [&](int rows, const int8_t* row, int32_t* out) {
    if (rows == 4) return rows_dot<4>(k, row, ldw, x, out);
    rows_dot<1>(k, row, ldw, x, out);
  });
}

}  // namespace xnn::kernels::internal
