// AVX2+FMA sparse kernels (compiled with -mavx2 -mfma; called only after cpuid says so).
//
// f32_spmm_32x1: 32 columns × 1 output row per step of a row's nonzeros: 1 broadcast + 4 loads
// + 4 FMAs. One set of 4 accumulators would chain every FMA on the previous one (4-cycle
// latency per nonzero), so even and odd nonzeros go to two sets (8 accumulators) that are
// summed once per row: the loop is then bound by the loads (~2.5 cycles per nonzero).
// Column tails (< 32 columns): one pass with 1-4 vectors, the last one masked, so a tail costs
// one walk over the nonzeros (7×7 = 49 columns: 32 + 17, not 32 + 16 + 1).
#include <immintrin.h>

#include <cstdint>

#include "engine/kernels/avx2_reduce.h"
#include "engine/kernels/spmm.h"

namespace xnn::kernels {
namespace {

alignas(64) constexpr int32_t kMaskTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

inline __m256i lane_mask(int64_t valid) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskTable + 8 - valid));
}

inline bool act_in_register(ActKind k) { return k == ActKind::kNone || k == ActKind::kRelu || k == ActKind::kClip; }

inline __m256 activate(__m256 v, const Activation& act) {
  switch (act.kind) {
    case ActKind::kRelu: return _mm256_max_ps(v, _mm256_setzero_ps());
    case ActKind::kClip: return _mm256_min_ps(_mm256_set1_ps(act.beta), _mm256_max_ps(_mm256_set1_ps(act.alpha), v));
    default: return v;
  }
}

// NV vectors of 8 columns for rows [r0, r1); with kMaskLast the last vector has only `valid`
// lanes (masked loads and stores: nothing past the block is read or written).
template <int NV, bool kMaskLast>
void spmm_tile(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c, int64_t valid, const float* x, float* y,
               int64_t ldy, const SpmmEpilogue& ep) {
  const __m256i mask = kMaskLast ? lane_mask(valid) : _mm256_setzero_si256();
  const auto load = [&](const char* p, int i) {
    return kMaskLast && i == NV - 1 ? _mm256_maskload_ps(reinterpret_cast<const float*>(p + 32 * i), mask)
                                    : _mm256_loadu_ps(reinterpret_cast<const float*>(p + 32 * i));
  };
  const int32_t* start = w.row_start();
  const float* v = w.values() + start[r0];
  const int32_t* d = w.deltas() + start[r0];
  const char* p = reinterpret_cast<const char*>(x + c) + w.first_offset(r0);
  const bool in_register = act_in_register(ep.act.kind);
  const int64_t width = kMaskLast ? 8 * (NV - 1) + valid : 8 * NV;
  for (int64_t r = r0; r < r1; ++r) {
    __m256 a0[NV], a1[NV];
    const __m256 b = _mm256_set1_ps(ep.bias ? ep.bias[r] : 0.0f);
    for (int i = 0; i < NV; ++i) a0[i] = b, a1[i] = _mm256_setzero_ps();
    int32_t cnt = start[r + 1] - start[r];
    for (; cnt >= 2; cnt -= 2) {
      const __m256 w0 = _mm256_broadcast_ss(v);
      for (int i = 0; i < NV; ++i) a0[i] = _mm256_fmadd_ps(w0, load(p, i), a0[i]);
      p += d[0];
      const __m256 w1 = _mm256_broadcast_ss(v + 1);
      for (int i = 0; i < NV; ++i) a1[i] = _mm256_fmadd_ps(w1, load(p, i), a1[i]);
      p += d[1];
      v += 2, d += 2;
    }
    if (cnt) {
      const __m256 w0 = _mm256_broadcast_ss(v);
      for (int i = 0; i < NV; ++i) a0[i] = _mm256_fmadd_ps(w0, load(p, i), a0[i]);
      p += d[0];
      ++v, ++d;
    }
    float* yr = y + r * ldy + c;
    const float* res = ep.residual ? ep.residual + r * ep.ldr + c : nullptr;
    for (int i = 0; i < NV; ++i) {
      const bool masked = kMaskLast && i == NV - 1;
      __m256 acc = _mm256_add_ps(a0[i], a1[i]);
      if (res) acc = _mm256_add_ps(acc, masked ? _mm256_maskload_ps(res + 8 * i, mask) : _mm256_loadu_ps(res + 8 * i));
      if (in_register) acc = activate(acc, ep.act);
      if (masked) {
        _mm256_maskstore_ps(yr + 8 * i, mask, acc);
      } else {
        _mm256_storeu_ps(yr + 8 * i, acc);
      }
    }
    if (!in_register) apply_activation(yr, width, ep.act, Isa::kAvx2);
  }
}

}  // namespace

void f32_spmm_block__avx2(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* x,
                          float* y, int64_t ldy, const SpmmEpilogue& ep) {
  int64_t c = c0;
  for (; c + 32 <= c1; c += 32) spmm_tile<4, false>(w, r0, r1, c, 8, x, y, ldy, ep);
  // The remaining < 32 columns in one pass over the nonzeros (1-4 vectors, the last masked).
  const int64_t rest = c1 - c, valid = rest % 8 ? rest % 8 : 8;
  const bool mask = rest % 8 != 0;
  switch ((rest + 7) / 8) {
    case 0: break;
    case 1: mask ? spmm_tile<1, true>(w, r0, r1, c, valid, x, y, ldy, ep) : spmm_tile<1, false>(w, r0, r1, c, 8, x, y, ldy, ep); break;
    case 2: mask ? spmm_tile<2, true>(w, r0, r1, c, valid, x, y, ldy, ep) : spmm_tile<2, false>(w, r0, r1, c, 8, x, y, ldy, ep); break;
    case 3: mask ? spmm_tile<3, true>(w, r0, r1, c, valid, x, y, ldy, ep) : spmm_tile<3, false>(w, r0, r1, c, 8, x, y, ldy, ep); break;
    default: spmm_tile<4, true>(w, r0, r1, c, valid, x, y, ldy, ep); break;
  }
}

// 8 nonzeros of a row per step: their column indices drive one gather of x; two accumulators
// alternate to hide the FMA latency. The row tail is a masked gather.
void f32_spmv_rows__avx2(const SparseWeights& w, int64_t r0, int64_t r1, const float* x, float* y) {
  const int32_t* start = w.row_start();
  const float* values = w.values();
  const int32_t* cols = w.columns();
  for (int64_t r = r0; r < r1; ++r) {
    int32_t k = start[r];
    const int32_t end = start[r + 1];
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (; k + 16 <= end; k += 16) {
      const __m256i i0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cols + k));
      const __m256i i1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cols + k + 8));
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(values + k), _mm256_i32gather_ps(x, i0, 4), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(values + k + 8), _mm256_i32gather_ps(x, i1, 4), a1);
    }
    if (k + 8 <= end) {
      const __m256i i0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cols + k));
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(values + k), _mm256_i32gather_ps(x, i0, 4), a0);
      k += 8;
    }
    if (k < end) {
      const __m256i m = lane_mask(end - k);
      const __m256i idx = _mm256_maskload_epi32(cols + k, m);
      const __m256 xv = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), x, idx, _mm256_castsi256_ps(m), 4);
      a1 = _mm256_fmadd_ps(_mm256_maskload_ps(values + k, m), xv, a1);
    }
    y[r] = hsum(_mm256_add_ps(a0, a1));
  }
}

}  // namespace xnn::kernels
