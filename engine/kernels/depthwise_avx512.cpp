// AVX-512 depthwise convolution with 16 channels in the zmm lanes (declared in depthwise.h;
// compiled for AVX-512 F+VL+BW, called only when avx512_enabled()).
//
// Why channels in lanes: along the width of an NCHW plane a 7×7 or 14×14 output fills one or
// two vectors badly and most taps of a padded row are padding, and stride 2 needs even/odd
// deinterleaving; across 16 channels every lane is useful at any plane size and stride, and a
// tap is one FMA of a pixel vector with a weight vector. The price is two 16×16 transposes per 16
// pixels (in and out), which the FMAs of a 3×3 to 7×7 window repay.
//
// One task = 16 channels × a band of output rows:
//   1. weights and bias transposed to [k·k][16] and [16] (lanes past the channel count are 0);
//   2. input rows transposed into a ring of padded HWC16 rows, flat over the plane (16 pixels of
//      the contiguous NCHW plane per transpose, whatever the row width), as the output rows come
//      to need them; the ring's padding columns are zeroed once per task and stay zero (only
//      image columns are ever written) — rows of padding are never read: their taps are skipped;
//   3. each output row in groups of G pixels (G accumulators hide the FMA latency): bias, then
//      taps row by row; a row's last group may run past its end into the next row's slots, which
//      are computed afterwards (the buffers have slack for it);
//   4. finished pixels transposed back 16 at a time, flat over the plane, with the residual added
//      and the activation applied on the way out, stored masked.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/core/error.h"
#include "engine/kernels/c16_avx512.h"
#include "engine/kernels/depthwise.h"
#include "engine/kernels/kernel_stride_dispatch.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {
namespace {

using c16::first_lanes;
using c16::kLanes;
using c16::transpose16;

// Pixels per group: enough accumulators to cover the FMA latency, few enough that the input
// vectors of one kernel row ((G - 1)·S + K of them) and the accumulators fit in 32 registers.
template <int K, int S>
constexpr int group_pixels() {
  return (S == 2 && K >= 5) ? 4 : 8;
}

// G output pixels starting at column ox of one output row: rows[kh] is the padded HWC16 row
// of kernel row kh (valid for kh in [kh0, kh1)), w16 the [K·K][16] weights.
template <int K, int S>
inline __attribute__((always_inline)) void pixel_group(const float* const* rows, int kh0, int kh1, int64_t ox,
                                                       const float* w16, __m512 bias, float* out) {
  constexpr int G = group_pixels<K, S>();
  constexpr int NV = (G - 1) * S + K;
  __m512 acc[G];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) acc[g] = bias;
  for (int kh = kh0; kh < kh1; ++kh) {
    const float* row = rows[kh] + ox * S * kLanes;
    __m512 v[NV];
#pragma GCC unroll 21
    for (int i = 0; i < NV; ++i) v[i] = _mm512_loadu_ps(row + i * kLanes);
    const float* wk = w16 + kh * K * kLanes;
#pragma GCC unroll 7
    for (int kw = 0; kw < K; ++kw) {
      const __m512 w = _mm512_loadu_ps(wk + kw * kLanes);
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) acc[g] = _mm512_fmadd_ps(v[g * S + kw], w, acc[g]);
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) _mm512_storeu_ps(out + g * kLanes, acc[g]);
}

// What one task works on (see the file comment); the pointers are at channel c0.
struct Task {
  const DepthwiseParams* p;
  int64_t nc;                 // channels in this block, 1..16
  int64_t oh0, oh1;           // output rows
  const float* input;         // [nc] planes (or bands: DepthwiseParams::in_channel_stride)
  const float* weights;       // [nc][k][k]
  const float* bias;          // [nc] or null
  const float* residual;      // [nc][out_h][out_w] or null (may be output)
  float* output;              // [nc][out_h][out_w]
};

// Rows of the ring (padded input rows kept at once) for a task: every row it needs when they
// fit in ~48 KB (small planes: one flat transpose pass), else the window's k rows.
int64_t ring_rows(const DepthwiseParams& p, int64_t oh0, int64_t oh1, int64_t row_floats) {
  const int64_t all = (oh1 - oh0 - 1) * p.stride + p.kernel;
  return all * row_floats * 4 <= 48 * 1024 ? all : p.kernel;
}

