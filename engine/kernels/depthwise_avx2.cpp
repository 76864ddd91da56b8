// AVX2+FMA depthwise row kernels (declared in depthwise.h; the driver is depthwise.cpp).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "engine/kernels/depthwise.h"
#include "engine/kernels/elementwise.h"

namespace xnn::kernels {
namespace {

inline __m256i tail_mask(int64_t k) {
  alignas(32) static const int32_t table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table + 8 - k));
}

// The activations cheap enough to apply in registers, lane-wise equal to apply_activation_scalar
// (the same formulas as elementwise_avx2.cpp's act_ps; the tests hold both to the scalar
// definition). Sigmoid and Silu run afterwards over the finished rows with f32_vact__avx2.
struct Epilogue {
  ActKind kind;
  __m256 alpha, beta;
  bool inline_act() const { return kind != ActKind::kSigmoid && kind != ActKind::kSilu; }
  __m256 apply(__m256 x) const {
    const __m256 zero = _mm256_setzero_ps();
    switch (kind) {
      case ActKind::kRelu: return _mm256_max_ps(x, zero);
      case ActKind::kClip:
        return _mm256_blendv_ps(_mm256_min_ps(beta, x), alpha, _mm256_cmp_ps(x, alpha, _CMP_LT_OQ));
      case ActKind::kLeakyRelu:
        return _mm256_blendv_ps(_mm256_mul_ps(x, alpha), x, _mm256_cmp_ps(x, zero, _CMP_GE_OQ));
      case ActKind::kHardSwish: {
        __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.0f / 6.0f), _mm256_set1_ps(0.5f));
        t = _mm256_min_ps(_mm256_set1_ps(1.0f), _mm256_max_ps(zero, t));
        return _mm256_mul_ps(x, t);
      }
      case ActKind::kHardSigmoid:
        return _mm256_min_ps(_mm256_set1_ps(1.0f), _mm256_max_ps(zero, _mm256_fmadd_ps(x, alpha, beta)));
      default: return x;
    }
  }
};

// R output rows × 8·NV columns starting at column x. Input row i of the group feeds output row
// r through kernel row kh = i - r·S; each loaded vector is reused by every such r.
// K = 3 keeps the 9 broadcast weights in registers (wv); K = 5 and 7 broadcast from memory (25
// or 49 weights do not fit beside the accumulators), which the 16-column step amortises.
template <int K, int S, int R, int NV, bool kMasked>
inline __attribute__((always_inline)) void tile(const DwRows& a, const __m256* wv, const Epilogue& ep, int64_t x,
                                                __m256i mask) {
  __m256 acc[R][NV];
  const __m256 vb = _mm256_set1_ps(a.bias);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) acc[r][j] = vb;
  }
#pragma GCC unroll 16
  for (int i = 0; i < (R - 1) * S + K; ++i) {
    const float* row = a.in + i * a.in_stride + x;
#pragma GCC unroll 7
    for (int kw = 0; kw < K; ++kw) {
      const float* p = S == 1 ? row + kw : row + ((kw & 1) ? a.odd_offset : 0) + kw / 2;
      __m256 v[NV];
#pragma GCC unroll 2
      for (int j = 0; j < NV; ++j) v[j] = _mm256_loadu_ps(p + 8 * j);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const int kh = i - r * S;
        if (kh < 0 || kh >= K) continue;
        const __m256 w = K == 3 ? wv[kh * K + kw] : _mm256_broadcast_ss(a.weights + kh * K + kw);
#pragma GCC unroll 2
        for (int j = 0; j < NV; ++j) acc[r][j] = _mm256_fmadd_ps(v[j], w, acc[r][j]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) {
      const int64_t o = r * a.out_w + x + 8 * j;
      __m256 v = acc[r][j];
      if (a.residual) {
        v = _mm256_add_ps(v, kMasked ? _mm256_maskload_ps(a.residual + o, mask) : _mm256_loadu_ps(a.residual + o));
      }
      v = ep.apply(v);
      if (kMasked) {
        _mm256_maskstore_ps(a.out + o, mask, v);
      } else {
        _mm256_storeu_ps(a.out + o, v);
      }
    }
  }
}

// R output rows of one channel, across the whole output width.
template <int K, int S, int R>
inline __attribute__((always_inline)) void group(const DwRows& a, const __m256* wv, const Epilogue& ep) {
  const __m256i none = _mm256_setzero_si256();
  int64_t x = 0;
  if constexpr (K >= 5) {
    for (; x + 16 <= a.out_w; x += 16) tile<K, S, R, 2, false>(a, wv, ep, x, none);
  }
  for (; x + 8 <= a.out_w; x += 8) tile<K, S, R, 1, false>(a, wv, ep, x, none);
  if (x < a.out_w) tile<K, S, R, 1, true>(a, wv, ep, x, tail_mask(a.out_w - x));
}

