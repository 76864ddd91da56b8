// AVX2 dots of float activations with 4/8-bit weight codes, 16 codes widened to floats at a time.
#include <immintrin.h>

#include "engine/kernels/avx2_reduce.h"
#include "engine/kernels/row_quantized.h"

namespace xnn::kernels {
namespace {

// Codes k..k+15 of a row as two vectors of 8 floats.
template <int Bits>
inline void load_codes16(const uint8_t* row, int64_t k, __m256& q0, __m256& q1) {
  __m128i bytes;
  if constexpr (Bits == 8) {
    bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + k));
  } else {
    // 8 bytes hold 16 nibbles: low nibbles are the even elements, high nibbles the odd ones.
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + k / 2));
    const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
    bytes = _mm_unpacklo_epi8(lo, hi);
  }
  q0 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
  q1 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)));
}

// Two accumulators per row of A (even and odd 8-blocks) so the FMA chains overlap even at m = 1.
template <int Bits>
void dots(const float* a, int64_t m, const RowQuantizedWeights& w, int64_t n0, int64_t n1, float* out) {
  const int64_t width = n1 - n0, k16 = w.cols & ~int64_t{15};
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* row = w.codes + n * w.row_bytes;
    __m256 acc0[4], acc1[4];
    for (int i = 0; i < 4; ++i) acc0[i] = acc1[i] = _mm256_setzero_ps();
    for (int64_t k = 0; k < k16; k += 16) {
      __m256 q0, q1;
      load_codes16<Bits>(row, k, q0, q1);
      for (int64_t i = 0; i < m; ++i) {
        const float* ai = a + i * w.cols + k;
        acc0[i] = _mm256_fmadd_ps(_mm256_loadu_ps(ai), q0, acc0[i]);
        acc1[i] = _mm256_fmadd_ps(_mm256_loadu_ps(ai + 8), q1, acc1[i]);
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      float s = hsum(_mm256_add_ps(acc0[i], acc1[i]));
      for (int64_t k = k16; k < w.cols; ++k) s += a[i * w.cols + k] * static_cast<float>(row_code(row, Bits, k));
      out[i * width + (n - n0)] = s;
    }
  }
}

}  // namespace

void rowq_dots__avx2(const float* a, int64_t m, const RowQuantizedWeights& w, int64_t n0, int64_t n1, float* out) {
  if (w.bits == 4) {
    dots<4>(a, m, w, n0, n1, out);
  } else {
    dots<8>(a, m, w, n0, n1, out);
  }
}

}  // namespace xnn::kernels