template <int K, int S>
void run_task(const Task& t, const Activation& act) {
  const DepthwiseParams& p = *t.p;
  constexpr int G = group_pixels<K, S>();
  const int64_t in_cstride = p.in_channel_stride ? p.in_channel_stride : p.in_h * p.in_w;
  const int64_t in_first = p.in_row0 * p.in_w;  // flat index of the input's first element
  const int64_t out_plane = p.out_h * p.out_w;
  const int64_t wp = (p.out_w - 1) * S + K;  // padded columns the outputs read
  const int64_t row_floats = wp * kLanes;
  const int64_t ring = ring_rows(p, t.oh0, t.oh1, row_floats);
  // Buffers: ring (+ slack for a last group's over-read), output pixels, weights, bias.
  const int64_t ring_floats = ring * row_floats + (G * S + K) * kLanes;
  const int64_t out_pixels = c16::ChannelWriter::pixels_capacity(p.out_w, G);
  float* ring_buf = thread_scratch_f32(static_cast<size_t>(ring_floats + out_pixels * kLanes + (K * K + 1) * kLanes), 2);
  float* out16 = ring_buf + ring_floats;
  float* w16 = out16 + out_pixels * kLanes;
  float* bias16 = w16 + K * K * kLanes;
  // Only the padding columns and the slack need zeros: image columns are written before they are
  // read (a band-fed task of 12 rows at 56 wide spent more on zeroing the whole ring than on its
  // taps).
  const int64_t image_end = std::min(wp, p.pad_l + p.in_w);  // padded columns [pad_l, image_end)
  for (int64_t r = 0; r < ring; ++r) {
    float* row = ring_buf + r * row_floats;
    std::memset(row, 0, static_cast<size_t>(p.pad_l * kLanes) * sizeof(float));
    std::memset(row + image_end * kLanes, 0, static_cast<size_t>((wp - image_end) * kLanes) * sizeof(float));
  }
  std::memset(ring_buf + ring * row_floats, 0, static_cast<size_t>(ring_floats - ring * row_floats) * sizeof(float));

  const __mmask16 chans = first_lanes(t.nc);
  // 1. Weights [c][K·K] -> [K·K][16], 16 taps per transpose; bias -> 16 lanes.
  c16::transpose_rows_in(t.weights, K * K, t.nc, K * K, w16);
  _mm512_storeu_ps(bias16, t.bias ? _mm512_maskz_loadu_ps(chans, t.bias) : _mm512_setzero_ps());
  const __m512 bias = _mm512_loadu_ps(bias16);

  // 2. Input rows [next_row, upto) (image rows) -> ring, flat over the plane.
  int64_t next_row = std::max<int64_t>(0, t.oh0 * S - p.pad_t);
  const auto transpose_in = [&](int64_t upto) {
    if (upto <= next_row) return;
    // The pixel lane 0 of the next vector maps to: image row ih, column iw, stored at dst
    // (its ring row's column iw + pad_l), or nowhere when that column is past what outputs read.
    int64_t ih = next_row, iw = 0;
    const auto ring_row = [&](int64_t row) { return ring_buf + ((row + p.pad_t) % ring) * row_floats; };
    float* dst = ring_row(ih) + p.pad_l * kLanes;
    for (int64_t q = next_row * p.in_w; q < upto * p.in_w; q += 16) {
      const int64_t n = std::min<int64_t>(16, upto * p.in_w - q);
      const __mmask16 m = first_lanes(n);
      __m512 r[16];
#pragma GCC unroll 16
      for (int c = 0; c < 16; ++c) {
        r[c] = c < t.nc ? _mm512_maskz_loadu_ps(m, t.input + c * in_cstride + (q - in_first)) : _mm512_setzero_ps();
      }
      transpose16(r);
      // Constant register indices (unrolled), so r stays in registers.
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) {
        if (j >= n) break;
        if (iw + p.pad_l < wp) _mm512_storeu_ps(dst, r[j]);
        dst += kLanes;
        if (++iw == p.in_w) {
          iw = 0;
          if (++ih < upto) dst = ring_row(ih) + p.pad_l * kLanes;
        }
      }
    }
    next_row = upto;
  };

  // 4. Finished pixels back to NCHW.
  const int64_t out_cstride = p.out_channel_stride ? p.out_channel_stride : out_plane;
  c16::ChannelWriter out(out16, t.nc, out_cstride, (t.oh0 - p.out_row0) * p.out_w, t.residual, t.output, act);

  // 3. Output rows.
  const float* rows[K];
  for (int64_t oy = t.oh0; oy < t.oh1; ++oy) {
    const int64_t top = oy * S - p.pad_t;  // image row of kernel row 0
    const int kh0 = static_cast<int>(std::max<int64_t>(0, -top));
    const int kh1 = static_cast<int>(std::clamp<int64_t>(p.in_h - top, kh0, K));
    transpose_in(std::min(p.in_h, top + K));
    for (int kh = kh0; kh < kh1; ++kh) rows[kh] = ring_buf + ((oy * S + kh) % ring) * row_floats;
    float* dst = out.next();
    if (kh0 >= kh1) {  // a row wholly in padding: bias only
      for (int64_t x = 0; x < p.out_w; ++x) _mm512_storeu_ps(dst + x * kLanes, bias);
    } else {
      for (int64_t ox = 0; ox < p.out_w; ox += G) pixel_group<K, S>(rows, kh0, kh1, ox, w16, bias, dst + ox * kLanes);
    }
    out.commit(p.out_w);
  }
  out.finish();
}

}  // namespace

void f32_dwconv_c16__avx512(const DepthwiseParams& p, int64_t c0, int64_t oh0, int64_t oh1, const float* input,
                            const float* weights, const float* bias, const float* residual, const Activation& act,
                            float* output) {
  const int64_t nc = std::min<int64_t>(kLanes, p.channels - c0);
  XNN_CHECK(!residual || (p.out_channel_stride == 0 && p.out_row0 == 0), "f32_dwconv_c16: no residual into output bands");
  const int64_t kk = p.kernel * p.kernel, out_plane = p.out_h * p.out_w;
  const int64_t in_cstride = p.in_channel_stride ? p.in_channel_stride : p.in_h * p.in_w;
  const int64_t out_cstride = p.out_channel_stride ? p.out_channel_stride : out_plane;
  const Task t{&p,
               nc,
               oh0,
               oh1,
               input + c0 * in_cstride,
               weights + c0 * kk,
               bias ? bias + c0 : nullptr,
               residual ? residual + c0 * out_plane : nullptr,
               output + c0 * out_cstride};
  with_kernel_and_stride(p.kernel, p.stride, [&]<int K, int S>() { run_task<K, S>(t, act); });
}

}  // namespace xnn::kernels
