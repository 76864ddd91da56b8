// AVX-512 fp32 GEMM micro-kernels (compiled with -mavx512f -mavx512vl -mavx512bw; called only
// when avx512_enabled()). Same packed B panels as AVX2 (16 columns, gemm_internal.h); A in 16-row
// panels.
//
// 16x16: 16 zmm accumulators (one 16-column row each) + the B row in zmm16. Per k step one 64-byte
// B load and 16 FMAs whose A operand is an embedded broadcast ({1to16}) of the packed A value:
// one fused uop each, 8 cycles at two FMAs per cycle, and 16 independent chains cover the 4-cycle
// FMA latency twice. The k loop is one asm block (accumulators pinned to zmm0-15, as in
// qgemm_avx512vnni.cpp: GCC 12's allocation of the intrinsics spills them once the epilogue is
// inlined); the tile is then stored to the stack and finished from there. The A panel is
// prefetched 2 KB ahead (the streamers stop at 4 KB pages and deep layers' panels come from L3):
// ResNet-18's im2col GEMM time fell ~12% relative to its Winograd layers (seven interleaved rounds).
// Each k step also prefetches the B row's next 64 bytes: for B read in place from a row-major
// matrix that is the next panel's line of the same row, a whole panel's compute (kc × 8 cycles)
// ahead of its use, which no hardware streamer follows over kc rows at once (small-M 1x1 convs
// read B in place: 16x144x3136 150 -> 127 us, 32x192x784 80 -> 68 us); for a packed panel it is
// the next k step's row, already on its way. Where the next panel's call follows at once (a task
// of one A panel), one call ahead is too close for B that comes from L3 or the other core (a
// layer's input mostly does): f32_gemm_16x16__avx512_prefetch2 reaches two panels ahead
// (SqueezeNet's 16x128x3025 squeeze, per-op profile, 1 thread 0.158 -> 0.080 ms, 2 threads 0.116
// -> 0.054; 256 bytes ahead was no better). With several A panels reading each B panel the next
// is that many calls away already, and two panels' lines of a deep B (EfficientNet-B0's 80x480x196
// projection: 60 KB) no longer fit L1 beside the current one: 6-8% slower there.
// 16x8: a panel with at most 8 valid columns (the last of N = 49, 196, ...; all of N <= 8),
// computed column-wise instead (k_loop_columns).
//
// Epilogue, per valid row: (+ C) (+ bias) (+ residual), the in-register activations with the
// scalar definitions' operations (AVX2 kernel's VecAct, 16 lanes), masked stores for edge rows
// and columns, so nothing outside C or the residual is touched. Sigmoid/Silu too are applied in
// registers (vmath_avx512.h, the AVX2 activation pass's operations on zmm), where the AVX2 kernel
// runs them over the stored rows: one call per 16-float tile row cost EfficientNet-B0's 96x12544
// SiLU conv 2.9x its ReLU time.
#include <immintrin.h>

#include <cstdint>

#include "engine/kernels/gemm_internal.h"
#include "engine/kernels/vmath_avx512.h"

