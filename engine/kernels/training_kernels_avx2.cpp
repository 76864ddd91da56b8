// The training kernels for AVX2 (this file's name gives it -mavx2 -mfma; engine/CMakeLists.txt
// turns FP contraction off for it). Elementwise passes are the baseline bodies vectorised by the
// compiler; the reductions and the max pool are written out, because the compiler vectorises
// the 16-lane sums badly (permutes per element) and not the pool's stride-2 loads at all. Each
// computes exactly what the baseline body computes: lane j of the two accumulators holds the
// same partial sum as a[j] there, added up in the same order.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "engine/kernels/training_kernels.h"
#include "engine/kernels/training_kernels_impl.h"

namespace xnn::kernels::training_avx2 {
namespace impl = training_impl;
namespace {

static_assert(impl::kLanes == 16, "two ymm accumulators hold the 16 lanes");

// s (the tail's sum) + lanes 0..15 in order, as the baseline body adds them.
float add_lanes(float s, __m256 lo, __m256 hi) {
  alignas(32) float lanes[16];
  _mm256_store_ps(lanes, lo);
  _mm256_store_ps(lanes + 8, hi);
  for (float v : lanes) s += v;
  return s;
}

}  // namespace

void f32_shifted_sums(const float* x, int64_t n, float shift, float* sum, float* sum_sq) {
  const __m256 vs = _mm256_set1_ps(shift);
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), vs);
    const __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vs);
    a0 = _mm256_add_ps(a0, d0);
    a1 = _mm256_add_ps(a1, d1);
    b0 = _mm256_add_ps(b0, _mm256_mul_ps(d0, d0));
    b1 = _mm256_add_ps(b1, _mm256_mul_ps(d1, d1));
  }
  float s = 0, q = 0;
  for (; i < n; ++i) {
    const float d = x[i] - shift;
    s += d;
    q += d * d;
  }
  *sum = add_lanes(s, a0, a1);
  *sum_sq = add_lanes(q, b0, b1);
}

namespace {

// act(z) on 8 lanes: the baseline body's comparisons and roundings, lane by lane (division by 6
// as a division, no FMA), so both paths give the same bits. Templates on the kind: the loops
// below are instantiated per kind, so the choice is made once per row, not per vector.
template <ActKind K>
inline __m256 act_value_vec(__m256 z, const Activation& act) {
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  switch (K) {
    case ActKind::kRelu: return _mm256_and_ps(z, _mm256_cmp_ps(z, zero, _CMP_GT_OQ));
    case ActKind::kClip: {
      const __m256 lo = _mm256_set1_ps(act.alpha), hi = _mm256_set1_ps(act.beta);
      const __m256 up = _mm256_blendv_ps(z, hi, _mm256_cmp_ps(z, hi, _CMP_GT_OQ));
      return _mm256_blendv_ps(up, lo, _mm256_cmp_ps(z, lo, _CMP_LT_OQ));
    }
    case ActKind::kLeakyRelu:
      return _mm256_blendv_ps(_mm256_mul_ps(z, _mm256_set1_ps(act.alpha)), z, _mm256_cmp_ps(z, zero, _CMP_GE_OQ));
    case ActKind::kHardSwish: {
      __m256 t = _mm256_add_ps(_mm256_div_ps(z, _mm256_set1_ps(6.0f)), _mm256_set1_ps(0.5f));
      t = _mm256_blendv_ps(t, zero, _mm256_cmp_ps(t, zero, _CMP_LT_OQ));
      t = _mm256_blendv_ps(t, one, _mm256_cmp_ps(t, one, _CMP_GT_OQ));
      return _mm256_mul_ps(z, t);
    }
    case ActKind::kHardSigmoid: {
      __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(act.alpha), z), _mm256_set1_ps(act.beta));
      t = _mm256_blendv_ps(t, zero, _mm256_cmp_ps(t, zero, _CMP_LT_OQ));
      return _mm256_blendv_ps(t, one, _mm256_cmp_ps(t, one, _CMP_GT_OQ));
    }
    default: return z;
  }
}

