// AVX2+FMA GEMM micro-kernels (compiled with -mavx2 -mfma; called only after cpuid says so).
//
// 6x16: 12 ymm accumulators + 2 B vectors + 1 broadcast A = 15 of the 16 ymm registers. Per k
// step: 2 loads of B, 6 broadcasts of A, 12 FMAs, so the two FMA pipes stay the bottleneck and
// 12 independent accumulator chains cover the FMA latency (4 cycles × 2 pipes = 8 needed).
// The epilogue (C accumulation, bias, residual, activation) runs on the accumulators before the
// single store; edge tiles use masked loads/stores so no byte outside C (or residual) is touched.
#include <immintrin.h>

#include <cstdint>

#include "engine/kernels/gemm_internal.h"

namespace xnn::kernels::internal {
namespace {

// Lanes [0, valid) set: load 8 ints starting at kMaskTable + 8 - valid.
alignas(64) constexpr int32_t kMaskTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

inline __m256i lane_mask(size_t valid) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskTable + 8 - valid));
}

// Activations that cost a few instructions run on the registers; Sigmoid/Silu need exp and are
// applied by apply_activation on the stored rows (the one shared vector implementation).
// Each formula follows apply_activation_scalar operand for operand, NaN handling included
// (max/min return their second operand when either is NaN).
struct VecAct {
  ActKind kind = ActKind::kNone;
  bool in_register = true;
  __m256 lo, hi, alpha, beta;

  explicit VecAct(const Activation* act) {
    kind = act ? act->kind : ActKind::kNone;
    in_register = kind != ActKind::kSigmoid && kind != ActKind::kSilu;
    lo = _mm256_set1_ps(act ? act->alpha : 0.0f);
    hi = _mm256_set1_ps(act ? act->beta : 0.0f);
    alpha = lo;
    beta = hi;
  }

  __m256 relu(__m256 x) const { return _mm256_max_ps(x, _mm256_setzero_ps()); }  // x > 0 ? x : 0
  __m256 clip(__m256 x) const { return _mm256_min_ps(hi, _mm256_max_ps(lo, x)); }
  __m256 leaky_relu(__m256 x) const {
    return _mm256_blendv_ps(_mm256_mul_ps(x, alpha), x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
  }
  __m256 hard_swish(__m256 x) const {
    // Divide (not multiply by 1/6) to match the scalar definition bit for bit.
    const __m256 t = _mm256_add_ps(_mm256_div_ps(x, _mm256_set1_ps(6.0f)), _mm256_set1_ps(0.5f));
    return _mm256_mul_ps(x, unit_clamp(t));
  }
  __m256 hard_sigmoid(__m256 x) const { return unit_clamp(_mm256_add_ps(_mm256_mul_ps(alpha, x), beta)); }
  // t < 0 ? 0 : (t > 1 ? 1 : t), NaN passing through.
  static __m256 unit_clamp(__m256 t) {
    return _mm256_min_ps(_mm256_set1_ps(1.0f), _mm256_max_ps(_mm256_setzero_ps(), t));
  }

  __m256 operator()(__m256 x) const {
    switch (kind) {
      case ActKind::kRelu: return relu(x);
      case ActKind::kClip: return clip(x);
      case ActKind::kLeakyRelu: return leaky_relu(x);
      case ActKind::kHardSwish: return hard_swish(x);
      case ActKind::kHardSigmoid: return hard_sigmoid(x);
      default: return x;
    }
  }
};

template <int NV, typename F>
inline void for_each_acc(__m256 (&acc)[6][NV], F f) {
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[i][v] = f(acc[i][v]);
  }
}

// Applies an in-register activation to all accumulators: one switch per tile, then straight-line
// code per kind (a switch per vector costs more than the K loop when K is small).
template <int NV>
inline void activate_all(__m256 (&acc)[6][NV], const VecAct& act) {
  switch (act.kind) {
    case ActKind::kRelu: for_each_acc<NV>(acc, [&](__m256 x) { return act.relu(x); }); break;
    case ActKind::kClip: for_each_acc<NV>(acc, [&](__m256 x) { return act.clip(x); }); break;
    case ActKind::kLeakyRelu: for_each_acc<NV>(acc, [&](__m256 x) { return act.leaky_relu(x); }); break;
    case ActKind::kHardSwish: for_each_acc<NV>(acc, [&](__m256 x) { return act.hard_swish(x); }); break;
    case ActKind::kHardSigmoid: for_each_acc<NV>(acc, [&](__m256 x) { return act.hard_sigmoid(x); }); break;
    default: break;  // None; Sigmoid/Silu are applied after the store
  }
}