namespace xnn::kernels::internal {
namespace {

// Per accumulator row I (the assembler evaluates I*4): zero it, one FMA with row I's A value.
#define XNN_ZERO(R, I) "vpxord %%" R #I ", %%" R #I ", %%" R #I "\n\t"
#define XNN_FMA(R, B, I) "vfmadd231ps " #I "*4(%[a])" B ", %%" R "16, %%" R #I "\n\t"
#define XNN_STORE(R, W, I) "vmovups %%" R #I ", " #I "*" #W "(%[t])\n\t"
#define XNN_ROWS(OP, ...)                                                                                        \
  OP(__VA_ARGS__, 0) OP(__VA_ARGS__, 1) OP(__VA_ARGS__, 2) OP(__VA_ARGS__, 3) OP(__VA_ARGS__, 4) OP(__VA_ARGS__, 5) \
  OP(__VA_ARGS__, 6) OP(__VA_ARGS__, 7) OP(__VA_ARGS__, 8) OP(__VA_ARGS__, 9) OP(__VA_ARGS__, 10)                 \
  OP(__VA_ARGS__, 11) OP(__VA_ARGS__, 12) OP(__VA_ARGS__, 13) OP(__VA_ARGS__, 14) OP(__VA_ARGS__, 15)
#define XNN_VREGS                                                                                                \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", \
      "xmm14", "xmm15", "xmm16"

// tile[16][16] = A panel (kc × 16, k-major) · B (kc rows of 16, b_stride floats apart). Each k
// step prefetches the line b_prefetch_bytes past its B row (the file comment says why).
inline void k_loop_16x16(size_t kc, const float* a, const float* b, int64_t b_bytes, int64_t b_prefetch_bytes,
                         float* tile) {
  asm volatile(XNN_ROWS(XNN_ZERO, "zmm")
               "test %[k], %[k]\n\t"
               "jz 2f\n\t"
               "1:\n\t"
               "vmovups (%[b]), %%zmm16\n\t"
               "prefetcht0 2048(%[a])\n\t"
               "prefetcht0 (%[b], %[pf])\n\t"
               XNN_ROWS(XNN_FMA, "zmm", "%{1to16%}")
               "add $64, %[a]\n\t"
               "add %[bs], %[b]\n\t"
               "dec %[k]\n\t"
               "jnz 1b\n\t"
               "2:\n\t"
               XNN_ROWS(XNN_STORE, "zmm", 64)
               : [a] "+r"(a), [b] "+r"(b), [k] "+r"(kc)
               : [bs] "r"(b_bytes), [pf] "r"(b_prefetch_bytes), [t] "r"(tile)
               : "cc", "memory", XNN_VREGS);
}

#undef XNN_ZERO
#undef XNN_FMA
#undef XNN_STORE
#undef XNN_ROWS
#undef XNN_VREGS

// In-register activations, operand for operand as apply_activation_scalar (and the AVX2 kernel's
// VecAct; Sigmoid/Silu as the AVX2 activation pass): max/min return their second operand when
// either is NaN.
struct VecAct16 {
  ActKind kind;
  __m512 alpha, beta;
  explicit VecAct16(const Activation* act)
      : kind(act ? act->kind : ActKind::kNone), alpha(_mm512_set1_ps(act ? act->alpha : 0.0f)),
        beta(_mm512_set1_ps(act ? act->beta : 0.0f)) {}
  static __m512 unit_clamp(__m512 t) { return _mm512_min_ps(_mm512_set1_ps(1.0f), _mm512_max_ps(_mm512_setzero_ps(), t)); }
  __m512 operator()(__m512 x) const {
    switch (kind) {
      case ActKind::kRelu: return _mm512_max_ps(x, _mm512_setzero_ps());
      case ActKind::kClip: return _mm512_min_ps(beta, _mm512_max_ps(alpha, x));
      case ActKind::kLeakyRelu: {
        const __mmask16 ge = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
        return _mm512_mask_blend_ps(ge, _mm512_mul_ps(x, alpha), x);
      }
      case ActKind::kHardSwish:  // divide (not multiply by 1/6), as the scalar definition
        return _mm512_mul_ps(x, unit_clamp(_mm512_add_ps(_mm512_div_ps(x, _mm512_set1_ps(6.0f)), _mm512_set1_ps(0.5f))));
      case ActKind::kHardSigmoid: return unit_clamp(_mm512_add_ps(_mm512_mul_ps(alpha, x), beta));
      case ActKind::kSigmoid: return vmath512::sigmoid_ps(x);
      case ActKind::kSilu: return vmath512::silu_ps(x);
      default: return x;
    }
  }
};

// Finishes rows [0, mr) of a stack tile (row i at tile + i·ldt) into C, nr <= 16 valid columns.
inline void finish(const float* tile, int64_t ldt, size_t mr, size_t nr, float* c, int64_t ldc, bool accumulate,
                   const GemmTileEpilogue& ep) {
  const __mmask16 mask = static_cast<__mmask16>((1u << nr) - 1);
  const VecAct16 act(ep.act);
  const bool in_reg_act = ep.act && act.kind != ActKind::kNone;
  for (size_t i = 0; i < mr; ++i) {
    float* crow = c + static_cast<int64_t>(i) * ldc;
    __m512 x = _mm512_maskz_loadu_ps(mask, tile + static_cast<int64_t>(i) * ldt);
    if (accumulate) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, crow));
    if (ep.bias) x = _mm512_add_ps(x, _mm512_set1_ps(ep.bias[i]));
    if (ep.residual) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, ep.residual + static_cast<int64_t>(i) * ep.ldr));
    if (in_reg_act) x = act(x);
    _mm512_mask_storeu_ps(crow, mask, x);
  }
}


