// f32_transpose_8x8__avx2 (transpose.h). Compiled with -mavx2; called only after cpuid says so.
#include <immintrin.h>

#include "engine/kernels/transpose.h"

namespace xnn::kernels {

void f32_transpose_8x8__avx2(int64_t rows8, int64_t cols8, const float* src, int64_t ld_src, float* dst,
                             int64_t ld_dst) {
  // Tiles down a column band first: the 8 destination rows being filled stay in L1.
  for (int64_t j = 0; j < cols8; j += 8) {
    for (int64_t i = 0; i < rows8; i += 8) {
      const float* s = src + i * ld_src + j;
      __m256 r[8], t[8];
      for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(s + k * ld_src);
      for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
      }
      for (int k = 0; k < 8; k += 4) {
        r[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
      }
      // Now r[k] (k < 4) = [column k of rows 0-3 | column k + 4 of rows 0-3], r[k + 4] the same
      // for rows 4-7: the 128-bit halves pair up into destination rows k and k + 4.
      float* d = dst + j * ld_dst + i;
      for (int k = 0; k < 4; ++k) {
        _mm256_storeu_ps(d + k * ld_dst, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
        _mm256_storeu_ps(d + (k + 4) * ld_dst, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
      }
    }
  }
}

}  // namespace xnn::kernels
