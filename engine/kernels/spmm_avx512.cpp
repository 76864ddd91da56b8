// f32_spmm_64x1__avx512: the sparse 1x1-conv / batched-linear kernel of spmm_avx2.cpp on zmm
// (compiled for AVX-512 F+VL+BW; called only when avx512_enabled()). X is copied into panels of
// 64 columns (256 B per input row, aligned), so each nonzero costs one broadcast, one column
// index and four 64-byte loads + FMAs for 64 outputs: twice the outputs per load of the AVX2
// kernel's 32-column panels. The arithmetic per output column is the AVX2 kernel's (bias into the
// even set, even and odd nonzeros in two accumulator sets added once per row), so both return the
// same floats. Column tails: 1-4 vectors over the zero-padded panel, the last store masked.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "engine/kernels/scratch.h"
#include "engine/kernels/spmm.h"

namespace xnn::kernels {
namespace {

constexpr int64_t kPanel = 64;  // floats per packed input row

inline bool act_in_register(ActKind k) { return k == ActKind::kNone || k == ActKind::kRelu || k == ActKind::kClip; }

inline __m512 activate(__m512 v, const Activation& act) {
  switch (act.kind) {
    case ActKind::kRelu: return _mm512_max_ps(v, _mm512_setzero_ps());
    case ActKind::kClip: return _mm512_min_ps(_mm512_set1_ps(act.beta), _mm512_max_ps(_mm512_set1_ps(act.alpha), v));
    default: return v;
  }
}

// NV vectors of 16 columns for rows [r0, r1) from a panel, writing Y columns [c, c + width); the
// last vector has `valid` lanes.
template <int NV>
void spmm_tile(const SparseWeights& w, int64_t r0, int64_t r1, const float* panel, int64_t c, int64_t valid, float* y,
               int64_t ldy, const SpmmEpilogue& ep) {
  const __mmask16 last = static_cast<__mmask16>((1u << valid) - 1);
  const int32_t* start = w.row_start();
  const float* v = w.values() + start[r0];
  const int32_t* col = w.columns() + start[r0];
  const bool in_register = act_in_register(ep.act.kind);
  const int64_t width = 16 * (NV - 1) + valid;
  for (int64_t r = r0; r < r1; ++r) {
    __m512 a0[NV], a1[NV];
    const __m512 b = _mm512_set1_ps(ep.bias ? ep.bias[r] : 0.0f);
    for (int i = 0; i < NV; ++i) a0[i] = b, a1[i] = _mm512_setzero_ps();
    int32_t cnt = start[r + 1] - start[r];
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
    float* yr = y + r * ldy + c;
    const float* res = ep.residual ? ep.residual + r * ep.ldr + c : nullptr;
    for (int i = 0; i < NV; ++i) {
      const __mmask16 m = i == NV - 1 ? last : static_cast<__mmask16>(0xFFFF);
      __m512 acc = _mm512_add_ps(a0[i], a1[i]);
      if (res) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, res + 16 * i));
      if (in_register) acc = activate(acc, ep.act);
      _mm512_mask_storeu_ps(yr + 16 * i, m, acc);
    }
    if (!in_register) apply_activation(yr, width, ep.act, Isa::kAvx2);
  }
}

}  // namespace

void f32_spmm_block__avx512(const SparseWeights& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* x,
                            float* y, int64_t ldy, const SpmmEpilogue& ep) {
  // X[:, c0:c1] into panels of 64 columns, [tile][k][64], zero-padded (why: spmm_avx2.cpp).
  const int64_t n = c1 - c0, k = w.cols(), stride = w.x_stride();
  const int64_t tiles = (n + kPanel - 1) / kPanel;
  float* panels = thread_scratch_f32(static_cast<size_t>(tiles * k * kPanel), 0);
  for (int64_t kk = 0; kk < k; ++kk) {
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
  for (int64_t t = 0; t < tiles; ++t) {
    const float* panel = panels + t * k * kPanel;
    const int64_t c = c0 + t * kPanel, cols = std::min(kPanel, n - t * kPanel);
    const int64_t valid = cols % 16 ? cols % 16 : 16;
    switch ((cols + 15) / 16) {
      case 1: spmm_tile<1>(w, r0, r1, panel, c, valid, y, ldy, ep); break;
      case 2: spmm_tile<2>(w, r0, r1, panel, c, valid, y, ldy, ep); break;
      case 3: spmm_tile<3>(w, r0, r1, panel, c, valid, y, ldy, ep); break;
      default: spmm_tile<4>(w, r0, r1, panel, c, valid, y, ldy, ep); break;
    }
  }
}

}  // namespace xnn::kernels
