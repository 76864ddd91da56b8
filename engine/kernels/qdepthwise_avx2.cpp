// AVX2 int8 depthwise row kernels (declared in qdepthwise.h, where the pair layout is explained;
// the driver is qdepthwise.cpp).
//
// Per tap pair one vpmaddwd (16 exact int16 products summed pairwise into 8 int32) and one vpaddd.
// The epilogue requantises with requantize()'s float operations, the lower clamp moved to the
// bytes (VecRequant), so the bytes equal the reference's.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/kernels/byte_runs.h"
#include "engine/kernels/qdepthwise.h"

namespace xnn::kernels::internal {
namespace {

// requantize() on 8 lanes, with the lower clamp moved to the bytes as in qgemm_avx2.cpp's
// store_row (which proves the bytes equal): round(min(acc · multiplier, upper)) here, then
// saturating packs, + zero point, max(·, qmin) in the finish_* functions.
struct VecRequant {
  __m256 multiplier, upper;
  __m256i zero_point;  // int16 lanes
  __m128i qmin;        // uint8 lanes
  explicit VecRequant(const QDwRows& a)
      : multiplier(_mm256_set1_ps(a.multiplier)), upper(_mm256_set1_ps(a.upper)),
        zero_point(_mm256_set1_epi16(static_cast<int16_t>(a.zero_point))),
        qmin(_mm_set1_epi8(static_cast<char>(a.qmin))) {}
  __m256i round(__m256i acc) const {
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc), multiplier), upper));
  }
  // 16 int16 (outputs 0-7 in the low 128-bit lane, 8-15 in the high one) -> 16 bytes.
  __m128i finish16(__m256i s) const {
    s = _mm256_adds_epi16(s, zero_point);
    return _mm_max_epu8(_mm_packus_epi16(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1)), qmin);
  }
};

inline void store_bytes(__m128i b, uint8_t* out, int64_t valid) {
  if (valid >= 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), b);
  } else {
    alignas(16) uint8_t t[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(t), b);
    std::memcpy(out, t, static_cast<size_t>(valid));
  }
}

// acc + vpmaddwd(v, w). The empty asm pins acc to a register after each step: left alone, GCC
// reassociates the fully unrolled sums of a tile into trees of products and spills half of
// them (measured 1.6× slower for 3×3 stride 1).
inline __m256i madd_add(__m256i acc, __m256i v, __m256i w) {
  acc = _mm256_add_epi32(acc, _mm256_madd_epi16(v, w));
  __asm__("" : "+x"(acc));
  return acc;
}

// 16 padded uint8 columns widened to int16 (one vpmovzxbw with a memory operand).
inline __m256i load16(const uint8_t* p) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Stride 1: R output rows × 16 outputs from column x; acc[r][0] holds the even outputs
// x, x+2, ..., acc[r][1] the odd ones. Padded row i of the group feeds output row r through
// kernel row kh = i − r.
template <int K, int R>
inline __attribute__((always_inline)) void tile_s1(const QDwRows& a, const VecRequant& rq, int64_t x, int64_t valid) {
  constexpr int T = (K + 1) / 2;
  __m256i acc[R][2];
  const __m256i init = _mm256_set1_epi32(a.init);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = init;
#pragma GCC unroll 8
  for (int i = 0; i < R + K - 1; ++i) {
    const uint8_t* row = a.in + i * a.in_stride + x;
    __m256i v[T];
#pragma GCC unroll 3
    for (int t = 0; t < T; ++t) v[t] = load16(row + 2 * t);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const int kh = i - r;
      if (kh < 0 || kh >= K) continue;
      const int32_t* wp = a.weight_pairs + kh * 2 * T;
#pragma GCC unroll 3
      for (int t = 0; t < T; ++t) {
        acc[r][0] = madd_add(acc[r][0], v[t], _mm256_set1_epi32(wp[t]));
        acc[r][1] = madd_add(acc[r][1], v[t], _mm256_set1_epi32(wp[T + t]));
      }
    }
  }
  // packssdw gives, per 128-bit lane, 4 even then 4 odd outputs; the byte shuffle interleaves
  // them into output order (outputs 0-7 in the low lane, 8-15 in the high one).
  const __m256i interleave = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,  //
                                              0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const __m256i s = _mm256_packs_epi32(rq.round(acc[r][0]), rq.round(acc[r][1]));
    store_bytes(rq.finish16(_mm256_shuffle_epi8(s, interleave)), a.out + r * a.out_w + x, valid);
  }
}

