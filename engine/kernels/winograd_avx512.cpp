// The Winograd convolution's batched GEMM on zmm: f32_winograd_gemm_12x16__avx512 (compiled for
// AVX-512 F+VL+BW; called only when avx512_enabled()). Same operands and layout as
// f32_winograd_gemm_6x16__avx2 (winograd.h): per ξ, M[tile][cout] = Σ_cin V[tile][cin]·U[cin][cout]
// with U in 16-channel panels, so one 64-byte load of U row p feeds 12 tiles' FMAs (12
// accumulators cover the 4-cycle FMA latency at two FMAs per cycle, where the ymm kernel needs two
// registers per tile; under 8 tiles the ymm kernel runs). Each output lane gets the AVX2 kernel's
// FMAs in the same order: the same floats.
#include <immintrin.h>

#include <cstdint>

#include "engine/kernels/unroll.h"
#include "engine/kernels/winograd.h"

namespace xnn::kernels::winograd {
namespace {

template <int MR>
inline void gemm_tile(int64_t k, const float* v, int64_t ldv, const float* u, float* c, int64_t ldc, bool accumulate) {
  __m512 acc[MR];
  unroll<MR>([&](auto i) { acc[i] = accumulate ? _mm512_loadu_ps(c + i * ldc) : _mm512_setzero_ps(); });
  for (int64_t p = 0; p < k; ++p) {
    const __m512 up = _mm512_loadu_ps(u + p * 16);
    unroll<MR>([&](auto i) { acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(v[i * ldv + p]), up, acc[i]); });
  }
  unroll<MR>([&](auto i) { _mm512_storeu_ps(c + i * ldc, acc[i]); });
}

}  // namespace

void f32_winograd_gemm_12x16__avx512(int64_t tiles, int64_t k, const float* v, int64_t ldv, const float* u, float* c,
                                     int64_t ldc, bool accumulate) {
  int64_t i = 0;
  for (; i + 12 <= tiles; i += 12) gemm_tile<12>(k, v + i * ldv, ldv, u, c + i * ldc, ldc, accumulate);
  const float* vi = v + i * ldv;
  float* ci = c + i * ldc;
  // Fewer than 8 tiles left would leave fewer than 8 accumulator chains (FMA-latency bound): the
  // ymm kernel keeps two per tile.
  switch (tiles - i) {
    case 11: gemm_tile<11>(k, vi, ldv, u, ci, ldc, accumulate); break;
    case 10: gemm_tile<10>(k, vi, ldv, u, ci, ldc, accumulate); break;
    case 9: gemm_tile<9>(k, vi, ldv, u, ci, ldc, accumulate); break;
    case 8: gemm_tile<8>(k, vi, ldv, u, ci, ldc, accumulate); break;
    case 0: break;
    default: f32_winograd_gemm_6x16__avx2(tiles - i, k, vi, ldv, u, ci, ldc, accumulate); break;
  }
}

}  // namespace xnn::kernels::winograd
