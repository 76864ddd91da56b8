// qs8_dwconv*_flat__avx512vnni: the flat small-plane int8 depthwise kernel (qdepthwise_flat.h).
// Compiled for AVX-512 with VNNI and VBMI (the *_avx512vbmi rule); called only when
// qs8_dwconv_flat_enabled().
#include <immintrin.h>

#include "engine/kernels/qdepthwise_flat.h"
#include "engine/kernels/requant_avx512.h"
#include "engine/kernels/unroll.h"

namespace xnn::kernels::internal {

namespace {
__mmask64 first_bytes(int64_t n) {
  return n >= 64 ? ~__mmask64{0} : n <= 0 ? __mmask64{0} : (__mmask64{1} << n) - 1;
}

// Q tap quads; the window in one register (vpermb, zero point in byte 63) or two (vpermt2b, 127).
template <int Q, bool kOneRegister>
void channels(const QDwFlatPlan& plan, int64_t c0, int64_t c1, const uint8_t* input, uint8_t x_zero_point,
              const int8_t* weights, const int32_t* bias, const QRequant& rq, uint8_t* output) {
  const DepthwiseParams& p = plan.shape;
  const int64_t k2 = p.kernel * p.kernel, in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  const float upper = requant_upper(rq);  // Requant16 applies the lower clamp as qmin on the bytes
  const __m512i zero_point_byte = _mm512_set1_epi8(static_cast<char>(x_zero_point));
  constexpr __mmask64 kLastByte = __mmask64{1} << 63;
  for (int64_t c = c0; c < c1; ++c) {
    const int8_t* w = weights + c * k2;
    // Tap quads in row-major tap order (weight 0 past the last tap), and the accumulators' start:
    // bias − x_zp·Σw, so that picking the zero point for taps outside the image adds nothing net.
    __m512i wq[Q];
    int32_t wsum = 0;
    for (int q = 0; q < Q; ++q) {
      uint32_t packed = 0;
      for (int j = 0; j < 4; ++j) {
        const int64_t t = 4 * q + j;
        const int8_t tap = t < k2 ? w[t] : 0;
        wsum += tap;
        packed |= uint32_t{static_cast<uint8_t>(tap)} << (8 * j);
      }
      wq[q] = _mm512_set1_epi32(static_cast<int32_t>(packed));
    }
    const __m512i init = _mm512_set1_epi32((bias ? bias[c] : 0) - int32_t{x_zero_point} * wsum);
    const avx512::Requant16 requant(rq.multiplier[c], upper, rq.zero_point, rq.qmin);
    const uint8_t* plane = input + c * in_plane;
    uint8_t* out = output + c * out_plane;
    const uint8_t* index = plan.index.data();
    for (int64_t v = 0; v < plan.vectors; ++v, index += Q * 64) {
      const uint8_t* src = plane + plan.window[static_cast<size_t>(v)];
      const int64_t bytes = plan.window_bytes[static_cast<size_t>(v)];
      __m512i acc = init;
      if constexpr (kOneRegister) {
        const __m512i win = _mm512_mask_mov_epi8(_mm512_maskz_loadu_epi8(first_bytes(bytes), src), kLastByte,
                                                 zero_point_byte);
        unroll<Q>([&](auto q) {
          const __m512i taps = _mm512_permutexvar_epi8(_mm512_loadu_si512(index + 64 * q), win);
          acc = _mm512_dpbusd_epi32(acc, taps, wq[q]);
        });
      } else {
        const __m512i lo = _mm512_maskz_loadu_epi8(first_bytes(bytes), src);
        const __m512i hi = _mm512_mask_mov_epi8(_mm512_maskz_loadu_epi8(first_bytes(bytes - 64), src + 64), kLastByte,
                                                zero_point_byte);
        unroll<Q>([&](auto q) {
          const __m512i taps = _mm512_permutex2var_epi8(lo, _mm512_loadu_si512(index + 64 * q), hi);
          acc = _mm512_dpbusd_epi32(acc, taps, wq[q]);
        });
      }
      avx512::store_bytes16(out + 16 * v, requant(acc), plan.outputs[static_cast<size_t>(v)]);
    }
  }
}
}  // namespace

void qs8_dwconv_flat_channels__avx512vnni(const QDwFlatPlan& plan, int64_t c0, int64_t c1, const uint8_t* input,
                                          uint8_t x_zero_point, const int8_t* weights, const int32_t* bias,
                                          const QRequant& rq, uint8_t* output) {
  const auto run = [&](auto q) {
    constexpr int Q = decltype(q)::value;
    if (plan.one_register) {
      channels<Q, true>(plan, c0, c1, input, x_zero_point, weights, bias, rq, output);
    } else {
      channels<Q, false>(plan, c0, c1, input, x_zero_point, weights, bias, rq, output);
    }
  };
  switch (plan.shape.kernel) {  // ceil(k² / 4) quads
    case 3: return run(std::integral_constant<int, 3>{});
    case 5: return run(std::integral_constant<int, 7>{});
    default: return run(std::integral_constant<int, 13>{});
  }
}

}  // namespace xnn::kernels::internal