// A panel of nr <= 8 valid columns, turned around: one accumulator per column holding its 16
// rows, so every FMA lane is useful. Per k step one zmm load of the packed A column and NR FMAs
// with B[k][j] broadcast, where one accumulator per row (the 16x16 layout on ymm) spends 16
// FMAs of 8 lanes, most of them padding for a narrow panel: 2x to 16x fewer FMAs for N = 49's
// or N = 196's last panel and for 2×2 planes (N = 4). Only columns [0, NR) of each B row are
// read, so the driver reads a partial panel in place instead of packing it (zero-padded) first.
// NR <= 4 splits k into even and odd steps (8 independent chains cover the FMA latency) and adds
// the halves at the end.
template <int NR>
inline void k_loop_columns(size_t kc, const float* a, const float* b, int64_t b_stride, float* tile) {
  constexpr int kChains = NR <= 4 ? 2 : 1;
  __m512 acc[kChains][NR];
#pragma GCC unroll 2
  for (int h = 0; h < kChains; ++h) {
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[h][j] = _mm512_setzero_ps();
  }
  size_t k = 0;
  for (; k + kChains <= kc; k += kChains) {
#pragma GCC unroll 2
    for (int h = 0; h < kChains; ++h) {
      const __m512 av = _mm512_loadu_ps(a + (k + h) * 16);
      const float* brow = b + static_cast<int64_t>(k + h) * b_stride;
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) acc[h][j] = _mm512_fmadd_ps(av, _mm512_set1_ps(brow[j]), acc[h][j]);
    }
  }
  for (; k < kc; ++k) {
    const __m512 av = _mm512_loadu_ps(a + k * 16);
    const float* brow = b + static_cast<int64_t>(k) * b_stride;
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[0][j] = _mm512_fmadd_ps(av, _mm512_set1_ps(brow[j]), acc[0][j]);
  }
  alignas(64) float cols[NR][16];
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) {
    __m512 v = acc[0][j];
    if constexpr (kChains == 2) v = _mm512_add_ps(v, acc[1][j]);
    _mm512_store_ps(cols[j], v);
  }
  for (int i = 0; i < 16; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) tile[i * NR + j] = cols[j][i];
  }
}

template <int NR>
void narrow_tile(size_t mr, size_t kc, const float* a, const float* b, int64_t b_stride, float* c, int64_t ldc,
                 bool accumulate, const GemmTileEpilogue& ep) {
  alignas(64) float tile[16 * NR];
  k_loop_columns<NR>(kc, a, b, b_stride, tile);
  finish(tile, NR, mr, NR, c, ldc, accumulate, ep);
}

}  // namespace

XNN_GEMM_UKERNEL(f32_gemm_16x16__avx512) {
  alignas(64) float tile[16 * 16];
  k_loop_16x16(kc, a, b, b_stride * static_cast<int64_t>(sizeof(float)), 64, tile);
  finish(tile, 16, mr, nr, c, ldc, accumulate, ep);
}

XNN_GEMM_UKERNEL(f32_gemm_16x16__avx512_prefetch2) {
  alignas(64) float tile[16 * 16];
  const int64_t ahead = b_stride == 16 ? 64 : 128;  // a packed panel's rows are contiguous already
  k_loop_16x16(kc, a, b, b_stride * static_cast<int64_t>(sizeof(float)), ahead, tile);
  finish(tile, 16, mr, nr, c, ldc, accumulate, ep);
}

XNN_GEMM_UKERNEL(f32_gemm_16x8__avx512) {
  switch (nr) {
    case 1: return narrow_tile<1>(mr, kc, a, b, b_stride, c, ldc, accumulate, ep);
    case 2: return narrow_tile<2>(mr, kc, a, b, b_stride, c, ldc, accumulate, ep);
    case 3: return narrow_tile<3>(mr, kc, a, b, b_stride, c, ldc, accumulate, ep);
    case 4: return narrow_tile<4>(mr, kc, a, b, b_stride, c, ldc, accumulate, ep);
    case 5: return narrow_tile<5>(mr, kc, a, b, b_stride, c, ldc, accumulate, ep);
    case 6: return narrow_tile<6>(mr, kc, a, b, b_stride, c, ldc, accumulate, ep);
    case 7: return narrow_tile<7>(mr, kc, a, b, b_stride, c, ldc, accumulate, ep);
    default: return narrow_tile<8>(mr, kc, a, b, b_stride, c, ldc, accumulate, ep);
  }
}

}  // namespace xnn::kernels::internal
