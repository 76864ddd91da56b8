// AVX-512 direct convolution with 16 output channels in the zmm lanes (declared in
// direct_conv.h; compiled for AVX-512 F+VL+BW, called only when avx512_enabled()).
//
// Why: a first layer (1 or 3 input channels) or LeNet's 6-channel 5×5 layer has K = C_in·k² of
// 9-150, too short for a GEMM to amortise packing, and the AVX2 direct kernel re-reads and
// re-writes each output row C_in times (one depthwise-style pass per input channel). With the
// output channels in the lanes every tap is one FMA of a broadcast input value with a weight
// vector, all C_in·k² taps of a pixel accumulate in one register, and the output is written once.
//
// One task = a band of output rows × a range of output channels (all of them unless the bands
// alone cannot feed the threads):
//   1. the band's input rows copied, zero-padded, into [ci][rows][wp + slack] (so taps never
//      test a border), once for all the task's channels (per block of 16 it was a fifth of a
//      3->32 stem's time);
//   then per two blocks of 16 output channels (one when only one is left):
//   2. weights [co][ci][k][k] transposed to [ci·k·k][16], bias to 16 lanes;
//   3. each output row in groups of 8 pixels: 16 accumulators, per tap two weight-vector loads
//      and 8 broadcasts, each feeding both blocks' FMAs (one block alone: 9 loads per 8 FMAs,
//      bound by the load ports); a row's last group may run past its end (buffers have slack,
//      and the next row overwrites those pixel slots);
//   4. pixels written back to NCHW through c16::ChannelWriter (transposes, residual,
//      activation).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>

