// Pieces shared by the AVX-512 kernels that compute 16 channels in the zmm lanes of an NCHW
// tensor (depthwise_avx512.cpp: 16 channels of a depthwise convolution; direct_conv_avx512.cpp:
// 16 output channels of a convolution with few input channels): the 16×16 transpose and the
// writer that turns pixel vectors [pixel][16 channels] back into NCHW planes with the residual
// and the activation. Include only from files compiled for AVX-512 F+VL+BW (*_avx512.cpp).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "engine/kernels/activation.h"
#include "engine/kernels/vmath_avx512.h"

namespace xnn::kernels::c16 {

constexpr int64_t kLanes = 16;

inline __mmask16 first_lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// r[i][j] <- r[j][i] for a 16×16 block of floats, one row per register.
inline __attribute__((always_inline)) void transpose16(__m512 r[16]) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  const auto lo64 = [](__m512 a, __m512 b) {
    return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
  };
  const auto hi64 = [](__m512 a, __m512 b) {
    return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
  };
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    r[4 * i + 0] = lo64(t[4 * i + 0], t[4 * i + 2]);
    r[4 * i + 1] = hi64(t[4 * i + 0], t[4 * i + 2]);
    r[4 * i + 2] = lo64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = hi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // Now r[4i + m] holds, in each 128-bit lane L, column 4L + m of rows 4i..4i+3. Two rounds of
  // 128-bit shuffles gather the lanes.
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {
      t[8 * h + m] = _mm512_shuffle_f32x4(r[8 * h + m], r[8 * h + 4 + m], 0x88);
      t[8 * h + 4 + m] = _mm512_shuffle_f32x4(r[8 * h + m], r[8 * h + 4 + m], 0xDD);
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < 8; ++m) {
    r[m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0x88);
    r[8 + m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0xDD);
  }
}

// `count` rows of `row_floats` floats (rows `stride` apart, count <= 16, rows past count read as
// zero) transposed into [row_floats][16] at dst: 16 columns per transpose.
inline void transpose_rows_in(const float* src, int64_t stride, int64_t count, int64_t row_floats, float* dst) {
  for (int64_t q = 0; q < row_floats; q += 16) {
    const int64_t n = row_floats - q < 16 ? row_floats - q : 16;
    const __mmask16 m = first_lanes(n);
    __m512 r[16];
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c) r[c] = c < count ? _mm512_maskz_loadu_ps(m, src + c * stride + q) : _mm512_setzero_ps();
    transpose16(r);
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) {
      if (j >= n) break;
      _mm512_storeu_ps(dst + (q + j) * kLanes, r[j]);
    }
  }
}

// The activations applied in registers, lane-wise the formulas of depthwise_avx2.cpp's Epilogue
// (held to apply_activation_scalar by the tests); Sigmoid and SiLU those of the AVX2 activation
// pass (vmath_avx512.h).
struct Epilogue512 {
  ActKind kind;
  __m512 alpha, beta;
  explicit Epilogue512(const Activation& act)
      : kind(act.kind), alpha(_mm512_set1_ps(act.alpha)), beta(_mm512_set1_ps(act.beta)) {}
  __m512 apply(__m512 x) const {
    const __m512 zero = _mm512_setzero_ps();
    switch (kind) {
      case ActKind::kRelu: return _mm512_max_ps(x, zero);
      case ActKind::kClip:
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, alpha, _CMP_LT_OQ), _mm512_min_ps(beta, x), alpha);
      case ActKind::kLeakyRelu:
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, zero, _CMP_GE_OQ), _mm512_mul_ps(x, alpha), x);
      case ActKind::kHardSwish: {
        __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.0f / 6.0f), _mm512_set1_ps(0.5f));
        t = _mm512_min_ps(_mm512_set1_ps(1.0f), _mm512_max_ps(zero, t));
        return _mm512_mul_ps(x, t);
      }
      case ActKind::kHardSigmoid:
        return _mm512_min_ps(_mm512_set1_ps(1.0f), _mm512_max_ps(zero, _mm512_fmadd_ps(x, alpha, beta)));
      case ActKind::kSigmoid: return vmath512::sigmoid_ps(x);
      case ActKind::kSilu: return vmath512::silu_ps(x);
      default: return x;
    }
  }
};

// Output pixels computed as [pixel][16 channels] vectors, written to `channels` NCHW planes
// (plane_floats apart) starting at pixel `first`: the caller appends rows of pixel vectors at
// next(), then commit(n); full groups of 16 pixels are transposed out (residual added, the
// in-register activation applied, masked stores), flat over the plane, so a 7-wide row costs no
// more than a 16-wide one. `buf` holds at least pixels_capacity(row) vectors; appended rows may
// write up to `overrun` vectors past their end (the next row overwrites them).
class ChannelWriter {
 public:
  static int64_t pixels_capacity(int64_t row, int64_t overrun) { return 64 + row + overrun + 16; }

  ChannelWriter(float* buf, int64_t channels, int64_t plane_floats, int64_t first, const float* residual, float* output,
                const Activation& act)
      : buf_(buf), channels_(channels), plane_(plane_floats), first_(first), residual_(residual), output_(output),
        ep_(act) {}

  float* next() const { return buf_ + count_ * kLanes; }
  void commit(int64_t pixels) {
    count_ += pixels;
    if (count_ >= 64) flush(false);
  }
  // Writes what is left.
  void finish() { flush(true); }

 private:
  void flush(bool all) {
    const int64_t done = all ? count_ : count_ / 16 * 16;
    for (int64_t s = 0; s < done; s += 16) {
      const __mmask16 m = first_lanes(done - s);
      __m512 r[16];
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) r[j] = _mm512_loadu_ps(buf_ + (s + j) * kLanes);
      transpose16(r);
      // Constant register indices (unrolled), so r stays in registers.
#pragma GCC unroll 16
      for (int c = 0; c < 16; ++c) {
        if (c >= channels_) break;
        const int64_t o = c * plane_ + first_ + s;
        __m512 v = r[c];
        if (residual_) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, residual_ + o));
        _mm512_mask_storeu_ps(output_ + o, m, ep_.apply(v));
      }
    }
    const int64_t rest = count_ - done;
    if (rest > 0) std::memmove(buf_, buf_ + done * kLanes, static_cast<size_t>(rest * kLanes) * sizeof(float));
    first_ += done;
    count_ = rest;
  }

  float* buf_;
  int64_t channels_, plane_, first_, count_ = 0;
  const float* residual_;
  float* output_;
  Epilogue512 ep_;
};

}  // namespace xnn::kernels::c16