// dy·act'(z) on 8 lanes (impl::act_grad lane by lane).
template <ActKind K>
inline __m256 act_grad_vec(__m256 z, __m256 g, const Activation& act) {
  const __m256 zero = _mm256_setzero_ps();
  switch (K) {
    case ActKind::kRelu: return _mm256_and_ps(g, _mm256_cmp_ps(z, zero, _CMP_GT_OQ));
    case ActKind::kClip:
      return _mm256_and_ps(g, _mm256_and_ps(_mm256_cmp_ps(z, _mm256_set1_ps(act.alpha), _CMP_GT_OQ),
                                            _mm256_cmp_ps(z, _mm256_set1_ps(act.beta), _CMP_LT_OQ)));
    case ActKind::kLeakyRelu:
      return _mm256_blendv_ps(_mm256_mul_ps(_mm256_set1_ps(act.alpha), g), g, _mm256_cmp_ps(z, zero, _CMP_GT_OQ));
    case ActKind::kHardSwish: {
      const __m256 mid = _mm256_mul_ps(g, _mm256_add_ps(_mm256_div_ps(z, _mm256_set1_ps(3.0f)), _mm256_set1_ps(0.5f)));
      const __m256 r = _mm256_blendv_ps(mid, g, _mm256_cmp_ps(z, _mm256_set1_ps(3.0f), _CMP_NLE_UQ));
      return _mm256_andnot_ps(_mm256_cmp_ps(z, _mm256_set1_ps(-3.0f), _CMP_LT_OQ), r);
    }
    case ActKind::kHardSigmoid: {
      const __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(act.alpha), z), _mm256_set1_ps(act.beta));
      const __m256 in = _mm256_and_ps(_mm256_cmp_ps(t, zero, _CMP_GT_OQ), _mm256_cmp_ps(t, _mm256_set1_ps(1.0f), _CMP_LT_OQ));
      return _mm256_and_ps(_mm256_mul_ps(_mm256_set1_ps(act.alpha), g), in);
    }
    default: return g;
  }
}

// Calls f<K>() for the activation's kind (the kinds training_fusable accepts).
template <typename F>
void with_kind(const Activation& act, F&& f) {
  switch (act.kind) {
    case ActKind::kRelu: return f.template operator()<ActKind::kRelu>();
    case ActKind::kClip: return f.template operator()<ActKind::kClip>();
    case ActKind::kLeakyRelu: return f.template operator()<ActKind::kLeakyRelu>();
    case ActKind::kHardSwish: return f.template operator()<ActKind::kHardSwish>();
    case ActKind::kHardSigmoid: return f.template operator()<ActKind::kHardSigmoid>();
    default: return f.template operator()<ActKind::kNone>();
  }
}

}  // namespace

void f32_scale_shift(const float* x, int64_t n, float a, float b, const Activation& act, float* y) {
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  int64_t i = 0;
  with_kind(act, [&]<ActKind K>() {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(y + i, act_value_vec<K>(_mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), va), vb), act));
  });
  if (i < n) impl::scale_shift(x + i, n - i, a, b, act, y + i);
}

void f32_bn_grad_sums(const float* x, const float* dy, int64_t n, float mean, float a, float b, const Activation& act,
                      float* sum_dz, float* sum_dz_xc) {
  const __m256 vm = _mm256_set1_ps(mean), va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b), zero = _mm256_setzero_ps();
  __m256 a0 = zero, a1 = zero, b0 = zero, b1 = zero;
  int64_t i = 0;
  with_kind(act, [&]<ActKind K>() {
    for (; i + 16 <= n; i += 16) {
      const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
      __m256 g0 = _mm256_loadu_ps(dy + i), g1 = _mm256_loadu_ps(dy + i + 8);
      if constexpr (K != ActKind::kNone) {
        g0 = act_grad_vec<K>(_mm256_add_ps(_mm256_mul_ps(x0, va), vb), g0, act);
        g1 = act_grad_vec<K>(_mm256_add_ps(_mm256_mul_ps(x1, va), vb), g1, act);
      }
      a0 = _mm256_add_ps(a0, g0);
      a1 = _mm256_add_ps(a1, g1);
      b0 = _mm256_add_ps(b0, _mm256_mul_ps(g0, _mm256_sub_ps(x0, vm)));
      b1 = _mm256_add_ps(b1, _mm256_mul_ps(g1, _mm256_sub_ps(x1, vm)));
    }
  });
  float s = 0, q = 0;
  for (; i < n; ++i) {
    const float dz = impl::dz_at(x, dy, i, a, b, act);
    s += dz;
    q += dz * (x[i] - mean);
  }
  *sum_dz = add_lanes(s, a0, a1);
  *sum_dz_xc = add_lanes(q, b0, b1);
}

