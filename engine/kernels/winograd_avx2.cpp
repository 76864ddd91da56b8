// AVX2+FMA stage micro-kernels of the Winograd convolution (layouts and contracts in winograd.h).
// Compiled with -mavx2 -mfma; only reached through WinogradConv3x3 after isa_supported(kAvx2).
//
// The transforms run on 8-lane vectors that hold 8 channels of one pixel (the packed input and
// the Winograd-domain M are channel-innermost), so they need no shuffles; the only transposes are
// in the output transform, which turns "8 output channels of one pixel" back into NCHW rows.
// Everything here avoids calling inline functions from shared headers: an out-of-line copy
// compiled with AVX2 could be picked by the linker for baseline callers.
#include <immintrin.h>

#include <type_traits>

#include "engine/kernels/winograd.h"

namespace xnn::kernels::winograd {
namespace {

inline __m256 splat(float x) { return _mm256_set1_ps(x); }

// First n lanes set (0 ≤ n ≤ 8).
inline __m256i lane_mask8(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// ---- 1-D transforms on 8-lane vectors. Factored (shared sub-expressions, FMAs) rather than
// written as the matrices; the same factorisations as the scalar kernels in winograd.cpp, and
// checked end to end against a direct convolution by the tests. ----

// Bᵀ for F(4,3): 6 → 6.
inline void input_1d(const __m256* d, __m256* w, std::integral_constant<int, 4>) {
  const __m256 four = splat(4.0f), five = splat(5.0f), two = splat(2.0f);
  w[0] = _mm256_fmadd_ps(four, d[0], _mm256_fnmadd_ps(five, d[2], d[4]));
  w[1] = _mm256_fnmadd_ps(four, _mm256_add_ps(d[1], d[2]), _mm256_add_ps(d[3], d[4]));
  w[2] = _mm256_fmadd_ps(four, _mm256_sub_ps(d[1], d[2]), _mm256_sub_ps(d[4], d[3]));
  const __m256 d42 = _mm256_sub_ps(d[4], d[2]), d31 = _mm256_sub_ps(d[3], d[1]);
  w[3] = _mm256_fmadd_ps(two, d31, d42);
  w[4] = _mm256_fnmadd_ps(two, d31, d42);
  w[5] = _mm256_fmadd_ps(four, d[1], _mm256_fnmadd_ps(five, d[3], d[5]));
}

// Bᵀ for F(6,3): 8 → 8.
inline void input_1d(const __m256* d, __m256* w, std::integral_constant<int, 6>) {
  const __m256 c525 = splat(5.25f), c425 = splat(4.25f), c25 = splat(2.5f), c125 = splat(1.25f);
  const __m256 c05 = splat(0.5f), c025 = splat(0.25f), two = splat(2.0f), four = splat(4.0f);
  w[0] = _mm256_fmadd_ps(c525, _mm256_sub_ps(d[4], d[2]), _mm256_sub_ps(d[0], d[6]));
  w[7] = _mm256_fmadd_ps(c525, _mm256_sub_ps(d[3], d[5]), _mm256_sub_ps(d[7], d[1]));
  const __m256 t1 = _mm256_fnmadd_ps(c425, d[4], _mm256_add_ps(d[2], d[6]));
  const __m256 t2 = _mm256_fnmadd_ps(c425, d[3], _mm256_add_ps(d[1], d[5]));
  w[1] = _mm256_add_ps(t1, t2);
  w[2] = _mm256_sub_ps(t1, t2);
  const __m256 t3 = _mm256_fnmadd_ps(c125, d[4], _mm256_fmadd_ps(c025, d[2], d[6]));
  const __m256 t4 = _mm256_fnmadd_ps(c25, d[3], _mm256_fmadd_ps(c05, d[1], _mm256_mul_ps(two, d[5])));
  w[3] = _mm256_add_ps(t3, t4);
  w[4] = _mm256_sub_ps(t3, t4);
  const __m256 t5 = _mm256_fmadd_ps(four, _mm256_fnmadd_ps(c125, d[4], d[2]), d[6]);
  const __m256 t6 = _mm256_fnmadd_ps(c25, d[3], _mm256_fmadd_ps(two, d[1], _mm256_mul_ps(c05, d[5])));
  w[5] = _mm256_add_ps(t5, t6);
  w[6] = _mm256_sub_ps(t5, t6);
}

// Aᵀ for F(4,3): 6 → 4.
inline void output_1d(const __m256* m, __m256* o, std::integral_constant<int, 4>) {
  const __m256 a = _mm256_add_ps(m[1], m[2]), b = _mm256_sub_ps(m[1], m[2]);
  const __m256 c = _mm256_add_ps(m[3], m[4]), d = _mm256_sub_ps(m[3], m[4]);
  o[0] = _mm256_add_ps(_mm256_add_ps(m[0], a), c);
  o[1] = _mm256_fmadd_ps(splat(2.0f), d, b);
  o[2] = _mm256_fmadd_ps(splat(4.0f), c, a);
  o[3] = _mm256_add_ps(_mm256_fmadd_ps(splat(8.0f), d, b), m[5]);
}

// Aᵀ for F(6,3): 8 → 6.
inline void output_1d(const __m256* m, __m256* o, std::integral_constant<int, 6>) {
  const __m256 a = _mm256_add_ps(m[1], m[2]), b = _mm256_sub_ps(m[1], m[2]);
  const __m256 c = _mm256_add_ps(m[3], m[4]), d = _mm256_sub_ps(m[3], m[4]);
  const __m256 e = _mm256_add_ps(m[5], m[6]), f = _mm256_sub_ps(m[5], m[6]);
  o[0] = _mm256_add_ps(_mm256_add_ps(m[0], a), _mm256_add_ps(c, e));
  o[1] = _mm256_fmadd_ps(splat(2.0f), d, _mm256_fmadd_ps(splat(0.5f), f, b));
  o[2] = _mm256_fmadd_ps(splat(4.0f), c, _mm256_fmadd_ps(splat(0.25f), e, a));
  o[3] = _mm256_fmadd_ps(splat(8.0f), d, _mm256_fmadd_ps(splat(0.125f), f, b));
  o[4] = _mm256_fmadd_ps(splat(16.0f), c, _mm256_fmadd_ps(splat(0.0625f), e, a));
  o[5] = _mm256_add_ps(_mm256_fmadd_ps(splat(32.0f), d, _mm256_fmadd_ps(splat(0.03125f), f, b)), m[7]);
}

// G for F(4,3): 3 → 6.
inline void weights_1d(const __m256* g, __m256* u, std::integral_constant<int, 4>) {
  const __m256 t0 = _mm256_add_ps(g[0], g[2]);
  const __m256 t1 = _mm256_fmadd_ps(g[0], splat(1.0f / 24), _mm256_mul_ps(g[2], splat(1.0f / 6)));
  u[0] = _mm256_mul_ps(g[0], splat(0.25f));
  u[1] = _mm256_mul_ps(_mm256_add_ps(t0, g[1]), splat(-1.0f / 6));
  u[2] = _mm256_mul_ps(_mm256_sub_ps(t0, g[1]), splat(-1.0f / 6));
  u[3] = _mm256_fmadd_ps(g[1], splat(1.0f / 12), t1);
  u[4] = _mm256_fnmadd_ps(g[1], splat(1.0f / 12), t1);
  u[5] = g[2];
}

// G for F(6,3): 3 → 8.
inline void weights_1d(const __m256* g, __m256* u, std::integral_constant<int, 6>) {
  const __m256 t0 = _mm256_add_ps(g[0], g[2]);
  const __m256 t1 = _mm256_fmadd_ps(g[0], splat(1.0f / 90), _mm256_mul_ps(g[2], splat(2.0f / 45)));
  const __m256 t2 = _mm256_fmadd_ps(g[0], splat(32.0f / 45), _mm256_mul_ps(g[2], splat(8.0f / 45)));
  u[0] = g[0];
  u[1] = _mm256_mul_ps(_mm256_add_ps(t0, g[1]), splat(-2.0f / 9));
  u[2] = _mm256_mul_ps(_mm256_sub_ps(t0, g[1]), splat(-2.0f / 9));
  u[3] = _mm256_fmadd_ps(g[1], splat(1.0f / 45), t1);
  u[4] = _mm256_fnmadd_ps(g[1], splat(1.0f / 45), t1);
  u[5] = _mm256_fmadd_ps(g[1], splat(16.0f / 45), t2);
  u[6] = _mm256_fnmadd_ps(g[1], splat(16.0f / 45), t2);
  u[7] = g[2];
}

// ---- weight transform (raw-weight storage): G g Gᵀ, lanes = 8 output channels ----

template <int M>
void weight_tile(const float* w, int64_t k, float* u, int64_t u_xi_stride) {
  constexpr int A = M + 2;
  constexpr std::integral_constant<int, M> tile{};
  for (int64_t p = 0; p < k; ++p) {
    for (int h = 0; h < 16; h += 8) {
      const float* g = w + p * 144 + h;
      __m256 t[A][3];  // G g: t[ξy][column]
      for (int c = 0; c < 3; ++c) {
        const __m256 col[3] = {_mm256_loadu_ps(g + c * 16), _mm256_loadu_ps(g + (3 + c) * 16),
                               _mm256_loadu_ps(g + (6 + c) * 16)};
        __m256 out[A];
        weights_1d(col, out, tile);
        for (int xy = 0; xy < A; ++xy) t[xy][c] = out[xy];
      }
      float* up = u + p * 16 + h;
      for (int xy = 0; xy < A; ++xy) {
        __m256 out[A];
        weights_1d(t[xy], out, tile);
        for (int xx = 0; xx < A; ++xx) _mm256_storeu_ps(up + (xy * A + xx) * u_xi_stride, out[xx]);
      }
    }
  }
}

// ---- input transform ----

// A separable 2-D transform of one tile, rows then columns, 8 channels per vector: N×N pixels of
// the packed plane (rows wp·8 floats apart, groups group_stride apart) → A×A values at
// dst[ξ·xi_stride + 8·g + l], ξ = row·A + column. The input transform (Bᵀ d B, N = A) and the
// weight gradient's output-gradient transform (A dY Aᵀ, N = m) differ only in the 1-D step.
template <int N, int A, typename Transform1d>
void separable_tile(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end, float* dst,
                    int64_t xi_stride, Transform1d transform_1d) {
  const int64_t row = wp * 8;
  for (int64_t g = g_begin; g < g_end; ++g) {
    const float* s = src + g * group_stride;
    __m256 t[N][A];  // horizontal pass, t[row][ξx]
    for (int r = 0; r < N; ++r) {
      __m256 d[N];
      for (int x = 0; x < N; ++x) d[x] = _mm256_loadu_ps(s + r * row + x * 8);
      transform_1d(d, t[r]);
    }
    float* dg = dst + g * 8;
    for (int xx = 0; xx < A; ++xx) {
      __m256 col[N], out[A];
      for (int r = 0; r < N; ++r) col[r] = t[r][xx];
      transform_1d(col, out);
      for (int xy = 0; xy < A; ++xy) _mm256_storeu_ps(dg + (xy * A + xx) * xi_stride, out[xy]);
    }
  }
}

template <int M>
void input_tile(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end, float* v,
                int64_t v_xi_stride) {
  separable_tile<M + 2, M + 2>(src, wp, group_stride, g_begin, g_end, v, v_xi_stride,
                               [](const __m256* d, __m256* w) { input_1d(d, w, std::integral_constant<int, M>{}); });
}

// ---- output-gradient transform (weight gradient): E = A dY Aᵀ, A = (Aᵀ)ᵀ of output_1d ----

// A for F(4,3): 4 → 6 (e[ξ] = Σ_p Aᵀ[p][ξ] g[p]).
inline void grad_1d(const __m256* g, __m256* e, std::integral_constant<int, 4>) {
  const __m256 a = _mm256_add_ps(g[0], g[2]), b = _mm256_add_ps(g[1], g[3]);
  const __m256 c = _mm256_fmadd_ps(splat(4.0f), g[2], g[0]), d = _mm256_fmadd_ps(splat(8.0f), g[3], _mm256_add_ps(g[1], g[1]));
  e[0] = g[0];
  e[1] = _mm256_add_ps(a, b);
  e[2] = _mm256_sub_ps(a, b);
  e[3] = _mm256_add_ps(c, d);
  e[4] = _mm256_sub_ps(c, d);
  e[5] = g[3];
}

// A for F(6,3): 6 → 8.
inline void grad_1d(const __m256* g, __m256* e, std::integral_constant<int, 6>) {
  const __m256 a = _mm256_add_ps(_mm256_add_ps(g[0], g[2]), g[4]), b = _mm256_add_ps(_mm256_add_ps(g[1], g[3]), g[5]);
  const __m256 c = _mm256_fmadd_ps(splat(16.0f), g[4], _mm256_fmadd_ps(splat(4.0f), g[2], g[0]));
  const __m256 d = _mm256_fmadd_ps(splat(32.0f), g[5], _mm256_fmadd_ps(splat(8.0f), g[3], _mm256_add_ps(g[1], g[1])));
  const __m256 f = _mm256_fmadd_ps(splat(0.0625f), g[4], _mm256_fmadd_ps(splat(0.25f), g[2], g[0]));
  const __m256 h = _mm256_fmadd_ps(splat(0.03125f), g[5], _mm256_fmadd_ps(splat(0.125f), g[3], _mm256_mul_ps(splat(0.5f), g[1])));
  e[0] = g[0];
  e[1] = _mm256_add_ps(a, b);
  e[2] = _mm256_sub_ps(a, b);
  e[3] = _mm256_add_ps(c, d);
  e[4] = _mm256_sub_ps(c, d);
  e[5] = _mm256_add_ps(f, h);
  e[6] = _mm256_sub_ps(f, h);
  e[7] = g[5];
}

template <int M>
void grad_tile(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end, float* e,
               int64_t e_xi_stride) {
  separable_tile<M, M + 2>(src, wp, group_stride, g_begin, g_end, e, e_xi_stride,
                           [](const __m256* g, __m256* w) { grad_1d(g, w, std::integral_constant<int, M>{}); });
}

// ---- batched GEMM: MR tiles × 16 output channels, accumulators in registers over all of k ----

template <int MR>
inline void gemm_tile(int64_t k, const float* v, int64_t ldv, const float* u, float* c, int64_t ldc, bool accumulate) {
  __m256 acc0[MR], acc1[MR];
  const float* vr[MR];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    acc0[i] = accumulate ? _mm256_loadu_ps(c + i * ldc) : _mm256_setzero_ps();
    acc1[i] = accumulate ? _mm256_loadu_ps(c + i * ldc + 8) : _mm256_setzero_ps();
    vr[i] = v + i * ldv;
  }
  for (int64_t p = 0; p < k; ++p) {
    const __m256 u0 = _mm256_loadu_ps(u + p * 16), u1 = _mm256_loadu_ps(u + p * 16 + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 b = _mm256_broadcast_ss(vr[i] + p);
      acc0[i] = _mm256_fmadd_ps(b, u0, acc0[i]);
      acc1[i] = _mm256_fmadd_ps(b, u1, acc1[i]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    _mm256_storeu_ps(c + i * ldc, acc0[i]);
    _mm256_storeu_ps(c + i * ldc + 8, acc1[i]);
  }
}

// ---- output transform ----

// The fused activation, chosen once per call (a per-row switch cost ~5% of the whole
// convolution). kOther: stored first, then applied by the baseline scalar code.
enum class Act { kNone, kRelu, kClip, kLeakyRelu, kOther };

template <Act K>
struct Activator {
  __m256 lo, hi, slope;
  explicit Activator(const Activation& a) : lo(splat(a.alpha)), hi(splat(a.beta)), slope(splat(a.alpha)) {}
  __m256 operator()(__m256 x) const {
    if constexpr (K == Act::kRelu) return _mm256_max_ps(x, _mm256_setzero_ps());    // NaN → 0, as the scalar form
    if constexpr (K == Act::kClip) return _mm256_min_ps(hi, _mm256_max_ps(lo, x));  // NaN kept, as the scalar form
    if constexpr (K == Act::kLeakyRelu)
      return _mm256_blendv_ps(_mm256_mul_ps(x, slope), x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
    return x;
  }
  __m128 operator()(__m128 x) const {
    if constexpr (K == Act::kRelu) return _mm_max_ps(x, _mm_setzero_ps());
    if constexpr (K == Act::kClip)
      return _mm_min_ps(_mm256_castps256_ps128(hi), _mm_max_ps(_mm256_castps256_ps128(lo), x));
    if constexpr (K == Act::kLeakyRelu)
      return _mm_blendv_ps(_mm_mul_ps(x, _mm256_castps256_ps128(slope)), x,
                           _mm_cmp_ps(x, _mm_setzero_ps(), _CMP_GE_OQ));
    return x;
  }
};

// Residual, activation and store of one output row of `cols` pixels, cols ≤ 8 (x: lanes = pixels).
// Full rows of 4 or 6 use plain 16-/8-byte loads and stores: masked stores (vmaskmovps) were
// the single hottest instruction of the convolution. Masks only at the right edge.
template <Act K>
inline void finish_row(__m256 x, float* dst, const float* res, int64_t cols, int64_t full, __m256i mask,
                       const Activator<K>& act, const Activation& a) {
  if (cols == full) {
    __m128 lo = _mm256_castps256_ps128(x);
    if (res) lo = _mm_add_ps(lo, _mm_loadu_ps(res));
    _mm_storeu_ps(dst, act(lo));
    if (full == 6) {
      __m128 hi = _mm256_extractf128_ps(x, 1);
      if (res) hi = _mm_add_ps(hi, _mm_castsi128_ps(_mm_loadu_si64(res + 4)));
      _mm_storeu_si64(dst + 4, _mm_castps_si128(act(hi)));
    }
  } else {
    if (res) x = _mm256_add_ps(x, _mm256_maskload_ps(res, mask));
    _mm256_maskstore_ps(dst, mask, act(x));
  }
  if constexpr (K == Act::kOther) apply_activation(dst, cols, a, Isa::kScalar);  // out of line, baseline
}

template <int M, Act K>
void output_tile(const float* m, int64_t m_xi_stride, int64_t co_begin, int64_t co_end, float* output, int64_t oh,
                 int64_t ow, int64_t y0, int64_t x0, const ConvEpilogue& ep) {
  constexpr int A = M + 2;
  constexpr std::integral_constant<int, M> tile{};
  const Activator<K> act(ep.act);
  const int64_t rows = oh - y0 < M ? oh - y0 : M, cols = ow - x0 < M ? ow - x0 : M;
  const int64_t plane = oh * ow;
  const __m256i mask = lane_mask8(cols);
  for (int64_t co = co_begin; co < co_end; co += 8) {
    const int64_t n = co_end - co < 8 ? co_end - co : 8;
    __m256 s[A][M];  // horizontal pass, s[ξy][ox]
    for (int xy = 0; xy < A; ++xy) {
      __m256 r[A];
      for (int xx = 0; xx < A; ++xx) r[xx] = _mm256_loadu_ps(m + (xy * A + xx) * m_xi_stride + co);
      output_1d(r, s[xy], tile);
    }
    const __m256 bias = ep.bias ? _mm256_maskload_ps(ep.bias + co, lane_mask8(n)) : _mm256_setzero_ps();
    __m256 o[M][M];  // o[oy][ox], lanes = output channels co..co+7
    for (int ox = 0; ox < M; ++ox) {
      __m256 col[A], out[M];
      for (int xy = 0; xy < A; ++xy) col[xy] = s[xy][ox];
      output_1d(col, out, tile);
      for (int oy = 0; oy < M; ++oy) o[oy][ox] = _mm256_add_ps(out[oy], bias);
    }
    for (int64_t oy = 0; oy < rows; ++oy) {
      const int64_t off = co * plane + (y0 + oy) * ow + x0;
      const __m256* a = o[oy];
      __m256 q[8];  // q[l]: the row of output channel co + l (lanes = pixels)
      if constexpr (M == 4) {
        // 4 pixels × 8 channels: after two shuffle steps, the low half of t[l] is channel l's
        // row and the high half channel l + 4's.
        const __m256 u0 = _mm256_unpacklo_ps(a[0], a[1]), u1 = _mm256_unpackhi_ps(a[0], a[1]);
        const __m256 u2 = _mm256_unpacklo_ps(a[2], a[3]), u3 = _mm256_unpackhi_ps(a[2], a[3]);
        const __m256 t[4] = {_mm256_shuffle_ps(u0, u2, 0x44), _mm256_shuffle_ps(u0, u2, 0xEE),
                             _mm256_shuffle_ps(u1, u3, 0x44), _mm256_shuffle_ps(u1, u3, 0xEE)};
        for (int l = 0; l < 4; ++l) {
          q[l] = t[l];  // only the low half is stored
          q[l + 4] = _mm256_permute2f128_ps(t[l], t[l], 0x01);
        }
      } else {
        // 6 pixels (+2 zero) × 8 channels → 8×8 transpose.
        const __m256 z = _mm256_setzero_ps();
        const __m256 u0 = _mm256_unpacklo_ps(a[0], a[1]), u1 = _mm256_unpackhi_ps(a[0], a[1]);
        const __m256 u2 = _mm256_unpacklo_ps(a[2], a[3]), u3 = _mm256_unpackhi_ps(a[2], a[3]);
        const __m256 u4 = _mm256_unpacklo_ps(a[4], a[5]), u5 = _mm256_unpackhi_ps(a[4], a[5]);
        const __m256 s0 = _mm256_shuffle_ps(u0, u2, 0x44), s1 = _mm256_shuffle_ps(u0, u2, 0xEE);
        const __m256 s2 = _mm256_shuffle_ps(u1, u3, 0x44), s3 = _mm256_shuffle_ps(u1, u3, 0xEE);
        const __m256 s4 = _mm256_shuffle_ps(u4, z, 0x44), s5 = _mm256_shuffle_ps(u4, z, 0xEE);
        const __m256 s6 = _mm256_shuffle_ps(u5, z, 0x44), s7 = _mm256_shuffle_ps(u5, z, 0xEE);
        q[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
        q[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
        q[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
        q[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
        q[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
        q[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
        q[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
        q[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
      }
      for (int64_t l = 0; l < n; ++l) {
        const int64_t o_off = off + l * plane;
        finish_row<K>(q[l], output + o_off, ep.residual ? ep.residual + o_off : nullptr, cols, M, mask, act, ep.act);
      }
    }
  }
}

template <int M>
void output_tile_dispatch(const float* m, int64_t m_xi_stride, int64_t co_begin, int64_t co_end, float* output,
                          int64_t oh, int64_t ow, int64_t y0, int64_t x0, const ConvEpilogue& ep) {
  switch (ep.act.kind) {
    case ActKind::kNone:
      return output_tile<M, Act::kNone>(m, m_xi_stride, co_begin, co_end, output, oh, ow, y0, x0, ep);
    case ActKind::kRelu:
      return output_tile<M, Act::kRelu>(m, m_xi_stride, co_begin, co_end, output, oh, ow, y0, x0, ep);
    case ActKind::kClip:
      return output_tile<M, Act::kClip>(m, m_xi_stride, co_begin, co_end, output, oh, ow, y0, x0, ep);
    case ActKind::kLeakyRelu:
      return output_tile<M, Act::kLeakyRelu>(m, m_xi_stride, co_begin, co_end, output, oh, ow, y0, x0, ep);
    default: return output_tile<M, Act::kOther>(m, m_xi_stride, co_begin, co_end, output, oh, ow, y0, x0, ep);
  }
}

}  // namespace

void f32_winograd_pack_input_c8__avx2(const float* input, int64_t cin, int64_t h, int64_t w, int64_t pad_t,
                                      int64_t pad_l, int64_t group, int64_t hp, int64_t wp, float* dst) {
  const int64_t c0 = group * 8;
  const int64_t nc = cin - c0 < 8 ? cin - c0 : 8;
  const int64_t plane = h * w;
  // Columns px in [px_lo, px_hi) come from the image; the rest are zero padding.
  int64_t px_lo = pad_l < 0 ? 0 : pad_l;
  int64_t px_hi = pad_l + w < wp ? pad_l + w : wp;
  if (px_hi < px_lo) px_hi = px_lo;
  if (px_lo > wp) px_lo = px_hi = wp;
  const __m256 z = _mm256_setzero_ps();
  for (int64_t py = 0; py < hp; ++py) {
    float* drow = dst + py * wp * 8;
    const int64_t iy = py - pad_t;
    if (iy < 0 || iy >= h) {
      for (int64_t px = 0; px < wp; ++px) _mm256_storeu_ps(drow + px * 8, z);
      continue;
    }
    for (int64_t px = 0; px < px_lo; ++px) _mm256_storeu_ps(drow + px * 8, z);
    for (int64_t px = px_hi; px < wp; ++px) _mm256_storeu_ps(drow + px * 8, z);
    const float* src = input + c0 * plane + iy * w - pad_l;  // src[l·plane + px] = pixel (iy, px - pad_l)
    int64_t px = px_lo;
    if (nc == 8) {
      // 8 channels × 8 pixels → 8 pixel vectors of 8 channels. Loading the 128-bit halves with
      // insertf128 does the first transpose step on the load ports.
      for (; px + 8 <= px_hi; px += 8) {
        const float* r = src + px;
        auto ld = [&](int lo, int hi, int off) {
          return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(r + lo * plane + off)),
                                      _mm_loadu_ps(r + hi * plane + off), 1);
        };
        const __m256 t0 = ld(0, 4, 0), t1 = ld(1, 5, 0), t2 = ld(2, 6, 0), t3 = ld(3, 7, 0);
        const __m256 t4 = ld(0, 4, 4), t5 = ld(1, 5, 4), t6 = ld(2, 6, 4), t7 = ld(3, 7, 4);
        const __m256 u0 = _mm256_unpacklo_ps(t0, t1), u1 = _mm256_unpackhi_ps(t0, t1);
        const __m256 u2 = _mm256_unpacklo_ps(t2, t3), u3 = _mm256_unpackhi_ps(t2, t3);
        const __m256 u4 = _mm256_unpacklo_ps(t4, t5), u5 = _mm256_unpackhi_ps(t4, t5);
        const __m256 u6 = _mm256_unpacklo_ps(t6, t7), u7 = _mm256_unpackhi_ps(t6, t7);
        float* d = drow + px * 8;
        _mm256_storeu_ps(d + 0, _mm256_shuffle_ps(u0, u2, 0x44));
        _mm256_storeu_ps(d + 8, _mm256_shuffle_ps(u0, u2, 0xEE));
        _mm256_storeu_ps(d + 16, _mm256_shuffle_ps(u1, u3, 0x44));
        _mm256_storeu_ps(d + 24, _mm256_shuffle_ps(u1, u3, 0xEE));
        _mm256_storeu_ps(d + 32, _mm256_shuffle_ps(u4, u6, 0x44));
        _mm256_storeu_ps(d + 40, _mm256_shuffle_ps(u4, u6, 0xEE));
        _mm256_storeu_ps(d + 48, _mm256_shuffle_ps(u5, u7, 0x44));
        _mm256_storeu_ps(d + 56, _mm256_shuffle_ps(u5, u7, 0xEE));
      }
    }
    if (nc == 8 && px < px_hi) {
      // The last 1-7 pixels of the row (7×7 and 14×14 maps end this way): the same transpose
      // on masked loads, storing only the pixels that exist.
      const int64_t rest = px_hi - px;
      const __m128i m0 = _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(rest)), _mm_setr_epi32(0, 1, 2, 3));
      const __m128i m4 = _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(rest)), _mm_setr_epi32(4, 5, 6, 7));
      const float* r = src + px;
      auto ld = [&](int lo, int hi, int off) {
        const __m128i m = off ? m4 : m0;
        return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_maskload_ps(r + lo * plane + off, m)),
                                    _mm_maskload_ps(r + hi * plane + off, m), 1);
      };
      const __m256 t0 = ld(0, 4, 0), t1 = ld(1, 5, 0), t2 = ld(2, 6, 0), t3 = ld(3, 7, 0);
      const __m256 t4 = ld(0, 4, 4), t5 = ld(1, 5, 4), t6 = ld(2, 6, 4), t7 = ld(3, 7, 4);
      const __m256 u0 = _mm256_unpacklo_ps(t0, t1), u1 = _mm256_unpackhi_ps(t0, t1);
      const __m256 u2 = _mm256_unpacklo_ps(t2, t3), u3 = _mm256_unpackhi_ps(t2, t3);
      const __m256 u4 = _mm256_unpacklo_ps(t4, t5), u5 = _mm256_unpackhi_ps(t4, t5);
      const __m256 u6 = _mm256_unpacklo_ps(t6, t7), u7 = _mm256_unpackhi_ps(t6, t7);
      const __m256 pix[8] = {_mm256_shuffle_ps(u0, u2, 0x44), _mm256_shuffle_ps(u0, u2, 0xEE),
                             _mm256_shuffle_ps(u1, u3, 0x44), _mm256_shuffle_ps(u1, u3, 0xEE),
                             _mm256_shuffle_ps(u4, u6, 0x44), _mm256_shuffle_ps(u4, u6, 0xEE),
                             _mm256_shuffle_ps(u5, u7, 0x44), _mm256_shuffle_ps(u5, u7, 0xEE)};
      for (int64_t i = 0; i < rest; ++i) _mm256_storeu_ps(drow + (px + i) * 8, pix[i]);
      px = px_hi;
    }
    for (; px < px_hi; ++px) {
      alignas(32) float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t l = 0; l < nc; ++l) lanes[l] = src[l * plane + px];
      _mm256_storeu_ps(drow + px * 8, _mm256_load_ps(lanes));
    }
  }
}

void f32_winograd_f43_input__avx2(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end,
                                  float* v, int64_t v_xi_stride) {
  input_tile<4>(src, wp, group_stride, g_begin, g_end, v, v_xi_stride);
}

void f32_winograd_f63_input__avx2(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end,
                                  float* v, int64_t v_xi_stride) {
  input_tile<6>(src, wp, group_stride, g_begin, g_end, v, v_xi_stride);
}

void f32_winograd_f43_grad__avx2(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end,
                                 float* e, int64_t e_xi_stride) {
  grad_tile<4>(src, wp, group_stride, g_begin, g_end, e, e_xi_stride);
}

void f32_winograd_f63_grad__avx2(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end,
                                 float* e, int64_t e_xi_stride) {
  grad_tile<6>(src, wp, group_stride, g_begin, g_end, e, e_xi_stride);
}

void f32_winograd_gemm_6x16__avx2(int64_t tiles, int64_t k, const float* v, int64_t ldv, const float* u, float* c,
                                  int64_t ldc, bool accumulate) {
  int64_t i = 0;
  for (; i + 6 <= tiles; i += 6) gemm_tile<6>(k, v + i * ldv, ldv, u, c + i * ldc, ldc, accumulate);
  switch (tiles - i) {
    case 5: gemm_tile<5>(k, v + i * ldv, ldv, u, c + i * ldc, ldc, accumulate); break;
    case 4: gemm_tile<4>(k, v + i * ldv, ldv, u, c + i * ldc, ldc, accumulate); break;
    case 3: gemm_tile<3>(k, v + i * ldv, ldv, u, c + i * ldc, ldc, accumulate); break;
    case 2: gemm_tile<2>(k, v + i * ldv, ldv, u, c + i * ldc, ldc, accumulate); break;
    case 1: gemm_tile<1>(k, v + i * ldv, ldv, u, c + i * ldc, ldc, accumulate); break;
    default: break;
  }
}

void f32_winograd_f43_weights__avx2(const float* w, int64_t k, float* u, int64_t u_xi_stride) {
  weight_tile<4>(w, k, u, u_xi_stride);
}

void f32_winograd_f63_weights__avx2(const float* w, int64_t k, float* u, int64_t u_xi_stride) {
  weight_tile<6>(w, k, u, u_xi_stride);
}

void f32_winograd_f43_output__avx2(const float* m, int64_t m_xi_stride, int64_t co_begin, int64_t co_end, float* output,
                                   int64_t oh, int64_t ow, int64_t y0, int64_t x0, const ConvEpilogue& ep) {
  output_tile_dispatch<4>(m, m_xi_stride, co_begin, co_end, output, oh, ow, y0, x0, ep);
}

void f32_winograd_f63_output__avx2(const float* m, int64_t m_xi_stride, int64_t co_begin, int64_t co_end, float* output,
                                   int64_t oh, int64_t ow, int64_t y0, int64_t x0, const ConvEpilogue& ep) {
  output_tile_dispatch<6>(m, m_xi_stride, co_begin, co_end, output, oh, ow, y0, x0, ep);
}

}  // namespace xnn::kernels::winograd
