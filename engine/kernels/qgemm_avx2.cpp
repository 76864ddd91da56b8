// AVX2 int8 GEMM micro-kernels and X packers (compiled with -mavx2; called only after cpuid says
// so). Layouts and the exactness conditions are in qgemm.h / qgemm_internal.h.
//
// Without VNNI a multiply-accumulate is two instructions (qgemm_avxvnni.cpp has the one-instruction
// kernel for CPUs with AVX-VNNI):
//   c2: vpmaddwd(x pairs int16, w pair int16) -> 8 int32 (16 products), vpaddd into the tile.
//       Exact for all inputs. 6x16: 12 accumulators + 2 X vectors + 1 broadcast + 1 product = 16
//       ymm; per k pair 2 loads, 6 broadcasts, 12 vpmaddwd (ports 0/1) and 12 vpaddd (0/1/5).
//   c4: vpmaddubsw(x quads u8, w quad s8) -> 16 int16 pair sums (32 products), vpmaddwd(·, 1)
//       -> 8 int32, vpaddd: half the port-0/1 work per product of c2. Used only for weights whose
//       pairs cannot saturate (checked at packing). 4x16: 8 accumulators + the constant 1s leave
//       room for the two temporaries without spills.
// The epilogue requantises in registers, with the same float operations as requantize() and
// the lower clamp moved to the bytes (store_row proves the bytes equal), and stores uint8; edge
// tiles go through a stack row so nothing outside Y is written.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/kernels/qgemm_avx2_epilogue.h"
#include "engine/kernels/qgemm_internal.h"

namespace xnn::kernels::internal {
namespace {

using avx2::load32;
using avx2::store_tile;

// c2: NV vectors of 8 columns (NV = 1 reads the first half of a 16-column panel).
template <int MR, int NV>
inline void qgemm_c2(size_t mr, size_t nr, size_t groups, const int16_t* w, const int16_t* x, const QTileParams& p,
                     uint8_t* y, int64_t ldy) {
  __m256i acc[MR][NV];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    const __m256i init = _mm256_set1_epi32(p.init[i]);
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[i][v] = init;
  }
#pragma GCC unroll 2
  for (size_t g = groups; g != 0; --g) {
    __m256i xv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) xv[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(x + 16 * v));
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256i wi = _mm256_set1_epi32(load32(w + 2 * i));
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_add_epi32(acc[i][v], _mm256_madd_epi16(xv[v], wi));
    }
    w += 2 * MR;
    x += 2 * kAvx2Nr;
  }
  store_tile<MR, NV>(acc, mr, nr, p, y, ldy);
}

// c4: vpmaddubsw's first operand is the unsigned one (X), the second the signed one (W).
template <int MR, int NV>
inline void qgemm_c4(size_t mr, size_t nr, size_t groups, const int8_t* w, const uint8_t* x, const QTileParams& p,
                     uint8_t* y, int64_t ldy) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[MR][NV];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    const __m256i init = _mm256_set1_epi32(p.init[i]);
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[i][v] = init;
  }
#pragma GCC unroll 2
  for (size_t g = groups; g != 0; --g) {
    __m256i xv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) xv[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(x + 32 * v));
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256i wi = _mm256_set1_epi32(load32(w + 4 * i));
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) {
        const __m256i pairs = _mm256_maddubs_epi16(xv[v], wi);
        acc[i][v] = _mm256_add_epi32(acc[i][v], _mm256_madd_epi16(pairs, ones));
      }
    }
    w += 4 * MR;
    x += 4 * kAvx2Nr;
  }
  store_tile<MR, NV>(acc, mr, nr, p, y, ldy);
}

// A panel with cols < 16 valid columns (the block's last), element by element with zero fill.
template <int KU, typename T>
void pack_partial_panel(const QXRows& x, int64_t k, int64_t col0, int64_t cols, T* out) {
  const int64_t groups = (k + KU - 1) / KU;
  for (int64_t g = 0; g < groups; ++g, out += kAvx2Nr * KU) {
    for (int u = 0; u < KU; ++u) {
      const int64_t kk = g * KU + u;
      for (int64_t c = 0; c < kAvx2Nr; ++c)
        out[c * KU + u] = static_cast<T>(kk < k && c < cols ? x.row(kk)[col0 + c] : 0);
    }
  }
}

inline __m128i load_row16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

}  // namespace