// A full 6 × (8·NV) tile: each optional step is one predictable branch around straight-line code.
template <int NV>
inline void finish_full_tile(__m256 (&acc)[6][NV], float* c, int64_t ldc, bool accumulate, const GemmTileEpilogue& ep) {
  if (accumulate) {
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) {
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_add_ps(acc[i][v], _mm256_loadu_ps(c + i * ldc + 8 * v));
    }
  }
  if (ep.bias) {
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) {
      const __m256 b = _mm256_broadcast_ss(ep.bias + i);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_add_ps(acc[i][v], b);
    }
  }
  if (ep.residual) {
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) {
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm256_add_ps(acc[i][v], _mm256_loadu_ps(ep.residual + i * ep.ldr + 8 * v));
    }
  }
  if (ep.act) activate_all<NV>(acc, VecAct(ep.act));
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(c + i * ldc + 8 * v, acc[i][v]);
  }
}

// Edge tiles (mr < 6 or nr < 8·NV) are rare: the accumulators go through a stack tile and each
// valid row is finished with masked loads/stores, so nothing outside C's rows is touched.
template <int NV>
void finish_edge_tile(const __m256 (&acc)[6][NV], size_t mr, size_t nr, float* c, int64_t ldc, bool accumulate,
                      const GemmTileEpilogue& ep) {
  alignas(32) float tile[6][8 * NV];
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) _mm256_store_ps(&tile[i][8 * v], acc[i][v]);
  }
  const VecAct act(ep.act);
  __m256i mask[NV];
  for (int v = 0; v < NV; ++v) {
    const int64_t valid = static_cast<int64_t>(nr) - 8 * v;
    mask[v] = lane_mask(static_cast<size_t>(valid < 0 ? 0 : (valid > 8 ? 8 : valid)));
  }
  for (size_t i = 0; i < mr; ++i) {
    float* crow = c + static_cast<int64_t>(i) * ldc;
    const float* rrow = ep.residual ? ep.residual + static_cast<int64_t>(i) * ep.ldr : nullptr;
    for (int v = 0; v < NV; ++v) {
      __m256 x = _mm256_load_ps(&tile[i][8 * v]);
      if (accumulate) x = _mm256_add_ps(x, _mm256_maskload_ps(crow + 8 * v, mask[v]));
      if (ep.bias) x = _mm256_add_ps(x, _mm256_broadcast_ss(ep.bias + i));
      if (rrow) x = _mm256_add_ps(x, _mm256_maskload_ps(rrow + 8 * v, mask[v]));
      if (act.in_register) x = act(x);
      _mm256_maskstore_ps(crow + 8 * v, mask[v], x);
    }
  }
}

template <int NV>
inline void finish_tile(__m256 (&acc)[6][NV], size_t mr, size_t nr, float* c, int64_t ldc, bool accumulate,
                        const GemmTileEpilogue& ep) {
  if (mr == 6 && nr == static_cast<size_t>(8 * NV)) {
    finish_full_tile<NV>(acc, c, ldc, accumulate, ep);
  } else {
    finish_edge_tile<NV>(acc, mr, nr, c, ldc, accumulate, ep);
  }
  if (ep.act && (ep.act->kind == ActKind::kSigmoid || ep.act->kind == ActKind::kSilu)) {
    for (size_t i = 0; i < mr; ++i)
      apply_activation(c + static_cast<int64_t>(i) * ldc, static_cast<int64_t>(nr), *ep.act, Isa::kAvx2);
  }
}

// The A (weight) panel is prefetched 2 KB ahead: the hardware streamers stop at page boundaries,
// and a deep layer's panels come from L3. With XNN_ISA=avx2 on the Sapphire Rapids VM this took
// ResNet-18's im2col GEMM time ~3% down relative to its Winograd layers (three interleaved rounds);
// the zmm kernel's A prefetch (gemm_avx512.cpp) gained ~12% there.
constexpr int64_t kAPrefetchFloats = 512;

// NV vectors of 8 columns of B rows b_stride apart (NV = 1 reads half of a 16-wide panel).
template <int NV>
inline void gemm_6xnv(size_t mr, size_t nr, size_t kc, const float* a, const float* b, int64_t b_stride, float* c,
                      int64_t ldc, bool accumulate, const GemmTileEpilogue& ep) {
  __m256 acc[6][NV];
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_ps();
  }

  // One k step per iteration, unrolled by 4 so loop overhead is amortised over 48 FMAs. Left to
  // the compiler's unroller on purpose: a hand-unrolled body makes GCC 12 hoist B loads and spill
  // two accumulators.
#pragma GCC unroll 4
  for (size_t k = kc; k != 0; --k) {
    __m256 bv[NV];
    _mm_prefetch(reinterpret_cast<const char*>(a + kAPrefetchFloats), _MM_HINT_T0);
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
    }
    a += 6;
    b += b_stride;
  }
  finish_tile<NV>(acc, mr, nr, c, ldc, accumulate, ep);
}

}  // namespace

XNN_GEMM_UKERNEL(f32_gemm_6x16__avx2) { gemm_6xnv<2>(mr, nr, kc, a, b, b_stride, c, ldc, accumulate, ep); }

XNN_GEMM_UKERNEL(f32_gemm_6x8__avx2) { gemm_6xnv<1>(mr, nr, kc, a, b, b_stride, c, ldc, accumulate, ep); }

}  // namespace xnn::kernels::internal
