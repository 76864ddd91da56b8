// f32_spmm_64x1__avx512: the sparse 1x1-conv / batched-linear kernel of spmm_avx2.cpp on zmm
// (compiled for AVX-512 F+VL+BW; called only when avx512_enabled()). X is copied into panels of
// 64 columns (256 B per input row, aligned), so each nonzero costs one broadcast, one column
// index and four 64-byte loads + FMAs for 64 outputs: twice the outputs per load of the AVX2
// kernel's 32-column panels. The arithmetic per output column is the AVX2 kernel's (bias into the
// even set, even and odd nonzeros in two accumulator sets added once per row), so both return the
// same floats. Column tails: 1-4 vectors over the zero-padded panel, the last store masked.
// Deep inputs go chunk by chunk (SparseWeights::chunks(), why: spmm.h), as the AVX2 kernel.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "engine/kernels/spmm.h"

namespace xnn::kernels {
namespace {

constexpr int64_t kPanel = kSpmmPanelAvx512;  // floats per packed input row

inline bool act_in_register(ActKind k) { return k == ActKind::kNone || k == ActKind::kRelu || k == ActKind::kClip; }

inline __m512 activate(__m512 v, const Activation& act) {
  switch (act.kind) {
    case ActKind::kRelu: return _mm512_max_ps(v, _mm512_setzero_ps());
    case ActKind::kClip: return _mm512_min_ps(_mm512_set1_ps(act.beta), _mm512_max_ps(_mm512_set1_ps(act.alpha), v));
    default: return v;
  }
}

// NV vectors of 16 columns for rows [r0, r1) from a panel, the nonzeros of k-chunk `chunk`,
// writing Y columns [c, c + width); the last vector has `valid` lanes. Chunks after the first
// start from the partial sums in Y; all but the last store partial sums, the last the epilogue.
template <int NV, bool kFirstChunk, bool kLastChunk>
void spmm_tile(const SparseWeights& w, int64_t r0, int64_t r1, const float* panel, int64_t chunk, int64_t c,
               int64_t valid, float* y, int64_t ldy, const SpmmEpilogue& ep) {
  const __mmask16 last = static_cast<__mmask16>((1u << valid) - 1);
  const auto lanes = [&](int i) { return i == NV - 1 ? last : static_cast<__mmask16>(0xFFFF); };
  const bool in_register = act_in_register(ep.act.kind);
  const int64_t width = 16 * (NV - 1) + valid;
  // One chunk: a row's nonzeros follow the previous row's (no per-row offsets to load).
  const float* v = w.values() + w.row_start()[r0];
  const int32_t* col = w.columns() + w.row_start()[r0];
  for (int64_t r = r0; r < r1; ++r) {
    const int32_t* cs = w.chunk_start(r);
    if constexpr (!(kFirstChunk && kLastChunk)) {
      v = w.values() + cs[chunk], col = w.columns() + cs[chunk];
    }
    float* yr = y + r * ldy + c;
    __m512 a0[NV], a1[NV];
    if (kFirstChunk) {
      const __m512 b = _mm512_set1_ps(ep.bias ? ep.bias[r] : 0.0f);
      for (int i = 0; i < NV; ++i) a0[i] = b;
    } else {
      for (int i = 0; i < NV; ++i) a0[i] = _mm512_maskz_loadu_ps(lanes(i), yr + 16 * i);
    }
    for (int i = 0; i < NV; ++i) a1[i] = _mm512_setzero_ps();
    int32_t cnt = cs[chunk + 1] - cs[chunk];
    for (; cnt >= 4; cnt -= 4) {  // unrolled: the same order as pairs; ~7% faster on 7x7 512->512
      for (int j = 0; j < 4; j += 2) {
        const __m512 w0 = _mm512_set1_ps(v[j]);
        const float* p0 = panel + int64_t{col[j]} * kPanel;
        for (int i = 0; i < NV; ++i) a0[i] = _mm512_fmadd_ps(w0, _mm512_load_ps(p0 + 16 * i), a0[i]);
        const __m512 w1 = _mm512_set1_ps(v[j + 1]);
        const float* p1 = panel + int64_t{col[j + 1]} * kPanel;
        for (int i = 0; i < NV; ++i) a1[i] = _mm512_fmadd_ps(w1, _mm512_load_ps(p1 + 16 * i), a1[i]);
      }
      v += 4, col += 4;
    }
    for (; cnt >= 2; cnt -= 2) {
      const __m512 w0 = _mm512_set1_ps(v[0]);
      const float* p0 = panel + int64_t{col[0]} * kPanel;
      for (int i = 0; i < NV; ++i) a0[i] = _mm512_fmadd_ps(w0, _mm512_load_ps(p0 + 16 * i), a0[i]);
      const __m512 w1 = _mm512_set1_ps(v[1]);
      const float* p1 = panel + int64_t{col[1]} * kPanel;
      for (int i = 0; i < NV; ++i) a1[i] = _mm512_fmadd_ps(w1, _mm512_load_ps(p1 + 16 * i), a1[i]);
      v += 2, col += 2;
    }
    if (cnt) {
      const __m512 w0 = _mm512_set1_ps(v[0]);
      const float* p0 = panel + int64_t{col[0]} * kPanel;
      for (int i = 0; i < NV; ++i) a0[i] = _mm512_fmadd_ps(w0, _mm512_load_ps(p0 + 16 * i), a0[i]);
      ++v, ++col;
    }
    if (!kLastChunk) {
      for (int i = 0; i < NV; ++i) _mm512_mask_storeu_ps(yr + 16 * i, lanes(i), _mm512_add_ps(a0[i], a1[i]));
      continue;
    }
    const float* res = ep.residual ? ep.residual + r * ep.ldr + c : nullptr;
    for (int i = 0; i < NV; ++i) {
      __m512 acc = _mm512_add_ps(a0[i], a1[i]);
      if (res) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(lanes(i), res + 16 * i));
      if (in_register) acc = activate(acc, ep.act);
      _mm512_mask_storeu_ps(yr + 16 * i, lanes(i), acc);
    }
    if (!in_register) apply_activation(yr, width, ep.act, Isa::kAvx2);
  }
}

template <int NV>
void run_chunk(const SparseWeights& w, int64_t r0, int64_t r1, const float* panel, int64_t chunk, int64_t c,
               int64_t valid, float* y, int64_t ldy, const SpmmEpilogue& ep) {
  const bool first = chunk == 0, last = chunk == w.chunks() - 1;
  if (first && last) spmm_tile<NV, true, true>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep);
  else if (first) spmm_tile<NV, true, false>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep);
  else if (last) spmm_tile<NV, false, true>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep);
  else spmm_tile<NV, false, false>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep);
}

}  // namespace