void f32_bn_grad_apply(const float* x, const float* dy, int64_t n, float mean, float a, float b, const Activation& act,
                       float k, float mean_dz, float c, float* dx, bool stream) {
  // Streaming stores (stream) only for the 32-byte aligned middle; the unaligned head and the
  // tail use the baseline body (the same arithmetic, in order).
  int64_t i = 0;
  if (stream) {
    i = std::min<int64_t>(n, ((32 - reinterpret_cast<uintptr_t>(dx) % 32) % 32) / sizeof(float));
    if (reinterpret_cast<uintptr_t>(dx) % sizeof(float) != 0) i = n;
    impl::bn_grad_apply(x, dy, i, mean, a, b, act, k, mean_dz, c, dx);
  }
  const __m256 vm = _mm256_set1_ps(mean), vk = _mm256_set1_ps(k), vmd = _mm256_set1_ps(mean_dz), vc = _mm256_set1_ps(c);
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  with_kind(act, [&]<ActKind K>() {
    for (; i + 8 <= n; i += 8) {
      const __m256 xv = _mm256_loadu_ps(x + i);
      __m256 g = _mm256_loadu_ps(dy + i);
      if constexpr (K != ActKind::kNone) g = act_grad_vec<K>(_mm256_add_ps(_mm256_mul_ps(xv, va), vb), g, act);
      const __m256 v = _mm256_mul_ps(vk, _mm256_sub_ps(_mm256_sub_ps(g, vmd), _mm256_mul_ps(_mm256_sub_ps(xv, vm), vc)));
      if (stream) {
        _mm256_stream_ps(dx + i, v);
      } else {
        _mm256_storeu_ps(dx + i, v);
      }
    }
  });
  if (stream) _mm_sfence();  // the streaming stores are visible before any later load or store
  if (i < n) impl::bn_grad_apply(x + i, dy + i, n - i, mean, a, b, act, k, mean_dz, c, dx + i);
}

void f32_relu_grad(const float* y, const float* dy, int64_t n, float* dx) { impl::relu_grad(y, dy, n, dx); }

void f32_vmul(const float* x, const float* m, int64_t n, float* y) { impl::vmul(x, m, n, y); }

namespace {

// Low 64 bits of a·b per 64-bit lane from 32×32→64 multiplies (AVX2 has no 64-bit multiply).
__m256i mul64(__m256i a, uint64_t b) {
  const __m256i b_lo = _mm256_set1_epi64x(static_cast<int64_t>(b & 0xFFFFFFFFu));
  const __m256i b_hi = _mm256_set1_epi64x(static_cast<int64_t>(b >> 32));
  const __m256i lo = _mm256_mul_epu32(a, b_lo);
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b_lo), _mm256_mul_epu32(a, b_hi));
  return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}

}  // namespace

void f32_dropout_mask(uint64_t seed, int64_t first, int64_t n, uint64_t threshold, float scale, float* mask) {
  int64_t i = 0;
  if (threshold < (uint64_t{1} << 32)) {
    // Four hashes (eight elements) per step; u >= t as a signed compare after flipping the top bits.
    const __m256i flip = _mm256_set1_epi32(static_cast<int>(0x80000000u));
    const __m256i t = _mm256_xor_si256(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(threshold))), flip);
    const __m256 vscale = _mm256_set1_ps(scale);
    const __m256i lane = _mm256_setr_epi64x(0, 1, 2, 3);
    for (; i + 8 <= n; i += 8) {
      __m256i x = _mm256_add_epi64(_mm256_set1_epi64x(static_cast<int64_t>(seed + static_cast<uint64_t>((first + i) / 2))), lane);
      x = _mm256_add_epi64(x, _mm256_set1_epi64x(static_cast<int64_t>(0x9E3779B97F4A7C15ull)));
      x = mul64(_mm256_xor_si256(x, _mm256_srli_epi64(x, 30)), 0xBF58476D1CE4E5B9ull);
      x = mul64(_mm256_xor_si256(x, _mm256_srli_epi64(x, 27)), 0x94D049BB133111EBull);
      x = _mm256_xor_si256(x, _mm256_srli_epi64(x, 31));
      // 32-bit lanes in order: low and high halves of hash 0, of hash 1, ...: elements i..i+7.
      const __m256i keep = _mm256_xor_si256(_mm256_cmpgt_epi32(t, _mm256_xor_si256(x, flip)), _mm256_set1_epi32(-1));
      _mm256_storeu_ps(mask + i, _mm256_and_ps(_mm256_castsi256_ps(keep), vscale));
    }
  }
  if (i < n) impl::dropout_mask(seed, first + i, n - i, threshold, scale, mask + i);
}

