// AVX2 paths of the pooling kernels (declared in pooling.h).
#include <immintrin.h>

#include "engine/kernels/pooling.h"

namespace xnn::kernels {
namespace {

// Stride-2 taps of 8 outputs j = 0..7 from 16 (+1) input columns starting at p. The in-lane
// shuffles leave the outputs in the order 0 1 4 5 | 2 3 6 7; every tap of every row comes out in
// that same order, so the maximum is taken in it and the order undone once at the end.
inline __m256 even_taps(const float* p) {  // p[2j]
  return _mm256_shuffle_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), 0x88);
}
inline __m256 odd_taps(const float* p) {  // p[2j + 1]
  return _mm256_shuffle_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), 0xDD);
}
inline __m256 even_taps_plus2(const float* p) {  // p[2j + 2], reading p[2] .. p[16] only
  // p+2: [2 3 4 5 | 6 7 8 9] and p+9: [9 10 11 12 | 13 14 15 16]; elements 0,2 of the first and
  // 1,3 of the second per lane give 2 4 10 12 | 6 8 14 16.
  return _mm256_shuffle_ps(_mm256_loadu_ps(p + 2), _mm256_loadu_ps(p + 9), 0xD8);
}
inline __m256 unpermute(__m256 v) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
}

// max_ps(t, best) = t > best ? t : best, with best kept when either is NaN: exactly the
// reference's "replace only when strictly greater".
template <int K>
void maxpool_s2_row(const float* const* rows, int64_t nrows, int64_t blocks, float* out) {
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t off = 16 * b;
    const float* p = rows[0] + off;
    __m256 best = even_taps(p);
    best = _mm256_max_ps(odd_taps(p), best);
    if constexpr (K == 3) best = _mm256_max_ps(even_taps_plus2(p), best);
    for (int64_t r = 1; r < nrows; ++r) {
      p = rows[r] + off;
      best = _mm256_max_ps(even_taps(p), best);
      best = _mm256_max_ps(odd_taps(p), best);
      if constexpr (K == 3) best = _mm256_max_ps(even_taps_plus2(p), best);
    }
    _mm256_storeu_ps(out + 8 * b, unpermute(best));
  }
}

// Tap k of 8 outputs (stride S) from the window starts at p: columns p[S*j + k]. For stride 2,
// p+k: [k k+1 .. k+7] and p+k+7: [k+7 .. k+14] give, with elements 0,2 of the first and 1,3 of
// the second per lane, k k+2 k+8 k+10 | k+4 k+6 k+12 k+14: the permuted order above, reading
// only the columns the windows cover.
template <int S>
inline __m256 tap(const float* p, int64_t k) {
  if constexpr (S == 1) {
    return _mm256_loadu_ps(p + k);
  } else {
    return _mm256_shuffle_ps(_mm256_loadu_ps(p + k), _mm256_loadu_ps(p + k + 7), 0xD8);
  }
}

// Any kernel size, stride 1 or 2 along the width. Max: seeded by the first tap, then
// max_ps(t, best) in window order (the reference's rule, see above). Average: 0 + taps in window
// order, then one division, as the reference's float arithmetic.
template <bool kMax, int S>
void pool_row(const float* const* rows, int64_t nrows, int64_t kernel_w, int64_t blocks, float divisor, float* out) {
  const __m256 vdiv = _mm256_set1_ps(divisor);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t off = 8 * S * b;
    __m256 acc = kMax ? tap<S>(rows[0] + off, 0) : _mm256_setzero_ps();
    for (int64_t r = 0; r < nrows; ++r) {
      const float* p = rows[r] + off;
      for (int64_t k = (kMax && r == 0) ? 1 : 0; k < kernel_w; ++k) {
        const __m256 t = tap<S>(p, k);
        acc = kMax ? _mm256_max_ps(t, acc) : _mm256_add_ps(acc, t);
      }
    }
    if constexpr (S == 2) acc = unpermute(acc);
    _mm256_storeu_ps(out + 8 * b, kMax ? acc : _mm256_div_ps(acc, vdiv));
  }
}

}  // namespace

void f32_maxpool2d_row__avx2(const float* const* rows, int64_t nrows, int64_t kernel_w, int64_t stride_w,
                             int64_t blocks, float* out) {
  if (stride_w == 1) return pool_row<true, 1>(rows, nrows, kernel_w, blocks, 1.0f, out);
  pool_row<true, 2>(rows, nrows, kernel_w, blocks, 1.0f, out);
}

void f32_avgpool2d_row__avx2(const float* const* rows, int64_t nrows, int64_t kernel_w, int64_t stride_w,
                             int64_t blocks, float divisor, float* out) {
  if (stride_w == 1) return pool_row<false, 1>(rows, nrows, kernel_w, blocks, divisor, out);
  pool_row<false, 2>(rows, nrows, kernel_w, blocks, divisor, out);
}

void f32_maxpool2d_3x3s2_row__avx2(const float* const* rows, int64_t nrows, int64_t blocks, float* out) {
  maxpool_s2_row<3>(rows, nrows, blocks, out);
}

void f32_maxpool2d_2x2s2_row__avx2(const float* const* rows, int64_t nrows, int64_t blocks, float* out) {
  maxpool_s2_row<2>(rows, nrows, blocks, out);
}

void f32_maxpool2d_2x2s2_rest__avx2(const float* const* rows, int64_t nrows, int64_t count, float* out) {
  int64_t o = 0;
  // Taps in window order with max_ps(t, best), as maxpool_s2_row; the xmm shuffles keep the
  // outputs in order.
  for (; o + 4 <= count; o += 4) {
    __m128 best = _mm_setzero_ps();
    for (int64_t r = 0; r < nrows; ++r) {
      const __m128 a = _mm_loadu_ps(rows[r] + 2 * o), b = _mm_loadu_ps(rows[r] + 2 * o + 4);
      const __m128 even = _mm_shuffle_ps(a, b, 0x88), odd = _mm_shuffle_ps(a, b, 0xDD);
      best = r == 0 ? even : _mm_max_ps(even, best);  // row 0's first tap seeds the window
      best = _mm_max_ps(odd, best);
    }
    _mm_storeu_ps(out + o, best);
  }
  for (; o < count; ++o) {
    __m128 best = _mm_load_ss(rows[0] + 2 * o);
    best = _mm_max_ss(_mm_load_ss(rows[0] + 2 * o + 1), best);
    for (int64_t r = 1; r < nrows; ++r) {
      best = _mm_max_ss(_mm_load_ss(rows[r] + 2 * o), best);
      best = _mm_max_ss(_mm_load_ss(rows[r] + 2 * o + 1), best);
    }
    out[o] = _mm_cvtss_f32(best);
  }
}

float f32_global_avgpool_plane__avx2(const float* x, int64_t n) {
  if (n <= 0) return 0.0f;
  // Double accumulators: the reference sums in double, and planes reach 112×112.
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd(), s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(a)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)));
    s2 = _mm256_add_pd(s2, _mm256_cvtps_pd(_mm256_castps256_ps128(b)));
    s3 = _mm256_add_pd(s3, _mm256_cvtps_pd(_mm256_extractf128_ps(b, 1)));
  }
  for (; i + 4 <= n; i += 4) s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
  const __m256d s = _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3));
  __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
  double sum = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
  for (; i < n; ++i) sum += static_cast<double>(x[i]);
  return static_cast<float>(sum / static_cast<double>(n));
}

}  // namespace xnn::kernels
