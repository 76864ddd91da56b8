#include <immintrin.h>

#include "engine/kernels/avx2_reduce.h"
#include "engine/kernels/gemv.h"

namespace xnn::kernels {

// Four rows at a time share each load of x; 8 lanes along k, scalar tail.
void f32_gemv_rows__avx2(int64_t r0, int64_t r1, int64_t k, const float* w, int64_t ldw, const float* x, float* y) {
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    const float* w0 = w + r * ldw;
    const float* w1 = w0 + ldw;
    const float* w2 = w1 + ldw;
    const float* w3 = w2 + ldw;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) {
      const __m256 xv = _mm256_loadu_ps(x + i);
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + i), xv, a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + i), xv, a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w2 + i), xv, a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w3 + i), xv, a3);
    }
    float s0 = hsum(a0), s1 = hsum(a1), s2 = hsum(a2), s3 = hsum(a3);
    for (; i < k; ++i) {
      s0 += w0[i] * x[i];
      s1 += w1[i] * x[i];
      s2 += w2[i] * x[i];
      s3 += w3[i] * x[i];
    }
    y[r] = s0, y[r + 1] = s1, y[r + 2] = s2, y[r + 3] = s3;
  }
  for (; r < r1; ++r) {
    const float* wr = w + r * ldw;
    __m256 a = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(wr + i), _mm256_loadu_ps(x + i), a);
    float s = hsum(a);
    for (; i < k; ++i) s += wr[i] * x[i];
    y[r] = s;
  }
}

}  // namespace xnn::kernels
