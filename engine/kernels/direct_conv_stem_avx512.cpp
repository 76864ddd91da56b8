// AVX-512 direct convolution for a network's first layer: at most 4 input channels (RGB, gray),
// output pixels in the zmm lanes (declared in direct_conv.h; compiled for AVX-512 F+VL+BW, called
// only when avx512_enabled()).
//
// Why not the c16 kernel (output channels in the lanes, direct_conv_avx512.cpp) here: with one
// or two blocks of 16 output channels, each FMA there needs its own broadcast input value (about
// one load per FMA), and every 16 pixels × 16 channels go back to NCHW through a 16×16 transpose;
// with 3 input channels the transposes and the padded copy weigh as much as the 27 taps. A 3->16
// 3×3 stride-2 stem ran at 62 GFLOP/s, 3->64 at 75.
//
// Here a register tile is 4 output channels × 64 consecutive output pixels of one row (16
// accumulators): per tap, 4 input vectors loaded once and 4 weights broadcast once feed 16 FMAs,
// and the tile is stored straight into the NCHW output rows (bias first, residual and activation
// at the end), a partial last vector with a mask. The input band is copied once per task into
// zero-padded rows by the depthwise padding routine (f32_dwconv_pad_rows), which for stride 2
// stores each row's even and odd columns apart, so a tap's 16 inputs are always one contiguous
// load: tap column kw of stride 2 reads the even (kw even) or odd half at offset kw / 2, and no
// load leaves its padded row. Copying the band is a third of a 3->16 stem's time, bound by
// reading the image from L3 (an AVX-512 deinterleave with vpermt2ps was no faster).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "engine/kernels/c16_avx512.h"
#include "engine/kernels/depthwise.h"
#include "engine/kernels/direct_conv.h"
#include "engine/kernels/kernel_stride_dispatch.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {
namespace {

constexpr int kCo = 4;      // output channels per register tile
constexpr int kLanes = 16;  // output pixels per vector

struct StemRow {
  const float* in;      // padded row of input channel 0, kernel row 0, at the tile's first output
  int64_t channel_stride;  // floats between input channels' padded bands
  int64_t row_stride;      // floats between padded rows
  int64_t odd_offset;      // stride 2: where a padded row's odd columns start
  const float* w[kCo];     // each output channel's weights [cin][K][K]
  __m512 bias[kCo];
};

// acc[c][v] for output channel c, pixels [16v, 16v + 16) of the tile; NV vectors (1-4).
template <int K, int S, int NV>
inline __attribute__((always_inline)) void tile_sums(const StemRow& r, int64_t cin, __m512 (&acc)[kCo][4]) {
#pragma GCC unroll 4
  for (int c = 0; c < kCo; ++c)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[c][v] = r.bias[c];
  for (int64_t ci = 0; ci < cin; ++ci) {
    const float* band = r.in + ci * r.channel_stride;
    const int64_t wo = ci * K * K;
#pragma GCC unroll 7
    for (int kh = 0; kh < K; ++kh) {
      const float* row = band + kh * r.row_stride;
#pragma GCC unroll 7
      for (int kw = 0; kw < K; ++kw) {
        const float* src = S == 1 ? row + kw : row + (kw % 2) * r.odd_offset + kw / 2;
        __m512 x[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) x[v] = _mm512_loadu_ps(src + v * kLanes);
#pragma GCC unroll 4
        for (int c = 0; c < kCo; ++c) {
          const __m512 w = _mm512_set1_ps(r.w[c][wo + kh * K + kw]);
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) acc[c][v] = _mm512_fmadd_ps(x[v], w, acc[c][v]);
        }
      }
    }
  }
}