// All a.rows rows: groups of 4, then the remainder. Weights and activation constants are set
// up once per call, which matters for the 7×7 and 14×14 planes of late layers.
template <int K, int S>
void rows_kernel(const DwRows& rows, const Activation& act) {
  Epilogue ep{act.kind, _mm256_set1_ps(act.alpha), _mm256_set1_ps(act.beta)};
  if (!ep.inline_act()) ep.kind = ActKind::kNone;
  __m256 wv[K == 3 ? 9 : 1];
  if constexpr (K == 3) {
#pragma GCC unroll 9
    for (int k = 0; k < 9; ++k) wv[k] = _mm256_broadcast_ss(rows.weights + k);
  }
  DwRows a = rows;
  const auto advance = [&](int64_t r) {
    a.in += r * S * a.in_stride;
    a.out += r * a.out_w;
    if (a.residual) a.residual += r * a.out_w;
  };
  int64_t r = 0;
  for (; r + 4 <= rows.rows; r += 4, advance(4)) group<K, S, 4>(a, wv, ep);
  switch (rows.rows - r) {
    case 1: group<K, S, 1>(a, wv, ep); break;
    case 2: group<K, S, 2>(a, wv, ep); break;
    case 3: group<K, S, 3>(a, wv, ep); break;
    default: break;
  }
  if (act.kind == ActKind::kSigmoid || act.kind == ActKind::kSilu) {
    f32_vact__avx2(rows.rows * rows.out_w, rows.out, rows.out, act);  // the rows are contiguous
  }
}

// Input columns [c, c + 8) of src, zero where outside [0, in_w). Masked-off lanes of a masked
// load never touch memory, so only columns inside the row are read; the address is formed as
// an integer so that no out-of-range pointer is created.
inline __m256 load_cols(const float* src, int64_t in_w, int64_t c) {
  if (c >= 0 && c + 8 <= in_w) return _mm256_loadu_ps(src + c);
  if (c >= in_w || c + 8 <= 0) return _mm256_setzero_ps();
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(c)), lane);
  const __m256i inside = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), idx),
                                             _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(in_w)), idx));
  const auto addr = reinterpret_cast<uintptr_t>(src) + static_cast<uintptr_t>(c) * sizeof(float);
  return _mm256_maskload_ps(reinterpret_cast<const float*>(addr), inside);
}

// G consecutive output pixels (ox .. ox + G - 1) of output row oy of a channel block: taps of
// the rows [kh0, kh1) that fall inside the image (the others would only add padding zeros),
// all kernel columns, from the zero-padded HWC8 buffer. G independent accumulators hide the
// FMA latency that one pixel's chain of taps would expose.
template <int G>
inline __attribute__((always_inline)) void c8_pixels(const DwChannelBlock& b, const Epilogue& ep, int64_t oy,
                                                     int64_t ox, int64_t kh0, int64_t kh1) {
  const int64_t k = b.kernel, s = b.stride;
  __m256 acc[G];
  const __m256 bias = _mm256_loadu_ps(b.bias8);
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    acc[g] = b.has_residual ? _mm256_add_ps(bias, _mm256_loadu_ps(b.out8 + ((oy * b.out_w) + ox + g) * 8)) : bias;
  }
  for (int64_t kh = kh0; kh < kh1; ++kh) {
    const float* row = b.in8 + ((oy * s + kh) * b.in_w8 + ox * s) * 8;
    const float* w = b.w8 + kh * k * 8;
    for (int64_t kw = 0; kw < k; ++kw) {
      const __m256 wv = _mm256_loadu_ps(w + kw * 8);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) acc[g] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(row + (g * s + kw) * 8), acc[g]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) _mm256_storeu_ps(b.out8 + ((oy * b.out_w) + ox + g) * 8, ep.apply(acc[g]));
}

}  // namespace