namespace {

// Lanes [0, count) of a mask vector (count may be <= 0 or >= 8).
__m256i first_lanes(int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// 8 outputs of the 2×2 max pool from 16 inputs of each row (k < 8: the first k outputs only;
// masked loads read nothing past the 2k inputs, masked stores write nothing past k outputs).
template <bool kPartial>
void maxpool2x2_block(const float* r0, const float* r1, int64_t k, float* out, uint8_t* idx) {
  __m256 p0, p1, q0, q1;
  if (kPartial) {
    const __m256i lo = first_lanes(2 * k), hi = first_lanes(2 * k - 8);
    p0 = _mm256_maskload_ps(r0, lo), p1 = _mm256_maskload_ps(r0 + 8, hi);
    q0 = _mm256_maskload_ps(r1, lo), q1 = _mm256_maskload_ps(r1 + 8, hi);
  } else {
    p0 = _mm256_loadu_ps(r0), p1 = _mm256_loadu_ps(r0 + 8);
    q0 = _mm256_loadu_ps(r1), q1 = _mm256_loadu_ps(r1 + 8);
  }
  // Even and odd columns; the in-lane shuffles leave outputs in the order 0 1 4 5 | 2 3 6 7,
  // put right once at the end (vpermpd 0xD8).
  const __m256 a = _mm256_shuffle_ps(p0, p1, _MM_SHUFFLE(2, 0, 2, 0));
  const __m256 b = _mm256_shuffle_ps(p0, p1, _MM_SHUFFLE(3, 1, 3, 1));
  const __m256 c = _mm256_shuffle_ps(q0, q1, _MM_SHUFFLE(2, 0, 2, 0));
  const __m256 d = _mm256_shuffle_ps(q0, q1, _MM_SHUFFLE(3, 1, 3, 1));
  // Strictly greater, false on NaN: the same first-maximum rule as the baseline body.
  const __m256 tb = _mm256_cmp_ps(b, a, _CMP_GT_OQ);
  __m256 m = _mm256_blendv_ps(a, b, tb);
  const __m256 tc = _mm256_cmp_ps(c, m, _CMP_GT_OQ);
  m = _mm256_blendv_ps(m, c, tc);
  const __m256 td = _mm256_cmp_ps(d, m, _CMP_GT_OQ);
  m = _mm256_blendv_ps(m, d, td);
  __m256i t = _mm256_and_si256(_mm256_castps_si256(tb), _mm256_set1_epi32(1));
  t = _mm256_blendv_epi8(t, _mm256_set1_epi32(2), _mm256_castps_si256(tc));
  t = _mm256_blendv_epi8(t, _mm256_set1_epi32(3), _mm256_castps_si256(td));
  m = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), 0xD8));
  t = _mm256_permute4x64_epi64(t, 0xD8);
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
  const __m128i bytes = _mm_packus_epi16(w, w);
  if (kPartial) {
    _mm256_maskstore_ps(out, first_lanes(k), m);
    alignas(8) uint8_t tmp[8];
    _mm_storel_epi64(reinterpret_cast<__m128i*>(tmp), bytes);
    for (int64_t i = 0; i < k; ++i) idx[i] = tmp[i];
  } else {
    _mm256_storeu_ps(out, m);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(idx), bytes);
  }
}

template <bool kPartial>
void maxpool2x2_grad_block(const float* dy, const uint8_t* idx, int64_t k, float* d0, float* d1) {
  __m256 g;
  __m256i t;
  if (kPartial) {
    g = _mm256_maskload_ps(dy, first_lanes(k));
    alignas(8) uint8_t tmp[8] = {};
    for (int64_t i = 0; i < k; ++i) tmp[i] = idx[i];
    t = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(tmp)));
  } else {
    g = _mm256_loadu_ps(dy);
    t = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(idx)));
  }
  auto tap = [&](int v) { return _mm256_and_ps(g, _mm256_castsi256_ps(_mm256_cmpeq_epi32(t, _mm256_set1_epi32(v)))); };
  const __m256 ga = tap(0), gb = tap(1), gc = tap(2), gd = tap(3);
  // Interleave (a, b) into row 0's 16 floats and (c, d) into row 1's.
  const __m256 ab_lo = _mm256_unpacklo_ps(ga, gb), ab_hi = _mm256_unpackhi_ps(ga, gb);
  const __m256 cd_lo = _mm256_unpacklo_ps(gc, gd), cd_hi = _mm256_unpackhi_ps(gc, gd);
  const __m256 a0 = _mm256_permute2f128_ps(ab_lo, ab_hi, 0x20), a1 = _mm256_permute2f128_ps(ab_lo, ab_hi, 0x31);
  const __m256 c0 = _mm256_permute2f128_ps(cd_lo, cd_hi, 0x20), c1 = _mm256_permute2f128_ps(cd_lo, cd_hi, 0x31);
  if (kPartial) {
    const __m256i lo = first_lanes(2 * k), hi = first_lanes(2 * k - 8);
    _mm256_maskstore_ps(d0, lo, a0);
    _mm256_maskstore_ps(d0 + 8, hi, a1);
    _mm256_maskstore_ps(d1, lo, c0);
    _mm256_maskstore_ps(d1 + 8, hi, c1);
  } else {
    _mm256_storeu_ps(d0, a0);
    _mm256_storeu_ps(d0 + 8, a1);
    _mm256_storeu_ps(d1, c0);
    _mm256_storeu_ps(d1 + 8, c1);
  }
}

}  // namespace