XNN_QGEMM_UKERNEL(qs8_gemm_6x16c2__avx2) {
  qgemm_c2<kAvx2C2Mr, 2>(mr, nr, groups, static_cast<const int16_t*>(w), static_cast<const int16_t*>(x), p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_6x8c2__avx2) {
  qgemm_c2<kAvx2C2Mr, 1>(mr, nr, groups, static_cast<const int16_t*>(w), static_cast<const int16_t*>(x), p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_4x16c4__avx2) {
  qgemm_c4<kAvx2C4Mr, 2>(mr, nr, groups, static_cast<const int8_t*>(w), static_cast<const uint8_t*>(x), p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_4x8c4__avx2) {
  qgemm_c4<kAvx2C4Mr, 1>(mr, nr, groups, static_cast<const int8_t*>(w), static_cast<const uint8_t*>(x), p, y, ldy);
}

// Full panels take 4 groups (8 rows of X) per visit: 8 sequential read streams, and each panel
// receives 256 contiguous bytes at a time instead of one group per panel in turn (panels a
// multiple of 4 KiB apart would then contend for the same L1 sets, as in the fp32 packer).
XNN_QPACK_X(qs8_pack_x_16c2__avx2) {
  auto* out = static_cast<int16_t*>(dst);
  const int64_t groups = (k + 1) / 2;
  const int64_t panel = groups * 2 * kAvx2Nr;  // int16 per panel
  const int64_t full_panels = nc / kAvx2Nr;
  const __m128i zero = _mm_setzero_si128();
  for (int64_t g0 = 0; g0 < groups; g0 += 4) {
    const int64_t gn = std::min<int64_t>(4, groups - g0);
    const uint8_t* rows[8] = {};  // the (up to) 8 rows of these groups, at column j0
    for (int64_t i = 0; i < 2 * gn && 2 * g0 + i < k; ++i) rows[i] = x.row(2 * g0 + i) + j0;
    int16_t* o = out + g0 * 2 * kAvx2Nr;
    for (int64_t q = 0; q < full_panels; ++q, o += panel) {
      const int64_t col = q * kAvx2Nr;
      for (int64_t gg = 0; gg < gn; ++gg) {
        const int64_t row = 2 * (g0 + gg);
        const __m128i r0 = load_row16(rows[2 * gg] + col);
        const __m128i r1 = row + 1 < k ? load_row16(rows[2 * gg + 1] + col) : zero;
        // Byte pairs (r0[c], r1[c]) widened to int16: one 32-bit lane per column.
        _mm256_store_si256(reinterpret_cast<__m256i*>(o + gg * 32), _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(r0, r1)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(o + gg * 32 + 16),
                           _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(r0, r1)));
      }
    }
  }
  if (full_panels * kAvx2Nr < nc) {
    pack_partial_panel<2>(x, k, j0 + full_panels * kAvx2Nr, nc - full_panels * kAvx2Nr,
                          out + full_panels * panel);
  }
}

XNN_QPACK_X(qs8_pack_x_16c4__avx2) {
  auto* out = static_cast<uint8_t*>(dst);
  const int64_t groups = (k + 3) / 4;
  const int64_t panel = groups * 4 * kAvx2Nr;  // bytes per panel
  const int64_t full_panels = nc / kAvx2Nr;
  const __m128i zero = _mm_setzero_si128();
  for (int64_t g0 = 0; g0 < groups; g0 += 2) {
    const int64_t gn = std::min<int64_t>(2, groups - g0);
    const uint8_t* rows[8] = {};  // the (up to) 8 rows of these groups, at column j0
    for (int64_t i = 0; i < 4 * gn && 4 * g0 + i < k; ++i) rows[i] = x.row(4 * g0 + i) + j0;
    uint8_t* o = out + g0 * 4 * kAvx2Nr;
    for (int64_t q = 0; q < full_panels; ++q, o += panel) {
      const int64_t col = q * kAvx2Nr;
      for (int64_t gg = 0; gg < gn; ++gg) {
        const int64_t row = 4 * (g0 + gg);
        const uint8_t* const* r = rows + 4 * gg;
        const __m128i r0 = load_row16(r[0] + col);
        const __m128i r1 = row + 1 < k ? load_row16(r[1] + col) : zero;
        const __m128i r2 = row + 2 < k ? load_row16(r[2] + col) : zero;
        const __m128i r3 = row + 3 < k ? load_row16(r[3] + col) : zero;
        // (r0, r1) and (r2, r3) byte pairs, then pairs of pairs: 4 rows of one column per lane.
        const __m128i a_lo = _mm_unpacklo_epi8(r0, r1), a_hi = _mm_unpackhi_epi8(r0, r1);
        const __m128i b_lo = _mm_unpacklo_epi8(r2, r3), b_hi = _mm_unpackhi_epi8(r2, r3);
        auto* d = reinterpret_cast<__m128i*>(o + gg * 64);
        _mm_store_si128(d + 0, _mm_unpacklo_epi16(a_lo, b_lo));
        _mm_store_si128(d + 1, _mm_unpackhi_epi16(a_lo, b_lo));
        _mm_store_si128(d + 2, _mm_unpacklo_epi16(a_hi, b_hi));
        _mm_store_si128(d + 3, _mm_unpackhi_epi16(a_hi, b_hi));
      }
    }
  }
  if (full_panels * kAvx2Nr < nc) {
    pack_partial_panel<4>(x, k, j0 + full_panels * kAvx2Nr, nc - full_panels * kAvx2Nr,
                          out + full_panels * panel);
  }
}

}  // namespace xnn::kernels::internal