void f32_dwconv_c8_block__avx2(const DwChannelBlock& b, const Activation& act) {
  Epilogue ep{act.kind, _mm256_set1_ps(act.alpha), _mm256_set1_ps(act.beta)};
  if (!ep.inline_act()) ep.kind = ActKind::kNone;
  for (int64_t oy = 0; oy < b.out_h; ++oy) {
    const int64_t top = oy * b.stride - b.pad_t;  // input row of kernel row 0
    const int64_t kh0 = std::max<int64_t>(0, -top), kh1 = std::min<int64_t>(b.kernel, b.in_h - top);
    int64_t ox = 0;
    for (; ox + 4 <= b.out_w; ox += 4) c8_pixels<4>(b, ep, oy, ox, kh0, kh1);
    switch (b.out_w - ox) {
      case 1: c8_pixels<1>(b, ep, oy, ox, kh0, kh1); break;
      case 2: c8_pixels<2>(b, ep, oy, ox, kh0, kh1); break;
      case 3: c8_pixels<3>(b, ep, oy, ox, kh0, kh1); break;
      default: break;
    }
  }
  if (act.kind == ActKind::kSigmoid || act.kind == ActKind::kSilu) {
    f32_vact__avx2(b.out_h * b.out_w * 8, b.out8, b.out8, act);
  }
}

void f32_dwconv_pad_rows__avx2(const DwPadRow& r, const float* plane, int64_t in_h, int64_t ih, int64_t count,
                               float* dst) {
  // Locals: the stores below may alias anything (the intrinsics' types do), so fields read
  // through `r` would be reloaded on every iteration.
  const int64_t in_w = r.in_w, pad_l = r.pad_l, row_floats = r.row_floats, half = r.odd_offset;
  const __m256 zero = _mm256_setzero_ps();
  const __m256i perm = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  for (int64_t row = 0; row < count; ++row, ++ih, dst += row_floats) {
    if (ih < 0 || ih >= in_h) {
      for (int64_t q = 0; q < row_floats; q += 8) _mm256_storeu_ps(dst + q, zero);
      continue;
    }
    const float* src = plane + ih * in_w;
    // Padded columns [q, q + 8) read input columns [q - pad_l, q - pad_l + 8): a left border
    // (masked), the interior (plain loads), a right border (masked), then zeros.
    if (r.stride == 1) {
      int64_t q = 0;
      for (; q < row_floats && q < pad_l; q += 8) _mm256_storeu_ps(dst + q, load_cols(src, in_w, q - pad_l));
      for (; q + 8 <= row_floats && q - pad_l + 8 <= in_w; q += 8) {
        _mm256_storeu_ps(dst + q, _mm256_loadu_ps(src + (q - pad_l)));
      }
      for (; q < row_floats && q - pad_l < in_w; q += 8) _mm256_storeu_ps(dst + q, load_cols(src, in_w, q - pad_l));
      for (; q < row_floats; q += 8) _mm256_storeu_ps(dst + q, zero);
      continue;
    }
    // Stride 2: 8 padded columns [2j, 2j + 8) at a time; one lane permute puts the 4 even ones in
    // the low half and the 4 odd ones in the high half, stored with two 128-bit stores (one
    // shuffle per 8 inputs).
    float* even = dst;
    float* odd = dst + half;
    const auto put = [&](int64_t j, __m256 v) {
      v = _mm256_permutevar8x32_ps(v, perm);
      _mm_storeu_ps(even + j, _mm256_castps256_ps128(v));
      _mm_storeu_ps(odd + j, _mm256_extractf128_ps(v, 1));
    };
    int64_t j = 0;
    for (; j < half && 2 * j < pad_l; j += 4) put(j, load_cols(src, in_w, 2 * j - pad_l));
    for (; j + 8 <= half && 2 * j - pad_l + 16 <= in_w; j += 8) {
      const float* p = src + (2 * j - pad_l);
      const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
      put(j, a);
      put(j + 4, b);
    }
    for (; j < half && 2 * j - pad_l < in_w; j += 4) put(j, load_cols(src, in_w, 2 * j - pad_l));
    for (; j < half; j += 4) {
      _mm_storeu_ps(even + j, _mm256_castps256_ps128(zero));
      _mm_storeu_ps(odd + j, _mm256_castps256_ps128(zero));
    }
  }
}

void f32_dwconv_rows__avx2(const DwRows& a, const Activation& act) {
  if (a.kernel == 3) {
    return a.stride == 1 ? rows_kernel<3, 1>(a, act) : rows_kernel<3, 2>(a, act);
  }
  if (a.kernel == 5) {
    return a.stride == 1 ? rows_kernel<5, 1>(a, act) : rows_kernel<5, 2>(a, act);
  }
  return a.stride == 1 ? rows_kernel<7, 1>(a, act) : rows_kernel<7, 2>(a, act);
}

}  // namespace xnn::kernels