// Stride 2: R output rows × 8·NV outputs from column x; padded row i feeds output row r through
// kernel row kh = i − 2r.
template <int K, int R, int NV>
inline __attribute__((always_inline)) void tile_s2(const QDwRows& a, const VecRequant& rq, int64_t x, int64_t valid) {
  constexpr int T = (K + 1) / 2;
  __m256i acc[R][NV];
  const __m256i init = _mm256_set1_epi32(a.init);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) acc[r][j] = init;
  }
#pragma GCC unroll 12
  for (int i = 0; i < 2 * (R - 1) + K; ++i) {
    const uint8_t* row = a.in + i * a.in_stride + 2 * x;
    __m256i v[T][NV];
#pragma GCC unroll 3
    for (int t = 0; t < T; ++t) {
#pragma GCC unroll 2
      for (int j = 0; j < NV; ++j) v[t][j] = load16(row + 2 * t + 16 * j);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const int kh = i - 2 * r;
      if (kh < 0 || kh >= K) continue;
      const int32_t* wp = a.weight_pairs + kh * 2 * T;
#pragma GCC unroll 3
      for (int t = 0; t < T; ++t) {
        const __m256i w = _mm256_set1_epi32(wp[t]);
#pragma GCC unroll 2
        for (int j = 0; j < NV; ++j) acc[r][j] = madd_add(acc[r][j], v[t][j], w);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    uint8_t* out = a.out + r * a.out_w + x;
    if constexpr (NV == 2) {
      // packssdw interleaves 128-bit lanes; the permute restores order before packing to bytes.
      const __m256i s = _mm256_packs_epi32(rq.round(acc[r][0]), rq.round(acc[r][1]));
      store_bytes(rq.finish16(_mm256_permute4x64_epi64(s, 0xD8)), out, valid);
    } else {
      // Outputs 0-3 and 4-7 land in bytes 0-3 and 8-11 (the zeros fill the rest); valid <= 8.
      const __m256i s = _mm256_packs_epi32(rq.round(acc[r][0]), _mm256_setzero_si256());
      store_bytes(_mm_shuffle_epi32(rq.finish16(s), _MM_SHUFFLE(3, 1, 2, 0)), out, valid);
    }
  }
}

// R output rows of one channel across the whole width.
template <int K, int S, int R>
inline __attribute__((always_inline)) void group(const QDwRows& a, const VecRequant& rq) {
  int64_t x = 0;
  if constexpr (S == 1) {
    for (; x < a.out_w; x += 16) tile_s1<K, R>(a, rq, x, std::min<int64_t>(16, a.out_w - x));
  } else {
    for (; x + 16 <= a.out_w; x += 16) tile_s2<K, R, 2>(a, rq, x, 16);
    if (a.out_w - x > 8) {
      tile_s2<K, R, 2>(a, rq, x, a.out_w - x);
    } else if (x < a.out_w) {
      tile_s2<K, R, 1>(a, rq, x, a.out_w - x);
    }
  }
}

template <int K, int S>
void rows_kernel(const QDwRows& rows) {
  const VecRequant rq(rows);
  QDwRows a = rows;
  const auto advance = [&](int64_t r) {
    a.in += r * S * a.in_stride;
    a.out += r * a.out_w;
  };
  int64_t r = 0;
  for (; r + 4 <= rows.rows; r += 4, advance(4)) group<K, S, 4>(a, rq);
  switch (rows.rows - r) {
    case 1: group<K, S, 1>(a, rq); break;
    case 2: group<K, S, 2>(a, rq); break;
    case 3: group<K, S, 3>(a, rq); break;
    default: break;
  }
}

}  // namespace

void qs8_dwconv_rows__avx2(const QDwRows& a) {
  if (a.kernel == 3) return a.stride == 1 ? rows_kernel<3, 1>(a) : rows_kernel<3, 2>(a);
  if (a.kernel == 5) return a.stride == 1 ? rows_kernel<5, 1>(a) : rows_kernel<5, 2>(a);
  return a.stride == 1 ? rows_kernel<7, 1>(a) : rows_kernel<7, 2>(a);
}

void qs8_dwconv_pad_rows__avx2(const uint8_t* plane, int64_t in_h, int64_t in_w, int64_t pad_l, uint8_t x_zero_point,
                               int64_t ih, int64_t count, int64_t width, uint8_t* dst) {
  const __m128i fill = _mm_set1_epi8(static_cast<char>(x_zero_point));
  const int64_t left = std::min(pad_l, width);
  const int64_t copy = std::clamp<int64_t>(width - left, 0, in_w);
  for (int64_t r = 0; r < count; ++r, ++ih, dst += width) {
    for (int64_t q = 0; q < width; q += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + q), fill);
    if (ih >= 0 && ih < in_h) copy_byte_run(dst + left, plane + ih * in_w, copy);
  }
}

}  // namespace xnn::kernels::internal
