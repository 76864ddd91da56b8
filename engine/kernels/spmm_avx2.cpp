// AVX2+FMA sparse kernels (compiled with -mavx2 -mfma; called only after cpuid says so).
//
// f32_spmm_32x1: 32 columns × 1 output row per step of a row's nonzeros: 1 broadcast, 1 column
// index and 4 aligned loads of the input row (column × 128 B into a packed panel) + 4 FMAs.
// One set of 4 accumulators would chain every FMA on the previous one (4-cycle latency per
// nonzero), so even and odd nonzeros go to two sets (8 accumulators) that are summed once per
// row: the loop is then bound by the loads. Column tails (< 32 columns): one pass with 1-4
// vectors over the zero-padded panel, the last store masked (7×7 = 49 columns: 32 + 17).
// Deep inputs go chunk by chunk (SparseWeights::chunks(), why: spmm.h).
#include <immintrin.h>

#include <algorithm>
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

constexpr int64_t kPanel = kSpmmPanelAvx2;  // floats per packed input row

// NV vectors of 8 columns for rows [r0, r1) from a panel (kPanel floats per input row, zero
// padded), the nonzeros of k-chunk `chunk`, writing Y columns [c, c + width); with kMaskLast the
// last vector has only `valid` lanes (masked loads and stores: nothing past the block is
// touched). Chunks after the first start from the partial sums in Y; all but the last store
// partial sums, the last the epilogue.
template <int NV, bool kMaskLast, bool kFirstChunk, bool kLastChunk>
void spmm_tile(const SparseWeights& w, int64_t r0, int64_t r1, const float* panel, int64_t chunk, int64_t c,
               int64_t valid, float* y, int64_t ldy, const SpmmEpilogue& ep) {
  static_assert(NV * 8 <= kPanel, "a tile reads within one panel row");
  const __m256i mask = kMaskLast ? lane_mask(valid) : _mm256_setzero_si256();
  const auto load = [&](const float* p, int i) { return _mm256_load_ps(p + 8 * i); };
  const auto masked = [&](int i) { return kMaskLast && i == NV - 1; };
  const auto load_y = [&](const float* p, int i) {
    return masked(i) ? _mm256_maskload_ps(p + 8 * i, mask) : _mm256_loadu_ps(p + 8 * i);
  };
  const auto store_y = [&](float* p, int i, __m256 v) {
    if (masked(i)) {
      _mm256_maskstore_ps(p + 8 * i, mask, v);
    } else {
      _mm256_storeu_ps(p + 8 * i, v);
    }
  };
  const bool in_register = act_in_register(ep.act.kind);
  const int64_t width = kMaskLast ? 8 * (NV - 1) + valid : 8 * NV;
  // One chunk: a row's nonzeros follow the previous row's (no per-row offsets to load).
  const float* v = w.values() + w.row_start()[r0];
  const int32_t* col = w.columns() + w.row_start()[r0];
  for (int64_t r = r0; r < r1; ++r) {
    const int32_t* cs = w.chunk_start(r);
    if constexpr (!(kFirstChunk && kLastChunk)) v = w.values() + cs[chunk], col = w.columns() + cs[chunk];
    float* yr = y + r * ldy + c;
    __m256 a0[NV], a1[NV];
    if (kFirstChunk) {
      const __m256 b = _mm256_set1_ps(ep.bias ? ep.bias[r] : 0.0f);
      for (int i = 0; i < NV; ++i) a0[i] = b;
    } else {
      for (int i = 0; i < NV; ++i) a0[i] = load_y(yr, i);
    }
    for (int i = 0; i < NV; ++i) a1[i] = _mm256_setzero_ps();
    int32_t cnt = cs[chunk + 1] - cs[chunk];
    for (; cnt >= 4; cnt -= 4) {  // unrolled: the same order as pairs, fewer loop branches
      for (int j = 0; j < 4; j += 2) {
        const __m256 w0 = _mm256_broadcast_ss(v + j);
        const float* p0 = panel + int64_t{col[j]} * kPanel;
        for (int i = 0; i < NV; ++i) a0[i] = _mm256_fmadd_ps(w0, load(p0, i), a0[i]);
        const __m256 w1 = _mm256_broadcast_ss(v + j + 1);
        const float* p1 = panel + int64_t{col[j + 1]} * kPanel;
        for (int i = 0; i < NV; ++i) a1[i] = _mm256_fmadd_ps(w1, load(p1, i), a1[i]);
      }
      v += 4, col += 4;
    }
    for (; cnt >= 2; cnt -= 2) {
      const __m256 w0 = _mm256_broadcast_ss(v);
      const float* p0 = panel + int64_t{col[0]} * kPanel;
      for (int i = 0; i < NV; ++i) a0[i] = _mm256_fmadd_ps(w0, load(p0, i), a0[i]);
      const __m256 w1 = _mm256_broadcast_ss(v + 1);
      const float* p1 = panel + int64_t{col[1]} * kPanel;
      for (int i = 0; i < NV; ++i) a1[i] = _mm256_fmadd_ps(w1, load(p1, i), a1[i]);
      v += 2, col += 2;
    }
    if (cnt) {
      const __m256 w0 = _mm256_broadcast_ss(v);
      const float* p0 = panel + int64_t{col[0]} * kPanel;
      for (int i = 0; i < NV; ++i) a0[i] = _mm256_fmadd_ps(w0, load(p0, i), a0[i]);
      ++v, ++col;
    }
    if (!kLastChunk) {
      for (int i = 0; i < NV; ++i) store_y(yr, i, _mm256_add_ps(a0[i], a1[i]));
      continue;
    }
    const float* res = ep.residual ? ep.residual + r * ep.ldr + c : nullptr;
    for (int i = 0; i < NV; ++i) {
      __m256 acc = _mm256_add_ps(a0[i], a1[i]);
      if (res) acc = _mm256_add_ps(acc, load_y(res, i));
      if (in_register) acc = activate(acc, ep.act);
      store_y(yr, i, acc);
    }
    if (!in_register) apply_activation(yr, width, ep.act, Isa::kAvx2);
  }
}