void f32_maxpool2x2_argmax_row(const float* r0, const float* r1, int64_t ow, float* out, uint8_t* idx) {
  int64_t j = 0;
  for (; j + 8 <= ow; j += 8) maxpool2x2_block<false>(r0 + 2 * j, r1 + 2 * j, 8, out + j, idx + j);
  if (j < ow) maxpool2x2_block<true>(r0 + 2 * j, r1 + 2 * j, ow - j, out + j, idx + j);
}

void f32_maxpool2x2_grad_row(const float* dy, const uint8_t* idx, int64_t ow, float* d0, float* d1) {
  int64_t j = 0;
  for (; j + 8 <= ow; j += 8) maxpool2x2_grad_block<false>(dy + j, idx + j, 8, d0 + 2 * j, d1 + 2 * j);
  if (j < ow) maxpool2x2_grad_block<true>(dy + j, idx + j, ow - j, d0 + 2 * j, d1 + 2 * j);
}

namespace {

// The window rows of one plane for a compile-time window and stride: the k accumulators of a
// row stay in registers.
template <int K, int S>
void dwconv_wgrad_rows(const float* scratch, const impl::DwGradLayout& l, const float* dy, int64_t oh, int64_t ow,
                       float* acc) {
  for (int i = 0; i < K; ++i) {
    __m256 va[K];
    for (int j = 0; j < K; ++j) va[j] = _mm256_loadu_ps(acc + (i * K + j) * 8);
    for (int64_t oy = 0; oy < oh; ++oy) {
      const float* row = scratch + (oy * S + i) * l.row_floats;
      const float* g = dy + oy * ow;
      for (int64_t ox = 0; ox < ow; ox += 8) {
        const __m256 gv = ow - ox >= 8 ? _mm256_loadu_ps(g + ox) : _mm256_maskload_ps(g + ox, first_lanes(ow - ox));
        for (int j = 0; j < K; ++j) {
          const float* src = row + (S == 1 ? j : (j % 2) * l.half + j / 2) + ox;
          va[j] = _mm256_add_ps(va[j], _mm256_mul_ps(gv, _mm256_loadu_ps(src)));
        }
      }
    }
    for (int j = 0; j < K; ++j) _mm256_storeu_ps(acc + (i * K + j) * 8, va[j]);
  }
}

}  // namespace

void f32_dwconv_wgrad_plane(const float* x, int64_t h, int64_t w, const float* dy, int64_t oh, int64_t ow, int64_t k,
                            int64_t stride, int64_t pad_t, int64_t pad_l, float* scratch, float* acc) {
  const impl::DwGradLayout l = impl::dwconv_wgrad_layout(oh, ow, k, stride);
  impl::dwconv_wgrad_pad(x, h, w, stride, pad_t, pad_l, l, scratch);
  // dy loaded once per 8-column block and window row (masked past ow: those lanes add +0).
  const int64_t key = k * 10 + stride;
  switch (key) {
    case 31: return dwconv_wgrad_rows<3, 1>(scratch, l, dy, oh, ow, acc);
    case 32: return dwconv_wgrad_rows<3, 2>(scratch, l, dy, oh, ow, acc);
    case 51: return dwconv_wgrad_rows<5, 1>(scratch, l, dy, oh, ow, acc);
    case 52: return dwconv_wgrad_rows<5, 2>(scratch, l, dy, oh, ow, acc);
    case 71: return dwconv_wgrad_rows<7, 1>(scratch, l, dy, oh, ow, acc);
    case 72: return dwconv_wgrad_rows<7, 2>(scratch, l, dy, oh, ow, acc);
    default: {
      // Other windows: the baseline body's sums on the padded plane already built.
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < k; ++j) {
          float* lanes = acc + (i * k + j) * 8;
          const int64_t col0 = stride == 1 ? j : (j % 2) * l.half + j / 2;
          for (int64_t oy = 0; oy < oh; ++oy) {
            const float* src = scratch + (oy * stride + i) * l.row_floats + col0;
            for (int64_t ox = 0; ox < ow; ++ox) lanes[ox % 8] += dy[oy * ow + ox] * src[ox];
          }
        }
    }
  }
}

}  // namespace xnn::kernels::training_avx2
