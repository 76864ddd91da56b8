// AVX2+FMA paths of the elementwise kernels (declared in elementwise.h). Loops handle 8 floats
// per ymm; the last partial vector uses masked loads and stores, so nothing past n is touched.
#include <immintrin.h>

#include <cmath>
#include <limits>

#include "engine/kernels/elementwise.h"

namespace xnn::kernels {
namespace {

// Lanes [0, k) set, for 0 < k < 8: the tail of a loop.
inline __m256i tail_mask(int64_t k) {
  alignas(32) static const int32_t table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table + 8 - k));
}

// exp(x), Cephes expf: n = round(x / ln2), r = x - n ln2 in two parts (Cody-Waite; n * C1 is
// exact because C1 has 9 significant bits), a degree-6 polynomial for exp(r) on |r| <= ln2/2,
// then the result is scaled by 2^n as two factors 2^(n/2) and 2^(n - n/2): each stays a normal
// float for every n the clamp allows, so overflow to +inf and gradual underflow to 0 both
// happen in the final multiply with a single rounding. The clamp keeps NaN (min/max return
// their second operand when either is NaN), and NaN then flows through the arithmetic.
inline __m256 exp_ps(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);    // exp(89) > FLT_MAX: +inf
  x = _mm256_max_ps(_mm256_set1_ps(-105.0f), x);  // exp(-105) < half the least subnormal: 0
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

// sigmoid without overflow: e = exp(-|x|) <= 1, then 1 / (1 + e) for x >= 0 and e / (1 + e)
// otherwise (the reference op's formulation), one division either way.
inline __m256 sigmoid_ps(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 e = exp_ps(_mm256_or_ps(x, sign));  // -|x|
  const __m256 num = _mm256_blendv_ps(one, e, x);  // sign bit of x selects e
  return _mm256_div_ps(num, _mm256_add_ps(one, e));
}

// The activation's constants, broadcast once per call.
struct ActVec {
  __m256 alpha, beta;
  explicit ActVec(const Activation& a) : alpha(_mm256_set1_ps(a.alpha)), beta(_mm256_set1_ps(a.beta)) {}
};

// apply_activation_scalar, lane-wise. Comparisons are ordered so NaN ends where the scalar
// code sends it (Relu: 0; Clip, LeakyRelu, hard ops: NaN).
template <ActKind K>
inline __m256 act_ps(__m256 x, const ActVec& c) {
  const __m256 zero = _mm256_setzero_ps();
  if constexpr (K == ActKind::kNone) {
    return x;
  } else if constexpr (K == ActKind::kRelu) {
    return _mm256_max_ps(x, zero);  // x > 0 ? x : 0
  } else if constexpr (K == ActKind::kClip) {
    // x < lo ? lo : (x > hi ? hi : x), exactly, also when lo > hi.
    const __m256 t = _mm256_min_ps(c.beta, x);  // hi < x ? hi : x (NaN: x)
    return _mm256_blendv_ps(t, c.alpha, _mm256_cmp_ps(x, c.alpha, _CMP_LT_OQ));
  } else if constexpr (K == ActKind::kLeakyRelu) {
    return _mm256_blendv_ps(_mm256_mul_ps(x, c.alpha), x, _mm256_cmp_ps(x, zero, _CMP_GE_OQ));
  } else if constexpr (K == ActKind::kHardSwish) {
    __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.0f / 6.0f), _mm256_set1_ps(0.5f));
    t = _mm256_min_ps(_mm256_set1_ps(1.0f), _mm256_max_ps(zero, t));  // NaN stays NaN
    return _mm256_mul_ps(x, t);
  } else if constexpr (K == ActKind::kHardSigmoid) {
    const __m256 t = _mm256_fmadd_ps(x, c.alpha, c.beta);
    return _mm256_min_ps(_mm256_set1_ps(1.0f), _mm256_max_ps(zero, t));
  } else if constexpr (K == ActKind::kSigmoid) {
    return sigmoid_ps(x);
  } else {
    // Silu: x / (1 + exp(-x)), the scalar formula. x * sigmoid(x) would go through a subnormal
    // exp(x) for x < -87 and lose bits in results that are still normal; this form is accurate
    // wherever exp(-x) is finite and gives -0, as the definition, below x = -88.7.
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp_ps(_mm256_sub_ps(zero, x))));
  }
}

// y[i] = f(x[i]); two vectors per iteration for the latency of the longer functions.
template <typename F>
inline void map_unary(int64_t n, const float* x, float* y, F f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = f(_mm256_loadu_ps(x + i));
    const __m256 b = f(_mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(y + i, a);
    _mm256_storeu_ps(y + i + 8, b);
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, f(_mm256_maskload_ps(x + i, m)));
  }
}

template <ActKind K>
void vact(int64_t n, const float* x, float* y, const Activation& act) {
  const ActVec c(act);
  map_unary(n, x, y, [&](__m256 v) { return act_ps<K>(v, c); });
}

template <BinaryOp Op>
inline __m256 binary_ps(__m256 a, __m256 b) {
  if constexpr (Op == BinaryOp::kAdd) return _mm256_add_ps(a, b);
  else if constexpr (Op == BinaryOp::kSub) return _mm256_sub_ps(a, b);
  else if constexpr (Op == BinaryOp::kMul) return _mm256_mul_ps(a, b);
  else return _mm256_div_ps(a, b);
}

