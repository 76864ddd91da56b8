// AVX2 path of the pattern-sparse 3×3 convolution (engine/kernels/pattern_conv.h): R output rows
// × V vectors of 8 output columns of one filter in R·V ymm accumulators (R·V <= 8: enough
// independent FMA chains to hide the FMA latency), one broadcast + R·V load/FMA pairs per kept tap.
#include <immintrin.h>

#include <algorithm>
#include <array>

#include "engine/kernels/pattern_conv.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {
namespace {

constexpr int kMaxPatterns = 512;  // distinct 9-bit masks

// acc[R × V·8] (row stride ldo, V·8 <= ldo) += the filter's taps over entries [e0, e1); the
// first channel block starts from `init` (bias) instead of acc.
template <int R, int V, int K>
void tile(const PatternConvWeights& w, const int32_t (*offsets)[kMaxPatternTaps], const PatternPadLayout& l,
          const float* xtile, int64_t e0, int64_t e1, bool first, float init, float* acc_mem, int64_t ldo) {
  __m256 acc[R * V];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < V; ++j) acc[i * V + j] = first ? _mm256_set1_ps(init) : _mm256_load_ps(acc_mem + i * ldo + 8 * j);
  const int64_t rs = l.row_stride;
  const int32_t* channel = w.entry_channel();
  const uint16_t* pattern = w.entry_pattern();
  const float* weights = w.entry_weights();
  for (int64_t e = e0; e < e1; ++e) {
    const float* p = xtile + channel[e] * l.plane;
    const int32_t* off = offsets[pattern[e]];
    const float* wt = weights + e * K;
#pragma GCC unroll 8
    for (int t = 0; t < K; ++t) {
      const __m256 wv = _mm256_broadcast_ss(wt + t);
      const float* q = p + off[t];
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < V; ++j) acc[i * V + j] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(q + i * rs + 8 * j), acc[i * V + j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < V; ++j) _mm256_store_ps(acc_mem + i * ldo + 8 * j, acc[i * V + j]);
}

using TileFn = void (*)(const PatternConvWeights&, const int32_t (*)[kMaxPatternTaps], const PatternPadLayout&,
                        const float*, int64_t, int64_t, bool, float, float*, int64_t);

// kTiles[K - 1][V - 1][R - 1] for K = 1..5 taps, V = 1..4 vectors, R = 1..8 / V rows.
constexpr int max_rows(int v) { return v == 1 ? 8 : v == 2 ? 4 : 2; }
template <int K>
constexpr std::array<std::array<TileFn, 8>, 4> tiles_for_taps() {
  return {{{tile<1, 1, K>, tile<2, 1, K>, tile<3, 1, K>, tile<4, 1, K>, tile<5, 1, K>, tile<6, 1, K>, tile<7, 1, K>,
            tile<8, 1, K>},
           {tile<1, 2, K>, tile<2, 2, K>, tile<3, 2, K>, tile<4, 2, K>, nullptr, nullptr, nullptr, nullptr},
           {tile<1, 3, K>, tile<2, 3, K>, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
           {tile<1, 4, K>, tile<2, 4, K>, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr}}};
}
static_assert(kMaxPatternTaps == 5);
constexpr std::array<std::array<std::array<TileFn, 8>, 4>, 5> kTiles = {
    tiles_for_taps<1>(), tiles_for_taps<2>(), tiles_for_taps<3>(), tiles_for_taps<4>(), tiles_for_taps<5>()};

}  // namespace

void f32_patconv3x3_block__avx2(const PatternConvWeights& w, const PatternConvShape& s, const PatternPadLayout& l,
                                const float* xpad, int64_t o0, int64_t o1, int64_t r0, int64_t r1, float* y,
                                const PatternConvEpilogue& ep) {
  // Tap offsets of each pattern in the padded input: ky·row_stride + kx.
  int32_t offsets[kMaxPatterns][kMaxPatternTaps];
  const int patterns = static_cast<int>(std::min<size_t>(w.patterns().size(), kMaxPatterns));
  for (int p = 0; p < patterns; ++p) {
    const auto& pos = w.pattern_taps(p);
    for (int t = 0; t < kMaxPatternTaps; ++t) {
      offsets[p][t] = static_cast<int32_t>(pos[static_cast<size_t>(t)] / 3 * l.row_stride + pos[static_cast<size_t>(t)] % 3);
    }
  }
  const int64_t vectors = (s.ow + 7) / 8, blocks = w.channel_blocks();
  // Partial sums of the filters [o0, o1) for one tile, between channel blocks (L1-resident).
  constexpr int64_t kTileFloats = 8 * 8;  // R·V·8 <= 64
  float* acc = thread_scratch_f32(static_cast<size_t>((o1 - o0) * kTileFloats), 3);
  for (int64_t x0v = 0; x0v < vectors; x0v += 4) {
    const int v = static_cast<int>(std::min<int64_t>(4, vectors - x0v));
    const int64_t x0 = x0v * 8, cols = std::min<int64_t>(v * 8, s.ow - x0), ldo = v * 8;
    for (int64_t r = r0; r < r1;) {
      const int rows = static_cast<int>(std::min<int64_t>(max_rows(v), r1 - r));
      const TileFn fn = kTiles[static_cast<size_t>(w.taps() - 1)][static_cast<size_t>(v - 1)][static_cast<size_t>(rows - 1)];
      const float* xtile = xpad + r * l.row_stride + x0;
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t o = o0; o < o1; ++o) {
          fn(w, offsets, l, xtile, w.entry_begin(o, b), w.entry_begin(o, b + 1), b == 0, ep.bias ? ep.bias[o] : 0.0f,
             acc + (o - o0) * kTileFloats, ldo);
        }
      }
      for (int64_t o = o0; o < o1; ++o) {
        const float* a = acc + (o - o0) * kTileFloats;
        for (int i = 0; i < rows; ++i) {
          const int64_t at = (o * s.oh + r + i) * s.ow + x0;
          float* yr = y + at;
          const float* res = ep.residual ? ep.residual + at : nullptr;
          for (int64_t c = 0; c < cols; ++c) yr[c] = res ? a[i * ldo + c] + res[c] : a[i * ldo + c];
          if (ep.act.kind != ActKind::kNone) apply_activation(yr, cols, ep.act, Isa::kAvx2);
        }
      }
      r += rows;
    }
  }
}

}  // namespace xnn::kernels