template <int NV, bool kMaskLast>
void run_chunk(const SparseWeights& w, int64_t r0, int64_t r1, const float* panel, int64_t chunk, int64_t c,
               int64_t valid, float* y, int64_t ldy, const SpmmEpilogue& ep) {
  const bool first = chunk == 0, last = chunk == w.chunks() - 1;
  if (first && last) spmm_tile<NV, kMaskLast, true, true>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep);
  else if (first) spmm_tile<NV, kMaskLast, true, false>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep);
  else if (last) spmm_tile<NV, kMaskLast, false, true>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep);
  else spmm_tile<NV, kMaskLast, false, false>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep);
}

}  // namespace

// Copy X[:, c0:c1] into panels of 32 columns, [tile][k][32], zero-padded. In place, the input
// rows a tile reads are a whole row of X apart: 3-12 KB for 28x28-56x56 maps, so every
// nonzero lands on another page and the walk waits on TLB misses; 196 B for 7x7 maps, so most
// reads straddle three cache lines and the tail needs masked loads. A panel row is 128 B,
// aligned, and a tile's panel (k x 128 B) stays in L1/L2. The copy is read back
// rows x density times. Measured on Zen 4: 1.3-1.45x faster at 80% zeros for 7x7-28x28 maps.
void f32_spmm_pack__avx2(const float* x, int64_t stride, int64_t k, int64_t k0, int64_t k1, int64_t c0, int64_t c1,
                         float* panels) {
  const int64_t n = c1 - c0, tiles = (n + kPanel - 1) / kPanel;
  for (int64_t kk = k0; kk < k1; ++kk) {
    const float* src = x + kk * stride + c0;
    for (int64_t t = 0; t < tiles; ++t) {
      float* dst = panels + (t * k + kk) * kPanel;
      const int64_t len = std::min(kPanel, n - t * kPanel);
      if (len == kPanel) {
        for (int i = 0; i < 4; ++i) _mm256_store_ps(dst + 8 * i, _mm256_loadu_ps(src + t * kPanel + 8 * i));
      } else {
        for (int64_t i = 0; i < kPanel; ++i) dst[i] = i < len ? src[t * kPanel + i] : 0.0f;
      }
    }
  }
}

void f32_spmm_packed__avx2(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* panels,
                           float* y, int64_t ldy, const SpmmEpilogue& ep) {
  const int64_t n = c1 - c0, k = w.cols(), tiles = (n + kPanel - 1) / kPanel;
  for (int64_t t = 0; t < tiles; ++t) {
    const float* panel = panels + t * k * kPanel;
    const int64_t c = c0 + t * kPanel, cols = std::min(kPanel, n - t * kPanel);
    const int64_t valid = cols % 8 ? cols % 8 : 8;
    const bool mask = cols % 8 != 0;
    for (int64_t chunk = 0; chunk < w.chunks(); ++chunk) {
      switch ((cols + 7) / 8) {
        case 1: mask ? run_chunk<1, true>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep) : run_chunk<1, false>(w, r0, r1, panel, chunk, c, 8, y, ldy, ep); break;
        case 2: mask ? run_chunk<2, true>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep) : run_chunk<2, false>(w, r0, r1, panel, chunk, c, 8, y, ldy, ep); break;
        case 3: mask ? run_chunk<3, true>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep) : run_chunk<3, false>(w, r0, r1, panel, chunk, c, 8, y, ldy, ep); break;
        default: mask ? run_chunk<4, true>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep) : run_chunk<4, false>(w, r0, r1, panel, chunk, c, 8, y, ldy, ep); break;
      }
    }
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
