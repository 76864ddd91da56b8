// AVX512-VNNI int8 depthwise row kernels, qs8_dwconv*__avx512vnni (declared in qdepthwise.h,
// driver in qdepthwise.cpp; this file is compiled for AVX-512 with VNNI and VBMI, the *_avx512vbmi
// rule, and called only when qs8_dwconv_vnni_enabled()).
//
// One zmm holds 16 outputs of one row as int32 lanes. vpdpbusd adds to each lane the products of
// 4 uint8 inputs and 4 int8 weights, so a lane's 4 bytes must be the 4 taps of its output:
// for output x (stride s) and tap quad q of a kernel row, the padded bytes s·x + 4q + j, j < 4
// (taps past the kernel width get weight 0). One 64-byte load of a padded row at column s·x0
// holds them for all 16 outputs (the largest offset, s·15 + 4q + 3, is at most 37), and one
// vpermb (VBMI: a byte permute across the whole register) arranges them: index byte 4i + j =
// s·i + 4q + j. So a kernel row costs one permute and one vpdpbusd per quad per 16 outputs, where
// the AVX2 kernel widens to int16 and needs two vpmaddwd per tap pair. Each padded row is loaded
// and permuted once for the R output rows of a group that use it (kernel row kh = i − s·r), as in
// the AVX2 kernel. Padding holds x_zp and the accumulators start at bias − x_zp·Σw, so the result
// is exact (int32, no saturation) and the bytes are requantize()'s (requant_avx512.h).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "engine/kernels/qdepthwise.h"
#include "engine/kernels/requant_avx512.h"
#include "engine/kernels/unroll.h"

namespace xnn::kernels::internal {
namespace {

// vpermb indices of quad q for stride S: byte 4i + j <- s·i + 4q + j.
template <int S>
inline __m512i quad_index(int q) {
  alignas(64) uint8_t idx[64];
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 4; ++j) idx[4 * i + j] = static_cast<uint8_t>(S * i + 4 * q + j);
  return _mm512_load_si512(idx);
}

// R output rows × 16 outputs from column x.
template <int K, int S, int R>
inline __attribute__((always_inline)) void tile(const QDwRows& a, const avx512::Requant16& rq,
                                                         const __m512i (&index)[(K + 3) / 4], int64_t x,
                                                         int64_t valid) {
  constexpr int Q = (K + 3) / 4;
  __m512i acc[R];
  unroll<R>([&](auto r) { acc[r] = _mm512_set1_epi32(a.init); });
  unroll<S * (R - 1) + K>([&](auto i) {
    const __m512i v = _mm512_loadu_si512(a.in + i * a.in_stride + S * x);
    unroll<Q>([&](auto q) {
      const __m512i taps = _mm512_permutexvar_epi8(index[q], v);
      unroll<R>([&](auto r) {
        constexpr int kh = decltype(i)::value - S * decltype(r)::value;
        if constexpr (kh >= 0 && kh < K) {
          acc[r] = _mm512_dpbusd_epi32(acc[r], taps, _mm512_set1_epi32(a.weight_quads[kh * Q + q]));
        }
      });
    });
  });
  unroll<R>([&](auto r) { avx512::store_bytes16(a.out + r * a.out_w + x, rq(acc[r]), valid); });
}

template <int K, int S, int R>
inline __attribute__((always_inline)) void group(const QDwRows& a, const avx512::Requant16& rq,
                                                          const __m512i (&index)[(K + 3) / 4]) {
  for (int64_t x = 0; x < a.out_w; x += 16) tile<K, S, R>(a, rq, index, x, std::min<int64_t>(16, a.out_w - x));
}

template <int K, int S>
void rows_kernel(const QDwRows& rows) {
  constexpr int Q = (K + 3) / 4;
  __m512i index[Q];
  for (int q = 0; q < Q; ++q) index[q] = quad_index<S>(q);
  const avx512::Requant16 rq(rows.multiplier, rows.upper, rows.zero_point, rows.qmin);
  QDwRows a = rows;
  int64_t r = 0;
  for (; r + 4 <= rows.rows; r += 4) {
    group<K, S, 4>(a, rq, index);
    a.in += 4 * S * a.in_stride;
    a.out += 4 * a.out_w;
  }
  switch (rows.rows - r) {
    case 1: group<K, S, 1>(a, rq, index); break;
    case 2: group<K, S, 2>(a, rq, index); break;
    case 3: group<K, S, 3>(a, rq, index); break;
    default: break;
  }
}

}  // namespace

void qs8_dwconv_rows__avx512vnni(const QDwRows& a) {
  if (a.kernel == 3) return a.stride == 1 ? rows_kernel<3, 1>(a) : rows_kernel<3, 2>(a);
  if (a.kernel == 5) return a.stride == 1 ? rows_kernel<5, 1>(a) : rows_kernel<5, 2>(a);
  return a.stride == 1 ? rows_kernel<7, 1>(a) : rows_kernel<7, 2>(a);
}

}  // namespace xnn::kernels::internal
