#include "engine/kernels/qpooling.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/kernels/scratch.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace xnn::kernels {

namespace {

// Maximum of the window's columns [ox·sw − pl, + kw) ∩ [0, in_w) of one row, 0 when empty.
inline uint8_t window_max(const uint8_t* row, int64_t in_w, int64_t x_begin, int64_t kernel_w) {
  uint8_t m = 0;
  for (int64_t ix = std::max<int64_t>(x_begin, 0); ix < std::min(x_begin + kernel_w, in_w); ++ix) m = std::max(m, row[ix]);
  return m;
}

// Row-wise maximum of rows [y0, y1) of a plane into `out` (in_w bytes).
void rows_max(const uint8_t* plane, int64_t in_w, int64_t y0, int64_t y1, uint8_t* out) {
  std::memcpy(out, plane + y0 * in_w, static_cast<size_t>(in_w));
  for (int64_t iy = y0 + 1; iy < y1; ++iy) {
    const uint8_t* r = plane + iy * in_w;
    for (int64_t i = 0; i < in_w; ++i) out[i] = std::max(out[i], r[i]);
  }
}

// hmax[i] = max(row[i .. i + kernel_w)) for i in [0, count) (every window inside the row).
void sliding_max(const uint8_t* row, int64_t count, int64_t kernel_w, uint8_t* hmax) {
  std::memcpy(hmax, row, static_cast<size_t>(count));
  for (int64_t t = 1; t < kernel_w; ++t) {
    const uint8_t* r = row + t;
    for (int64_t i = 0; i < count; ++i) hmax[i] = std::max(hmax[i], r[i]);
  }
}

// y[i] = hmax[2i] for i in [0, count): the stride-2 pick, 16 outputs per step from 32 bytes (the
// even bytes of each pair of 16-byte loads, kept by a 0x00FF mask and packed with packuswb; SSE2,
// the baseline ISA). hmax must be readable up to 2·count + 32 bytes (the caller pads its scratch).
void pick_even(const uint8_t* hmax, int64_t count, uint8_t* y) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128i low_bytes = _mm_set1_epi16(0x00FF);
  for (; i + 16 <= count; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hmax + 2 * i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hmax + 2 * i + 16));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm_packus_epi16(_mm_and_si128(a, low_bytes), _mm_and_si128(b, low_bytes)));
  }
#endif
  for (; i < count; ++i) y[i] = hmax[2 * i];
}

}  // namespace

void u8_maxpool2d(const Pool2dParams& p, const uint8_t* x, uint8_t* y, ThreadPool* pool) {
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  // Outputs [ox_begin, ox_end) have their whole window inside the row: they read the sliding
  // maximum; the others (borders) take their window directly.
  const int64_t ox_begin = std::min(p.out_w, (p.pad_l + p.stride_w - 1) / p.stride_w);
  const int64_t ox_end = p.in_w >= p.kernel_w
                             ? std::clamp<int64_t>((p.in_w - p.kernel_w + p.pad_l) / p.stride_w + 1, ox_begin, p.out_w)
                             : ox_begin;
  const int64_t slide = std::max<int64_t>(p.in_w - p.kernel_w + 1, 0);
  parallel_for(pool, p.planes, [&](int64_t plane) {
    const uint8_t* xp = x + plane * in_plane;
    uint8_t* yp = y + plane * out_plane;
    auto* row_max = reinterpret_cast<uint8_t*>(thread_scratch_f32(static_cast<size_t>(p.in_w + 3) / 4, 2));
    // 32 bytes past the sliding maxima: pick_even's last 32-byte read.
    auto* hmax = reinterpret_cast<uint8_t*>(thread_scratch_f32(static_cast<size_t>(slide + 36) / 4, 3));
    for (int64_t oy = 0; oy < p.out_h; ++oy) {
      uint8_t* yrow = yp + oy * p.out_w;
      const int64_t y0 = std::max<int64_t>(oy * p.stride_h - p.pad_t, 0);
      const int64_t y1 = std::min<int64_t>(oy * p.stride_h - p.pad_t + p.kernel_h, p.in_h);
      if (y0 >= y1) {  // the window's rows are all padding
        std::memset(yrow, 0, static_cast<size_t>(p.out_w));
        continue;
      }
      rows_max(xp, p.in_w, y0, y1, row_max);
      for (int64_t ox = 0; ox < ox_begin; ++ox) yrow[ox] = window_max(row_max, p.in_w, ox * p.stride_w - p.pad_l, p.kernel_w);
      if (ox_end > ox_begin) {
        sliding_max(row_max, slide, p.kernel_w, hmax);
        if (p.stride_w == 2) {
          pick_even(hmax + ox_begin * 2 - p.pad_l, ox_end - ox_begin, yrow + ox_begin);
        } else {
          for (int64_t ox = ox_begin; ox < ox_end; ++ox) yrow[ox] = hmax[ox * p.stride_w - p.pad_l];
        }
      }
      for (int64_t ox = ox_end; ox < p.out_w; ++ox) yrow[ox] = window_max(row_max, p.in_w, ox * p.stride_w - p.pad_l, p.kernel_w);
    }
  });
}

namespace {

// Σ x over n bytes; blocks of 2^23 keep the uint32 partial sums exact.
int64_t byte_sum(const uint8_t* x, int64_t n) {
  int64_t total = 0;
  for (int64_t b = 0; b < n; b += int64_t{1} << 23) {
    const int64_t e = std::min(n, b + (int64_t{1} << 23));
    uint32_t s = 0;
    for (int64_t i = b; i < e; ++i) s += x[i];
    total += s;
  }
  return total;
}

}  // namespace

void u8_global_avgpool(int64_t planes, int64_t plane_size, const uint8_t* x, const QGlobalAvgPoolParams& p, uint8_t* y,
                       ThreadPool* pool) {
  parallel_for(pool, planes, [&](int64_t plane) {
    const int64_t sum = byte_sum(x + plane * plane_size, plane_size) - int64_t{p.x_zero_point} * plane_size;
    const double mean = plane_size > 0 ? static_cast<double>(p.x_scale) * static_cast<double>(sum) / static_cast<double>(plane_size) : 0.0;
    const double q = std::nearbyint(mean / static_cast<double>(p.y_scale)) + p.y_zero_point;
    y[plane] = static_cast<uint8_t>(q < 0.0 ? 0.0 : (q > 255.0 ? 255.0 : q));
  });
}

}  // namespace xnn::kernels
