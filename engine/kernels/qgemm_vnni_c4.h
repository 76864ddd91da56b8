// The VNNI int8 GEMM micro-kernel body, shared by the AVX-VNNI (qgemm_avxvnni.cpp, VEX) and
// AVX512-VNNI+VL (qgemm_avx512vnni.cpp, EVEX on ymm) kernel files: the two encodings of vpdpbusd
// do the same operation, so the kernels differ only in the instruction the including file passes
// as `dpbusd`. Include only from those files; unnamed namespace for the reason given in
// qgemm_avx2_epilogue.h (each file gets its own copy built with its own target flags).
//
// vpdpbusd multiplies 4 uint8 X values by 4 int8 W values of one 32-bit lane and adds the four
// products to the int32 lane in one instruction, without the int16 intermediate that makes
// vpmaddubsw saturate. So every int8 weight is exact here (no 7-bit condition) and a multiply-add
// of 32 products is one instruction instead of three (vpmaddubsw, vpmaddwd, vpaddd).
// 6x16: 12 accumulators + 2 X vectors + 1 weight broadcast = 15 ymm registers. The loops are
// unrolled at compile time (unroll.h) so the accumulators stay in registers.
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "engine/kernels/qgemm_avx2_epilogue.h"
#include "engine/kernels/qgemm_internal.h"
#include "engine/kernels/unroll.h"

namespace xnn::kernels::internal {
namespace {  // NOLINT: one copy per including kernel file, see above

template <int MR, int NV, typename Dot>
inline void qgemm_c4_vnni(Dot dpbusd, size_t mr, size_t nr, size_t groups, const int8_t* w, const uint8_t* x,
                          const QTileParams& p, uint8_t* y, int64_t ldy) {
  __m256i acc[MR][NV];
  unroll<MR>([&](auto i) {
    const __m256i init = _mm256_set1_epi32(p.init[i]);
    unroll<NV>([&](auto v) { acc[i][v] = init; });
  });
  for (size_t g = groups; g != 0; --g) {
    __m256i xv[NV];
    unroll<NV>([&](auto v) { xv[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(x + 32 * v)); });
    unroll<MR>([&](auto i) {
      const __m256i wi = _mm256_set1_epi32(avx2::load32(w + 4 * i));
      unroll<NV>([&](auto v) { acc[i][v] = dpbusd(acc[i][v], xv[v], wi); });  // u8 X, s8 W
    });
    w += 4 * MR;
    x += 4 * kAvx2Nr;
  }
  avx2::store_tile<MR, NV>(acc, mr, nr, p, y, ldy);
}

}  // namespace
}  // namespace xnn::kernels::internal