template <BinaryOp Op>
void vbinary(int64_t n, const float* a, const float* b, float* out) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 r0 = binary_ps<Op>(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    const __m256 r1 = binary_ps<Op>(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
    const __m256 r2 = binary_ps<Op>(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
    const __m256 r3 = binary_ps<Op>(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));
    _mm256_storeu_ps(out + i, r0);
    _mm256_storeu_ps(out + i + 8, r1);
    _mm256_storeu_ps(out + i + 16, r2);
    _mm256_storeu_ps(out + i + 24, r3);
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, binary_ps<Op>(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(out + i, m, binary_ps<Op>(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m)));
  }
}

template <BinaryOp Op, bool kReversed>
void vbinaryc(int64_t n, const float* a, float b, float* out) {
  const __m256 vb = _mm256_set1_ps(b);
  const auto f = [&](__m256 v) { return kReversed ? binary_ps<Op>(vb, v) : binary_ps<Op>(v, vb); };
  map_unary(n, a, out, f);
}

}  // namespace

void f32_vexp__avx2(int64_t n, const float* x, float* y) { map_unary(n, x, y, exp_ps); }

void f32_vact__avx2(int64_t n, const float* x, float* y, const Activation& act) {
  switch (act.kind) {
    case ActKind::kNone:
      if (x != y) map_unary(n, x, y, [](__m256 v) { return v; });
      return;
    case ActKind::kRelu: return vact<ActKind::kRelu>(n, x, y, act);
    case ActKind::kClip: return vact<ActKind::kClip>(n, x, y, act);
    case ActKind::kLeakyRelu: return vact<ActKind::kLeakyRelu>(n, x, y, act);
    case ActKind::kHardSwish: return vact<ActKind::kHardSwish>(n, x, y, act);
    case ActKind::kHardSigmoid: return vact<ActKind::kHardSigmoid>(n, x, y, act);
    case ActKind::kSigmoid: return vact<ActKind::kSigmoid>(n, x, y, act);
    case ActKind::kSilu: return vact<ActKind::kSilu>(n, x, y, act);
  }
}

void f32_vbinary__avx2(BinaryOp op, int64_t n, const float* a, const float* b, float* out) {
  switch (op) {
    case BinaryOp::kAdd: return vbinary<BinaryOp::kAdd>(n, a, b, out);
    case BinaryOp::kSub: return vbinary<BinaryOp::kSub>(n, a, b, out);
    case BinaryOp::kMul: return vbinary<BinaryOp::kMul>(n, a, b, out);
    case BinaryOp::kDiv: return vbinary<BinaryOp::kDiv>(n, a, b, out);
  }
}

void f32_vbinaryc__avx2(BinaryOp op, int64_t n, const float* a, float b, bool reversed, float* out) {
  switch (op) {
    case BinaryOp::kAdd: return vbinaryc<BinaryOp::kAdd, false>(n, a, b, out);
    case BinaryOp::kMul: return vbinaryc<BinaryOp::kMul, false>(n, a, b, out);
    case BinaryOp::kSub:
      return reversed ? vbinaryc<BinaryOp::kSub, true>(n, a, b, out) : vbinaryc<BinaryOp::kSub, false>(n, a, b, out);
    case BinaryOp::kDiv:
      return reversed ? vbinaryc<BinaryOp::kDiv, true>(n, a, b, out) : vbinaryc<BinaryOp::kDiv, false>(n, a, b, out);
  }
}

// Three passes over the row (max; exp and sum, storing exp into y; scale), the row staying in
// L1/L2 between them for the sizes models use.
void f32_softmax__avx2(int64_t len, const float* x, float* y) {
  if (len <= 0) return;
  // Max: lanes of the tail are filled with -inf so they never win.
  __m256 vmax0 = _mm256_set1_ps(-std::numeric_limits<float>::infinity()), vmax1 = vmax0;
  int64_t i = 0;
  for (; i + 16 <= len; i += 16) {
    vmax0 = _mm256_max_ps(vmax0, _mm256_loadu_ps(x + i));
    vmax1 = _mm256_max_ps(vmax1, _mm256_loadu_ps(x + i + 8));
  }
  for (; i + 8 <= len; i += 8) vmax0 = _mm256_max_ps(vmax0, _mm256_loadu_ps(x + i));
  __m256 vmax = _mm256_max_ps(vmax0, vmax1);
  if (i < len) {
    const __m256i m = tail_mask(len - i);
    const __m256 v = _mm256_blendv_ps(vmax, _mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m));
    vmax = _mm256_max_ps(vmax, v);
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
  const __m256 bmax = _mm256_broadcastss_ps(m4);

  // exp(x - max) into y, summed.
  __m256 sum0 = _mm256_setzero_ps(), sum1 = _mm256_setzero_ps();
  i = 0;
  for (; i + 16 <= len; i += 16) {
    const __m256 e0 = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), bmax));
    const __m256 e1 = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), bmax));
    _mm256_storeu_ps(y + i, e0);
    _mm256_storeu_ps(y + i + 8, e1);
    sum0 = _mm256_add_ps(sum0, e0);
    sum1 = _mm256_add_ps(sum1, e1);
  }
  for (; i + 8 <= len; i += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), bmax));
    _mm256_storeu_ps(y + i, e);
    sum0 = _mm256_add_ps(sum0, e);
  }
  if (i < len) {
    const __m256i m = tail_mask(len - i);
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), bmax));
    _mm256_maskstore_ps(y + i, m, e);
    sum0 = _mm256_add_ps(sum0, _mm256_and_ps(e, _mm256_castsi256_ps(m)));
  }
  const __m256 vsum = _mm256_add_ps(sum0, sum1);
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(vsum), _mm256_extractf128_ps(vsum, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
  const __m256 scale = _mm256_set1_ps(1.0f / _mm_cvtss_f32(s4));
  map_unary(len, y, y, [&](__m256 v) { return _mm256_mul_ps(v, scale); });
}

}  // namespace xnn::kernels
