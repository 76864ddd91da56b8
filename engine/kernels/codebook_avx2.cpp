// AVX2 decoding of codebook indices to centroid values, 8 codes at a time: widen the packed codes
// to 32-bit lanes (byte shuffle, zero-extend, per-lane shift, mask), then look each lane up in the
// centroid table: one vpermps for up to 8 centroids, two and a blend on bit 3 for up to 16, a
// gather from the (L1-resident) table beyond.
#include <immintrin.h>

#include <cstring>

#include "engine/kernels/avx2_reduce.h"
#include "engine/kernels/codebook.h"

namespace xnn::kernels {
namespace {

enum class Lookup { kPermute8, kPermute16, kGather };

Lookup lookup_for(int64_t num_centroids) {
  return num_centroids <= 8 ? Lookup::kPermute8 : num_centroids <= 16 ? Lookup::kPermute16 : Lookup::kGather;
}

// Codes k..k+7 of a row (k a multiple of 8) as 32-bit lanes.
template <int Container>
inline __m256i load_codes8(const uint8_t* row, int64_t k) {
  if constexpr (Container == 8) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + k)));
  } else if constexpr (Container == 4) {
    int32_t four;
    std::memcpy(&four, row + k / 2, 4);
    const __m128i dup = _mm_shuffle_epi8(_mm_cvtsi32_si128(four), _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, -1, -1, -1, -1,
                                                                              -1, -1, -1, -1));
    const __m256i v = _mm256_srlv_epi32(_mm256_cvtepu8_epi32(dup), _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
    return _mm256_and_si256(v, _mm256_set1_epi32(0x0F));
  } else {
    int16_t two;
    std::memcpy(&two, row + k / 4, 2);
    const __m128i dup = _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<uint16_t>(two)),
                                         _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1));
    const __m256i v = _mm256_srlv_epi32(_mm256_cvtepu8_epi32(dup), _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
    return _mm256_and_si256(v, _mm256_set1_epi32(3));
  }
}

// The centroid table: `v` holds 256 floats (zero past the centroids), so every lookup stays
// inside it; lo/hi are its first 16 entries in registers.
struct Table {
  const float* v;
  __m256 lo, hi;
  explicit Table(const float* table256) : v(table256), lo(_mm256_loadu_ps(v)), hi(_mm256_loadu_ps(v + 8)) {}
};

// A zero-padded 256-entry copy of `n` centroids (per call of the GEMM dots: 1 KiB per block of
// output rows).
struct PaddedTable {
  alignas(32) float v[256];
  PaddedTable(const float* centroids, int64_t n) {
    std::memset(v, 0, sizeof v);
    std::memcpy(v, centroids, static_cast<size_t>(n) * sizeof(float));
  }
};

template <Lookup L>
inline __m256 lookup(const Table& t, __m256i idx) {
  if constexpr (L == Lookup::kPermute8) {
    return _mm256_permutevar8x32_ps(t.lo, idx);
  } else if constexpr (L == Lookup::kPermute16) {
    const __m256 lo = _mm256_permutevar8x32_ps(t.lo, idx), hi = _mm256_permutevar8x32_ps(t.hi, idx);
    return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));  // bit 3 -> sign
  } else {
    return _mm256_i32gather_ps(t.v, idx, 4);
  }
}

// Two accumulators per row of A (even and odd 8-blocks) so the FMA chains overlap even at m = 1.
template <int Container, Lookup L>
void dots(const float* a, int64_t m, const CodebookWeights& w, int64_t n0, int64_t n1, float* out) {
  const PaddedTable padded(w.centroids, w.num_centroids);
  const Table t(padded.v);
  const int64_t width = n1 - n0, k16 = w.cols & ~int64_t{15};
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* row = w.codes + n * w.row_bytes;
    __m256 acc0[4], acc1[4];
    for (int i = 0; i < 4; ++i) acc0[i] = acc1[i] = _mm256_setzero_ps();
    for (int64_t k = 0; k < k16; k += 16) {
      const __m256 q0 = lookup<L>(t, load_codes8<Container>(row, k));
      const __m256 q1 = lookup<L>(t, load_codes8<Container>(row, k + 8));
      for (int64_t i = 0; i < m; ++i) {
        const float* ai = a + i * w.cols + k;
        acc0[i] = _mm256_fmadd_ps(_mm256_loadu_ps(ai), q0, acc0[i]);
        acc1[i] = _mm256_fmadd_ps(_mm256_loadu_ps(ai + 8), q1, acc1[i]);
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      float s = hsum(_mm256_add_ps(acc0[i], acc1[i]));
      for (int64_t k = k16; k < w.cols; ++k) s += a[i * w.cols + k] * t.v[codebook_code(row, w.bits, k)];
      out[i * width + (n - n0)] = s;
    }
  }
}

template <int Container>
void dots_for(const float* a, int64_t m, const CodebookWeights& w, int64_t n0, int64_t n1, float* out) {
  switch (lookup_for(w.num_centroids)) {
    case Lookup::kPermute8: return dots<Container, Lookup::kPermute8>(a, m, w, n0, n1, out);
    case Lookup::kPermute16: return dots<Container, Lookup::kPermute16>(a, m, w, n0, n1, out);
    default: return dots<Container, Lookup::kGather>(a, m, w, n0, n1, out);
  }
}

template <int Container, Lookup L>
void decode(const uint8_t* row, int bits, int64_t cols, const Table& t, float* out) {
  const int64_t k8 = cols & ~int64_t{7};
  for (int64_t k = 0; k < k8; k += 8) _mm256_storeu_ps(out + k, lookup<L>(t, load_codes8<Container>(row, k)));
  for (int64_t k = k8; k < cols; ++k) out[k] = t.v[codebook_code(row, bits, k)];
}

template <int Container>
void decode_for(const uint8_t* row, int bits, int64_t cols, const Table& t, int64_t num_centroids, float* out) {
  switch (lookup_for(num_centroids)) {
    case Lookup::kPermute8: return decode<Container, Lookup::kPermute8>(row, bits, cols, t, out);
    case Lookup::kPermute16: return decode<Container, Lookup::kPermute16>(row, bits, cols, t, out);
    default: return decode<Container, Lookup::kGather>(row, bits, cols, t, out);
  }
}

}  // namespace

void codebook_dots__avx2(const float* a, int64_t m, const CodebookWeights& w, int64_t n0, int64_t n1, float* out) {
  switch (codebook_container_bits(w.bits)) {
    case 2: return dots_for<2>(a, m, w, n0, n1, out);
    case 4: return dots_for<4>(a, m, w, n0, n1, out);
    default: return dots_for<8>(a, m, w, n0, n1, out);
  }
}

void decode_codebook_row__avx2(const uint8_t* row, int bits, int64_t cols, const float* table256,
                               int64_t num_centroids, float* out) {
  const Table t(table256);
  switch (codebook_container_bits(bits)) {
    case 2: return decode_for<2>(row, bits, cols, t, num_centroids, out);
    case 4: return decode_for<4>(row, bits, cols, t, num_centroids, out);
    default: return decode_for<8>(row, bits, cols, t, num_centroids, out);
  }
}

}  // namespace xnn::kernels