void f32_spmm_pack__avx512(const float* x, int64_t stride, int64_t k, int64_t k0, int64_t k1, int64_t c0, int64_t c1,
                           float* panels) {
  const int64_t n = c1 - c0, tiles = (n + kPanel - 1) / kPanel;
  for (int64_t kk = k0; kk < k1; ++kk) {
    const float* src = x + kk * stride + c0;
    for (int64_t t = 0; t < tiles; ++t) {
      float* dst = panels + (t * k + kk) * kPanel;
      const int64_t len = std::min(kPanel, n - t * kPanel);
      for (int i = 0; i < 4; ++i) {
        const int64_t lanes = std::clamp<int64_t>(len - 16 * i, 0, 16);
        const __mmask16 m = static_cast<__mmask16>((uint32_t{1} << lanes) - 1);
        _mm512_store_ps(dst + 16 * i, _mm512_maskz_loadu_ps(m, src + t * kPanel + 16 * i));
      }
    }
  }
}

void f32_spmm_packed__avx512(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                             const float* panels, float* y, int64_t ldy, const SpmmEpilogue& ep) {
  const int64_t n = c1 - c0, k = w.cols(), tiles = (n + kPanel - 1) / kPanel;
  for (int64_t t = 0; t < tiles; ++t) {
    const float* panel = panels + t * k * kPanel;
    const int64_t c = c0 + t * kPanel, cols = std::min(kPanel, n - t * kPanel);
    const int64_t valid = cols % 16 ? cols % 16 : 16;
    for (int64_t chunk = 0; chunk < w.chunks(); ++chunk) {
      switch ((cols + 15) / 16) {
        case 1: run_chunk<1>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep); break;
        case 2: run_chunk<2>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep); break;
        case 3: run_chunk<3>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep); break;
        default: run_chunk<4>(w, r0, r1, panel, chunk, c, valid, y, ldy, ep); break;
      }
    }
  }
}

}  // namespace xnn::kernels
