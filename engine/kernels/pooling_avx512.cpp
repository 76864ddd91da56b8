// AVX-512 path of the 3×3 stride-2 max pool (declared in pooling.h; compiled for AVX-512
// F+VL+BW, called only when avx512_enabled()). 16 outputs per zmm: per input row, two loads of
// 16 columns give the even and odd taps through one vpermt2ps each, and two loads two columns
// further the third tap, so a row costs 3 shuffles per 16 outputs where the AVX2 kernel's
// in-lane shuffles cost 3 per 8 (plus a lane reorder). Taps are taken in the reference's order
// (row by row, left to right) with max_ps(t, best), so NaNs and signed zeros come out as the
// reference's. The last block of a row is masked: no row-end overlap, no scalar rest.
#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "engine/kernels/c16_avx512.h"
#include "engine/kernels/pooling.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {

void f32_maxpool2d_3x3s2_row__avx512(const float* const* rows, int64_t nrows, int64_t count, float* out) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  // Lanes [0, n) of a load at column `from` of a block whose windows cover `cols` columns.
  const auto lanes = [](int64_t cols, int64_t from) {
    return static_cast<__mmask16>((uint32_t{1} << std::clamp<int64_t>(cols - from, 0, 16)) - 1);
  };
  // Window columns 2j, 2j + 1, 2j + 2 of outputs [o, o + 16) from the 33 columns at p: t2 is t0
  // moved down one lane with column 32 (the next block's first even column) shifted in. Two
  // loads and a broadcast per row instead of four masked loads, one permute fewer: a 55-output
  // row 19.5 -> 16.0 ns, 27 outputs 10.3 -> 8.2 ns (L1-hot rows, one thread).
  const auto fold = [&](__m512 a, __m512 b, __m512 c, bool first, __m512 best) {
    const __m512 t0 = _mm512_permutex2var_ps(a, even, b);  // columns 2j
    const __m512 t1 = _mm512_permutex2var_ps(a, odd, b);   // 2j + 1
    const __m512 t2 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(c), _mm512_castps_si512(t0), 1));
    best = first ? t0 : _mm512_max_ps(t0, best);  // row 0's first tap seeds the window
    best = _mm512_max_ps(t1, best);
    return _mm512_max_ps(t2, best);
  };
  int64_t o = 0;
  // Whole blocks whose 33 columns end inside the windows' columns [0, 2·count]: plain loads.
  for (; o + 17 <= count; o += 16) {
    __m512 best = _mm512_setzero_ps();
    for (int64_t r = 0; r < nrows; ++r) {
      const float* p = rows[r] + 2 * o;
      best = fold(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16), _mm512_set1_ps(p[32]), r == 0, best);
    }
    _mm512_storeu_ps(out + o, best);
  }
  for (; o < count; o += 16) {
    const int64_t n = std::min<int64_t>(16, count - o), cols = 2 * n + 1;
    const __mmask16 m0 = lanes(cols, 0), m16 = lanes(cols, 16);
    __m512 best = _mm512_setzero_ps();
    for (int64_t r = 0; r < nrows; ++r) {
      const float* p = rows[r] + 2 * o;
      // Column 2n (the last window's third) is column 32 when n = 16, else inside a or b.
      const __m512 c = n == 16 ? _mm512_set1_ps(p[32]) : _mm512_setzero_ps();
      best = fold(_mm512_maskz_loadu_ps(m0, p), _mm512_maskz_loadu_ps(m16, p + 16), c, r == 0, best);
    }
    _mm512_mask_storeu_ps(out + o, lanes(n, 0), best);
  }
}

// Small planes with 16 channels in the lanes: the block's input planes transposed to HWC16 (flat
// over the plane, 16 pixels per transpose), each output pixel one max_ps per tap in window order,
// the result transposed back (c16::ChannelWriter). On a 13-wide output row the row kernel spends
// a call, masks and three permutes per input row on one vector of outputs.
void f32_maxpool2d_c16__avx512(const Pool2dParams& p, int64_t c0, const float* x, float* y) {
  using c16::kLanes;
  const int64_t nc = std::min<int64_t>(kLanes, p.planes - c0);
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  const int64_t out_pixels = c16::ChannelWriter::pixels_capacity(p.out_w, 0);
  float* in16 = thread_scratch_f32(static_cast<size_t>((in_plane + out_pixels) * kLanes), 2);
  float* out16 = in16 + in_plane * kLanes;
  c16::transpose_rows_in(x + c0 * in_plane, in_plane, nc, in_plane, in16);
  c16::ChannelWriter out(out16, nc, out_plane, 0, nullptr, y + c0 * out_plane, Activation{});
  const __m512 empty = _mm512_set1_ps(std::numeric_limits<float>::lowest());
  for (int64_t oy = 0; oy < p.out_h; ++oy) {
    const int64_t ih0 = oy * p.stride_h - p.pad_t;
    const int64_t kh0 = std::max<int64_t>(0, -ih0), kh1 = std::clamp<int64_t>(p.in_h - ih0, kh0, p.kernel_h);
    float* dst = out.next();
    for (int64_t ox = 0; ox < p.out_w; ++ox) {
      const int64_t iw0 = ox * p.stride_w - p.pad_l;
      const int64_t kw0 = std::max<int64_t>(0, -iw0), kw1 = std::clamp<int64_t>(p.in_w - iw0, kw0, p.kernel_w);
      __m512 best = empty;
      if (kh0 < kh1 && kw0 < kw1) {
        best = _mm512_loadu_ps(in16 + ((ih0 + kh0) * p.in_w + iw0 + kw0) * kLanes);  // the first tap seeds it
        for (int64_t kh = kh0; kh < kh1; ++kh) {
          const float* row = in16 + ((ih0 + kh) * p.in_w + iw0) * kLanes;
          for (int64_t kw = kh == kh0 ? kw0 + 1 : kw0; kw < kw1; ++kw) {
            best = _mm512_max_ps(_mm512_loadu_ps(row + kw * kLanes), best);
          }
        }
      }
      _mm512_storeu_ps(dst + ox * kLanes, best);
    }
    out.commit(p.out_w);
  }
  out.finish();
}

}  // namespace xnn::kernels
