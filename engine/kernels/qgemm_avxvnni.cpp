// Int8 GEMM micro-kernels for CPUs with AVX-VNNI (compiled with -mavx2 -mavxvnni; called only
// after cpuid says so and XNN_ISA allows it, see avx_vnni_enabled()). Layout and semantics are
// those of qgemm.h; the X panels are the AVX2 c4 ones (qs8_pack_x_16c4__avx2).
//
// vpdpbusd multiplies 4 uint8 X values by 4 int8 W values of one 32-bit lane and adds the four
// products to the int32 lane in one instruction, without the int16 intermediate that makes
// vpmaddubsw saturate. So every int8 weight is exact here (no 7-bit condition) and a multiply-add
// of 32 products is one instruction instead of three (vpmaddubsw, vpmaddwd, vpaddd).
// 6x16: 12 accumulators + 2 X vectors + 1 weight broadcast = 15 ymm registers.
#include <immintrin.h>

#include <cstdint>

#include "engine/kernels/qgemm_avx2_epilogue.h"
#include "engine/kernels/qgemm_internal.h"

namespace xnn::kernels::internal {
namespace {

template <int MR, int NV>
inline void qgemm_c4_vnni(size_t mr, size_t nr, size_t groups, const int8_t* w, const uint8_t* x,
                          const QTileParams& p, uint8_t* y, int64_t ldy) {
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
      const __m256i wi = _mm256_set1_epi32(avx2::load32(w + 4 * i));
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_dpbusd_avx_epi32(acc[i][v], xv[v], wi);  // u8 X, s8 W
    }
    w += 4 * MR;
    x += 4 * kAvx2Nr;
  }
  avx2::store_tile<MR, NV>(acc, mr, nr, p, y, ldy);
}

}  // namespace

XNN_QGEMM_UKERNEL(qs8_gemm_6x16c4__avxvnni) {
  qgemm_c4_vnni<kVnniMr, 2>(mr, nr, groups, static_cast<const int8_t*>(w), static_cast<const uint8_t*>(x), p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_6x8c4__avxvnni) {
  qgemm_c4_vnni<kVnniMr, 1>(mr, nr, groups, static_cast<const int8_t*>(w), static_cast<const uint8_t*>(x), p, y, ldy);
}

}  // namespace xnn::kernels::internal
