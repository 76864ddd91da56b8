// AVX-512 im2col into 16-wide GEMM panels (declared in im2col.h).
#include <immintrin.h>

#include <vector>

#include "engine/kernels/im2col.h"

namespace xnn::kernels {

void f32_im2col_panels16__avx512(const Im2colGeometry& g, const float* input, int64_t p0, int64_t count,
                                 float* panels) {
  const int64_t k = g.depth(), plane = g.in_h * g.in_w;
  // Per panel: the lanes' top-left input pixel (iy0, ix0), and which lanes each kernel row and
  // column keep inside the image; a tap's lanes are then one offset add and one mask AND away.
  // Masked lanes read nothing (a masked gather does not touch their addresses).
  thread_local std::vector<__mmask16> row_ok, col_ok;
  row_ok.resize(static_cast<size_t>(g.kernel_h));
  col_ok.resize(static_cast<size_t>(g.kernel_w));
  const __m512i lane_index = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t q0 = 0; q0 < count; q0 += 16) {
    float* panel = panels + (q0 / 16) * k * 16;
    const int lanes = static_cast<int>(count - q0 < 16 ? count - q0 : 16);
    const __mmask16 valid = static_cast<__mmask16>((1u << lanes) - 1u);
    // Output positions p -> (oy, ox) by division in int32 (positions of one image fit).
    const __m512i p = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(p0 + q0)), lane_index);
    alignas(64) int32_t pos[16], oy[16], ox[16];
    _mm512_store_si512(pos, p);
    for (int l = 0; l < 16; ++l) {
      oy[l] = pos[l] / static_cast<int32_t>(g.out_w);
      ox[l] = pos[l] % static_cast<int32_t>(g.out_w);
    }
    const __m512i iy0 = _mm512_sub_epi32(_mm512_mullo_epi32(_mm512_load_si512(oy), _mm512_set1_epi32(static_cast<int>(g.stride_h))),
                                         _mm512_set1_epi32(static_cast<int>(g.pad_t)));
    const __m512i ix0 = _mm512_sub_epi32(_mm512_mullo_epi32(_mm512_load_si512(ox), _mm512_set1_epi32(static_cast<int>(g.stride_w))),
                                         _mm512_set1_epi32(static_cast<int>(g.pad_l)));
    const __m512i h = _mm512_set1_epi32(static_cast<int>(g.in_h)), w = _mm512_set1_epi32(static_cast<int>(g.in_w));
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      const __m512i iy = _mm512_add_epi32(iy0, _mm512_set1_epi32(static_cast<int>(ki * g.dilation_h)));
      row_ok[static_cast<size_t>(ki)] = _mm512_mask_cmplt_epi32_mask(
          _mm512_cmpge_epi32_mask(iy, _mm512_setzero_si512()) & valid, iy, h);
    }
    for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
      const __m512i ix = _mm512_add_epi32(ix0, _mm512_set1_epi32(static_cast<int>(kj * g.dilation_w)));
      col_ok[static_cast<size_t>(kj)] =
          _mm512_mask_cmplt_epi32_mask(_mm512_cmpge_epi32_mask(ix, _mm512_setzero_si512()), ix, w);
    }
    // Offset of each lane's top-left pixel within a channel plane (negative in the padding: only
    // masked lanes carry such offsets into a gather).
    const __m512i base = _mm512_add_epi32(_mm512_mullo_epi32(iy0, w), ix0);
    float* row = panel;
    for (int64_t c = 0; c < g.channels; ++c) {
      const float* src = input + c * plane;
      for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
        const __mmask16 rows = row_ok[static_cast<size_t>(ki)];
        for (int64_t kj = 0; kj < g.kernel_w; ++kj, row += 16) {
          const __mmask16 m = rows & col_ok[static_cast<size_t>(kj)];
          const int tap = static_cast<int>(ki * g.dilation_h * g.in_w + kj * g.dilation_w);
          const __m512i idx = _mm512_add_epi32(base, _mm512_set1_epi32(tap));
          _mm512_storeu_ps(row, _mm512_mask_i32gather_ps(zero, m, idx, src, 4));
        }
      }
    }
  }
}

}  // namespace xnn::kernels
