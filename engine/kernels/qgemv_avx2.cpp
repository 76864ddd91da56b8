// qs8_gemv__avx2 (qgemv.h): rows [j0, j1) of the int8 GEMV with AVX2, for CPUs without AVX-512
// (the declared Zen 3 among them), where the plain C++ loop is compiled for the baseline ISA.
// As the AVX-512 kernel: four rows share each load of 16 activations; the weights are widened to
// int16 (vpmovsxbw from memory) and vpmaddwd forms exact int32 sums of product pairs
// (|w·x| <= 128·255), added with wrapping vpaddd; the final int32 equals the scalar loop's
// (exact: qs8_gemm_max_depth bounds it). The K tail (< 16) runs the scalar loop's products.
#include <immintrin.h>

#include <cstdint>

#include "engine/kernels/qgemv.h"
#include "engine/kernels/qgemv_rows.h"

namespace xnn::kernels::internal {
namespace {

inline int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

template <int R>
inline void rows_dot(int64_t k, const int8_t* w, int64_t ldw, const int16_t* x, int32_t* out) {
  __m256i acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
  int64_t p = 0;
  for (; p + 16 <= k; p += 16) {
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + p));
    for (int r = 0; r < R; ++r) {
      const __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + r * ldw + p)));
      acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(wv, xv));
    }
  }
  for (int r = 0; r < R; ++r) {
    uint32_t s = static_cast<uint32_t>(hsum_epi32(acc[r]));
    for (int64_t q = p; q < k; ++q) s += static_cast<uint32_t>(int32_t{w[r * ldw + q]} * int32_t{x[q]});
    out[r] = static_cast<int32_t>(s);
  }
}

}  // namespace

void qs8_gemv_rows__avx2(int64_t j0, int64_t j1, int64_t k, const int8_t* w, int64_t ldw, const int16_t* x,
                         const int32_t* init, int32_t* acc) {
  qs8_gemv_rows_in_blocks(j0, j1, w, ldw, init, acc, [&](int rows, const int8_t* row, int32_t* out) {
    if (rows == 4) return rows_dot<4>(k, row, ldw, x, out);
    rows_dot<1>(k, row, ldw, x, out);
  });
}

}  // namespace xnn::kernels::internal