#include "engine/kernels/c16_avx512.h"
#include "engine/kernels/direct_conv.h"
#include "engine/kernels/kernel_stride_dispatch.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {
namespace {

using c16::kLanes;
constexpr int kGroup = 8;  // output pixels per register group

// G pixels starting at output column ox for NB blocks of 16 output channels (weights w16 +
// b·taps·16, results out + b·out_stride): rows[ci·K + kh] is the padded row of input channel ci
// at kernel row kh (column 0 = padded column 0). Two blocks share each broadcast input value:
// 10 loads per 16 FMAs instead of 9 per 8, which the load ports, not the FMAs, bounded.
template <int K, int S, int NB>
inline __attribute__((always_inline)) void pixel_group(const float* const* rows, int64_t cin, int64_t ox,
                                                       const float* w16, int64_t taps, const __m512* bias,
                                                       float* out, int64_t out_stride) {
  __m512 acc[NB][kGroup];
#pragma GCC unroll 2
  for (int b = 0; b < NB; ++b)
#pragma GCC unroll 8
    for (int g = 0; g < kGroup; ++g) acc[b][g] = bias[b];
  for (int64_t ci = 0; ci < cin; ++ci) {
#pragma GCC unroll 7
    for (int kh = 0; kh < K; ++kh) {
      const float* row = rows[ci * K + kh] + ox * S;
      const float* wk = w16 + (ci * K + kh) * K * kLanes;
#pragma GCC unroll 7
      for (int kw = 0; kw < K; ++kw) {
        __m512 w[NB];
#pragma GCC unroll 2
        for (int b = 0; b < NB; ++b) w[b] = _mm512_loadu_ps(wk + b * taps * kLanes + kw * kLanes);
#pragma GCC unroll 8
        for (int g = 0; g < kGroup; ++g) {
          const __m512 x = _mm512_set1_ps(row[g * S + kw]);
#pragma GCC unroll 2
          for (int b = 0; b < NB; ++b) acc[b][g] = _mm512_fmadd_ps(x, w[b], acc[b][g]);
        }
      }
    }
  }
#pragma GCC unroll 2
  for (int b = 0; b < NB; ++b)
#pragma GCC unroll 8
    for (int g = 0; g < kGroup; ++g) _mm512_storeu_ps(out + b * out_stride + g * kLanes, acc[b][g]);
}

template <int K, int S>
void run_task(const DirectConvParams& p, int64_t co_begin, int64_t co_end, int64_t oh0, int64_t oh1,
              const float* input, const float* weights, const float* bias, const float* residual, const Activation& act,
              float* output) {
  const int64_t cin = p.in_channels, taps = cin * K * K;
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  const int64_t rows_in = (oh1 - oh0 - 1) * S + K;          // padded rows the band reads
  const int64_t wp = (p.out_w - 1) * S + K;                 // padded columns the outputs read
  const int64_t row_floats = wp + kGroup * S;               // + a last group's over-read
  const int64_t in_floats = cin * rows_in * row_floats;
  const int64_t out_pixels = c16::ChannelWriter::pixels_capacity(p.out_w, kGroup);
  // Two blocks of 16 output channels at a time: two pixel buffers and two weight blocks.
  float* in_buf = thread_scratch_f32(static_cast<size_t>(in_floats + 2 * out_pixels * kLanes + 2 * taps * kLanes), 2);
  float* out16 = in_buf + in_floats;
  float* w16 = out16 + 2 * out_pixels * kLanes;

  // 1. Padded input rows: padded row r of the band is input row oh0·S - pad_t + r, padded
  // column q input column q - pad_l; only the padding is zeroed.
  const int64_t q0 = std::min(wp, p.pad_l), q1 = std::clamp(p.pad_l + p.in_w, q0, wp);  // image columns
  for (int64_t ci = 0; ci < cin; ++ci) {
    for (int64_t r = 0; r < rows_in; ++r) {
      float* dst = in_buf + (ci * rows_in + r) * row_floats;
      const int64_t ih = oh0 * S - p.pad_t + r;
      if (ih < 0 || ih >= p.in_h || q1 <= q0) {
        std::memset(dst, 0, static_cast<size_t>(row_floats) * sizeof(float));
        continue;
      }
      std::memset(dst, 0, static_cast<size_t>(q0) * sizeof(float));
      std::memcpy(dst + q0, input + ci * in_plane + ih * p.in_w + (q0 - p.pad_l), static_cast<size_t>(q1 - q0) * sizeof(float));
      std::memset(dst + q1, 0, static_cast<size_t>(row_floats - q1) * sizeof(float));
    }
  }
  constexpr int64_t kMaxRows = 16 * 7;
  const float* rows[kMaxRows];
  for (int64_t co0 = co_begin; co0 < co_end;) {
    const int nb = co_end - co0 > kLanes ? 2 : 1;
    // 2. Weights and bias, per block.
    std::optional<c16::ChannelWriter> writers[2];  // the same pixels in step: buffers out_pixels apart
    __m512 bias_v[2];
    for (int b = 0; b < nb; ++b) {
      const int64_t c0 = co0 + b * kLanes, nc = std::min<int64_t>(kLanes, co_end - c0);
      c16::transpose_rows_in(weights + c0 * taps, taps, nc, taps, w16 + b * taps * kLanes);
      bias_v[b] = bias ? _mm512_maskz_loadu_ps(c16::first_lanes(nc), bias + c0) : _mm512_setzero_ps();
      writers[b].emplace(out16 + b * out_pixels * kLanes, nc, out_plane, oh0 * p.out_w,
                         residual ? residual + c0 * out_plane : nullptr, output + c0 * out_plane, act);
    }
    // 3-4. Output rows.
    for (int64_t oy = oh0; oy < oh1; ++oy) {
      for (int64_t ci = 0; ci < cin; ++ci) {
        for (int kh = 0; kh < K; ++kh) rows[ci * K + kh] = in_buf + (ci * rows_in + (oy - oh0) * S + kh) * row_floats;
      }
      float* dst = writers[0]->next();
      for (int64_t ox = 0; ox < p.out_w; ox += kGroup) {
        if (nb == 2) {
          pixel_group<K, S, 2>(rows, cin, ox, w16, taps, bias_v, dst + ox * kLanes, out_pixels * kLanes);
        } else {
          pixel_group<K, S, 1>(rows, cin, ox, w16, taps, bias_v, dst + ox * kLanes, 0);
        }
      }
      for (int b = 0; b < nb; ++b) writers[b]->commit(p.out_w);
    }
    for (int b = 0; b < nb; ++b) writers[b]->finish();
    co0 += nb * kLanes;
  }
}

}  // namespace

void f32_conv_direct_c16__avx512(const DirectConvParams& p, int64_t co_begin, int64_t co_end, int64_t oh0, int64_t oh1,
                                 const float* input, const float* weights, const float* bias, const float* residual,
                                 const Activation& act, float* output) {
  with_kernel_and_stride(p.kernel, p.stride, [&]<int K, int S>() {
    run_task<K, S>(p, co_begin, co_end, oh0, oh1, input, weights, bias, residual, act, output);
  });
}

}  // namespace xnn::kernels