// One tile: channels [co, co + channels) (channels <= 4; the missing ones computed from a copy
// of the last and not stored), pixels [0, pixels) of the output row at out (channel c at
// out + c·out_plane), residual laid out alike or null.
template <int K, int S, int NV>
void tile(const StemRow& r, int64_t cin, int channels, int64_t pixels, const float* residual, float* out,
          int64_t out_plane, const c16::Epilogue512& ep) {
  __m512 acc[kCo][4];
  tile_sums<K, S, NV>(r, cin, acc);
  const __mmask16 last = c16::first_lanes(pixels - (NV - 1) * kLanes);
#pragma GCC unroll 4
  for (int c = 0; c < kCo; ++c) {
    if (c >= channels) break;
    float* o = out + c * out_plane;
    const float* res = residual ? residual + c * out_plane : nullptr;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v == NV - 1 ? last : static_cast<__mmask16>(0xffff);
      __m512 y = acc[c][v];
      if (res) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, res + v * kLanes));
      _mm512_mask_storeu_ps(o + v * kLanes, m, ep.apply(y));
    }
  }
}

template <int K, int S>
void run_band(const DirectConvParams& p, int64_t co_begin, int64_t co_end, int64_t oh0, int64_t oh1,
              const float* input, const float* weights, const float* bias, const float* residual, const Activation& act,
              float* output) {
  const int64_t cin = p.in_channels, taps = cin * K * K;
  const int64_t out_plane = p.out_channel_stride > 0 ? p.out_channel_stride : p.out_h * p.out_w;
  // Whole vectors of every row stay inside the padded row (out_w rounded up to 16).
  const int64_t vector_w = (p.out_w + kLanes - 1) / kLanes * kLanes;
  const DwPadRow pad = dwconv_pad_row(DepthwiseParams{cin, p.in_h, p.in_w, p.out_h, vector_w, K, S, p.pad_t, p.pad_l});
  const int64_t rows_in = (oh1 - oh0 - 1) * S + K;
  const int64_t channel_stride = rows_in * pad.row_floats;
  float* buf = thread_scratch_f32(static_cast<size_t>(cin * channel_stride), 2);
  for (int64_t ci = 0; ci < cin; ++ci) {
    f32_dwconv_pad_rows(pad, input + ci * p.in_h * p.in_w, p.in_h, oh0 * S - p.pad_t, rows_in,
                        buf + ci * channel_stride, Isa::kAvx2);
  }
  const c16::Epilogue512 ep(act);
  StemRow r;
  r.channel_stride = channel_stride;
  r.row_stride = pad.row_floats;
  r.odd_offset = pad.odd_offset;
  for (int64_t co = co_begin; co < co_end; co += kCo) {
    const int channels = static_cast<int>(std::min<int64_t>(kCo, co_end - co));
    for (int c = 0; c < kCo; ++c) {
      const int64_t ch = co + std::min(c, channels - 1);
      r.w[c] = weights + ch * taps;
      r.bias[c] = _mm512_set1_ps(bias ? bias[ch] : 0.0f);
    }
    for (int64_t oy = oh0; oy < oh1; ++oy) {
      const float* in_row = buf + (oy - oh0) * S * pad.row_floats;
      const int64_t out_off = co * out_plane + (oy - p.out_row0) * p.out_w;
      for (int64_t ox = 0; ox < p.out_w; ox += 4 * kLanes) {
        r.in = in_row + ox;
        const int64_t pixels = std::min<int64_t>(4 * kLanes, p.out_w - ox);
        const float* res = residual ? residual + out_off + ox : nullptr;
        float* out = output + out_off + ox;
        switch ((pixels + kLanes - 1) / kLanes) {
          case 4: tile<K, S, 4>(r, cin, channels, pixels, res, out, out_plane, ep); break;
          case 3: tile<K, S, 3>(r, cin, channels, pixels, res, out, out_plane, ep); break;
          case 2: tile<K, S, 2>(r, cin, channels, pixels, res, out, out_plane, ep); break;
          default: tile<K, S, 1>(r, cin, channels, pixels, res, out, out_plane, ep); break;
        }
      }
    }
  }
}

}  // namespace

void f32_conv_direct_stem__avx512(const DirectConvParams& p, int64_t co_begin, int64_t co_end, int64_t oh0, int64_t oh1,
                                  const float* input, const float* weights, const float* bias, const float* residual,
                                  const Activation& act, float* output) {
  with_kernel_and_stride(p.kernel, p.stride, [&]<int K, int S>() {
    run_band<K, S>(p, co_begin, co_end, oh0, oh1, input, weights, bias, residual, act, output);
  });
}

}  // namespace xnn::kernels
