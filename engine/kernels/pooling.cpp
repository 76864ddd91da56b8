// Pooling drivers: the general scalar paths (the reference's arithmetic, in its order), the
// dispatch to the AVX2 row kernels, and the split over planes.
#include "engine/kernels/pooling.h"

#include <algorithm>
#include <limits>

namespace xnn::kernels {
namespace {

bool use_avx2(Isa isa) { return isa == Isa::kAvx2 && isa_supported(Isa::kAvx2); }

// Which AVX2 row kernel a pool uses (kNone: the scalar path throughout).
enum class RowKernel { kNone, kMax3x3s2, kMax3x3s2Zmm, kMax2x2s2, kMax, kAvg };
constexpr int64_t kMaxVectorRows = 16;  // kernel heights beyond this run scalar
constexpr int64_t kMaxC16PoolPlane = 4096;  // maxpool_c16: input pixels (256 KB a block)

bool vector_geometry(const Pool2dParams& p, Isa isa) {
  return use_avx2(isa) && p.kernel_h <= kMaxVectorRows && (p.stride_w == 1 || p.stride_w == 2);
}

RowKernel max_row_kernel(const Pool2dParams& p, Isa isa) {
  if (!vector_geometry(p, isa)) return RowKernel::kNone;
  // The zmm kernel where the CPU has AVX-512 (avx512_enabled, which XNN_ISA caps); one thread,
  // one process, against the AVX2 kernel: 64x111x111 (SqueezeNet's first pool, ceil) 200 -> 177
  // us, 128x55x55 119 -> 96, 256x27x27 101 -> 56, 64x112x112 pad 1 (ResNet-18's) 240 -> 199.
  if (p.stride_w == 2 && p.kernel_w == 3) return avx512_enabled() ? RowKernel::kMax3x3s2Zmm : RowKernel::kMax3x3s2;
  if (p.stride_w == 2 && p.kernel_w == 2) return RowKernel::kMax2x2s2;
  return RowKernel::kMax;
}

// 16 planes in the zmm lanes (f32_maxpool2d_c16__avx512) for small planes: output rows of at
// most 16, where a row kernel call covers one vector or less, or of at most 32 where no zmm row
// kernel applies. One thread, one process, against the row kernels: 256x27x27 -> 13x13 (3x3 s2,
// SqueezeNet's last) 54-56 -> 46-48 us; 3x3 s1 pad 1 (GoogLeNet's inception pools) 528x14x14
// 296 -> 77 us, 832x7x7 290 -> 33, 480x28x28 660-680 -> 341-344; 832x14x14 -> 7x7 s2 133 -> 44.
// Not 128x55x55 -> 27x27 (3x3 s2): the zmm row kernel 94 us, c16 113-115. Windows of fewer
// than 9 taps keep the row kernels.
bool maxpool_c16(const Pool2dParams& p, Isa isa) {
  if (!use_avx2(isa) || !avx512_enabled() || p.in_h * p.in_w > kMaxC16PoolPlane) return false;
  if (p.kernel_h * p.kernel_w < 9) return false;  // 2x2 windows: the row kernels (not measured)
  return p.out_w <= 16 || (p.out_w <= 32 && max_row_kernel(p, isa) != RowKernel::kMax3x3s2Zmm);
}

RowKernel avg_row_kernel(const Pool2dParams& p, Isa isa) {
  return vector_geometry(p, isa) ? RowKernel::kAvg : RowKernel::kNone;
}

// Outputs [vlo, vhi) of every row have windows wholly inside the input horizontally: the vector
// row kernels compute [vlo, vlo + 8 * blocks), interior_row_max/avg the rest of them (no
// clipping: on LeNet's 10x10 -> 5x5 pool, with no whole block of 8, the clipped per-window
// path took 22 ns an output), and the clipped scalar code the border.
struct VectorSpan {
  int64_t vlo = 0, vhi = 0, blocks = 0;
};
VectorSpan vector_span(const Pool2dParams& p, RowKernel rk) {
  VectorSpan v;
  if (rk == RowKernel::kNone) return v;
  const int64_t s = p.stride_w;
  v.vlo = std::min(p.out_w, (p.pad_l + s - 1) / s);  // first window starting at column >= 0
  const int64_t last = p.in_w - p.kernel_w + p.pad_l;  // s * ow <= last: window ends inside
  v.vhi = std::max(v.vlo, last < 0 ? int64_t{0} : std::min(p.out_w, last / s + 1));
  v.blocks = (v.vhi - v.vlo) / 8;
  return v;
}

// Interior outputs [0, count) of a row from the windows' input rows (rows[r] at the first
// window's first column): the reference's arithmetic in its order (max: seeded by the first
// tap, replaced only by a strictly greater one; average: 0 + taps in window order, one division).
void interior_row_max(const float* const* rows, int64_t nrows, int64_t kernel_w, int64_t stride_w, int64_t count,
                      float* out) {
  for (int64_t o = 0; o < count; ++o) {
    const int64_t c = o * stride_w;
    float best = rows[0][c];
    for (int64_t r = 0; r < nrows; ++r) {
      for (int64_t k = r == 0 ? 1 : 0; k < kernel_w; ++k) {
        const float t = rows[r][c + k];
        if (t > best) best = t;
      }
    }
    out[o] = best;
  }
}

void interior_row_avg(const float* const* rows, int64_t nrows, int64_t kernel_w, int64_t stride_w, int64_t count,
                      float divisor, float* out) {
  for (int64_t o = 0; o < count; ++o) {
    const int64_t c = o * stride_w;
    float sum = 0;
    for (int64_t r = 0; r < nrows; ++r) {
      for (int64_t k = 0; k < kernel_w; ++k) sum += rows[r][c + k];
    }
    out[o] = sum / divisor;
  }
}

// Taps k in [0, kernel) of the window starting at `start` that fall inside [0, limit).
struct Taps {
  int64_t begin, end;
};
inline Taps taps(int64_t start, int64_t kernel, int64_t limit) {
  const int64_t b = std::clamp<int64_t>(-start, 0, kernel);
  const int64_t e = std::clamp<int64_t>(limit - start, b, kernel);
  return {b, e};
}

// Runs fn(plane) for every plane over the pool, in tasks of at least ~16K input floats.
template <typename F>
void for_planes(int64_t planes, int64_t plane_floats, ThreadPool* pool, F&& fn) {
  const int64_t per_task = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane_floats));
  const int64_t tasks = (planes + per_task - 1) / per_task;
  parallel_for(pool, tasks, [&](int64_t t) {
    const int64_t end = std::min(planes, (t + 1) * per_task);
    for (int64_t c = t * per_task; c < end; ++c) fn(c);
  });
}

// Max over the window of output (oh, ow) with the rows `rh` already clipped to the input.
inline float max_window(const Pool2dParams& p, const float* xp, int64_t ih0, Taps rh, int64_t ow) {
  const int64_t iw0 = ow * p.stride_w - p.pad_l;
  const Taps rw = taps(iw0, p.kernel_w, p.in_w);
  if (rh.begin >= rh.end || rw.begin >= rw.end) return std::numeric_limits<float>::lowest();
  float best = xp[(ih0 + rh.begin) * p.in_w + iw0 + rw.begin];
  for (int64_t kh = rh.begin; kh < rh.end; ++kh) {
    const float* row = xp + (ih0 + kh) * p.in_w + iw0;
    for (int64_t kw = kh == rh.begin ? rw.begin + 1 : rw.begin; kw < rw.end; ++kw) {
      if (row[kw] > best) best = row[kw];
    }
  }
  return best;
}

// Outputs [vlo, vhi) of a row with the AVX2 row kernels: whole blocks of 8, then the rest.
void max_span_avx2(const Pool2dParams& p, const VectorSpan& span, RowKernel rk, const float** rows, int64_t nrows,
                   float* dst) {
  const auto vector_blocks = [&](int64_t blocks, float* out) {
    switch (rk) {
      case RowKernel::kMax3x3s2: f32_maxpool2d_3x3s2_row__avx2(rows, nrows, blocks, out); break;
      case RowKernel::kMax2x2s2: f32_maxpool2d_2x2s2_row__avx2(rows, nrows, blocks, out); break;
      default: f32_maxpool2d_row__avx2(rows, nrows, p.kernel_w, p.stride_w, blocks, out); break;
    }
  };
  if (span.blocks > 0) vector_blocks(span.blocks, dst);
  const int64_t done = 8 * span.blocks, rest = span.vhi - span.vlo - done;
  if (rest > 0 && span.blocks > 0) {
    // One more block, ending at vhi and overlapping the last one, whose outputs it writes
    // again with the same values: on 55-wide rows (SqueezeNet) the 7 left over otherwise
    // took the scalar path and most of the time.
    const int64_t back = span.vhi - span.vlo - 8;
    for (int64_t r = 0; r < nrows; ++r) rows[r] += back * p.stride_w;
    vector_blocks(1, dst + back);
  } else {
    for (int64_t r = 0; r < nrows; ++r) rows[r] += done * p.stride_w;
    if (rk == RowKernel::kMax2x2s2) {
      f32_maxpool2d_2x2s2_rest__avx2(rows, nrows, rest, dst + done);
    } else {
      interior_row_max(rows, nrows, p.kernel_w, p.stride_w, rest, dst + done);
    }
  }
}

void maxpool_plane(const Pool2dParams& p, const float* xp, float* yp, RowKernel rk) {
  const VectorSpan span = vector_span(p, rk);
  const float* rows[kMaxVectorRows];
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    const int64_t ih0 = oh * p.stride_h - p.pad_t;
    const Taps rh = taps(ih0, p.kernel_h, p.in_h);
    float* yrow = yp + oh * p.out_w;
    int64_t ow = 0;
    if (span.vhi > span.vlo && rh.begin < rh.end) {
      for (; ow < span.vlo; ++ow) yrow[ow] = max_window(p, xp, ih0, rh, ow);
      const int64_t c0 = span.vlo * p.stride_w - p.pad_l;
      int64_t nrows = 0;
      for (int64_t kh = rh.begin; kh < rh.end; ++kh) rows[nrows++] = xp + (ih0 + kh) * p.in_w + c0;
      float* dst = yrow + span.vlo;
      if (rk == RowKernel::kMax3x3s2Zmm) {  // the whole span, its last block masked
        f32_maxpool2d_3x3s2_row__avx512(rows, nrows, span.vhi - span.vlo, dst);
      } else {
        max_span_avx2(p, span, rk, rows, nrows, dst);
      }
      ow = span.vhi;
    }
    for (; ow < p.out_w; ++ow) yrow[ow] = max_window(p, xp, ih0, rh, ow);
  }
}

// Taps of the window at `o` inside input + padding (count_include_pad's count per dim):
// padding taps count, taps beyond the end padding (ceil_mode) do not.
inline int64_t padded_taps(int64_t o, int64_t stride, int64_t kernel, int64_t in, int64_t pad_begin, int64_t pad_end) {
  return std::clamp<int64_t>(in + pad_begin + pad_end - o * stride, 0, kernel);
}

void avgpool_plane(const Pool2dParams& p, bool count_include_pad, const float* xp, float* yp, RowKernel rk) {
  const VectorSpan span = vector_span(p, rk);
  const float* rows[kMaxVectorRows];
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    const int64_t ih0 = oh * p.stride_h - p.pad_t;
    const Taps rh = taps(ih0, p.kernel_h, p.in_h);
    const int64_t count_h = count_include_pad ? padded_taps(oh, p.stride_h, p.kernel_h, p.in_h, p.pad_t, p.pad_b)
                                              : rh.end - rh.begin;
    float* yrow = yp + oh * p.out_w;
    const auto scalar = [&](int64_t ow) {
      const int64_t iw0 = ow * p.stride_w - p.pad_l;
      const Taps rw = taps(iw0, p.kernel_w, p.in_w);
      float sum = 0;
      for (int64_t kh = rh.begin; kh < rh.end; ++kh) {
        const float* row = xp + (ih0 + kh) * p.in_w + iw0;
        for (int64_t kw = rw.begin; kw < rw.end; ++kw) sum += row[kw];
      }
      const int64_t count_w = count_include_pad ? padded_taps(ow, p.stride_w, p.kernel_w, p.in_w, p.pad_l, p.pad_r)
                                                : rw.end - rw.begin;
      const int64_t count = count_h * count_w;
      yrow[ow] = count > 0 ? sum / static_cast<float>(count) : 0.0f;
    };
    int64_t ow = 0;
    if (span.vhi > span.vlo && rh.begin < rh.end) {
      for (; ow < span.vlo; ++ow) scalar(ow);
      const int64_t c0 = span.vlo * p.stride_w - p.pad_l;
      int64_t nrows = 0;
      for (int64_t kh = rh.begin; kh < rh.end; ++kh) rows[nrows++] = xp + (ih0 + kh) * p.in_w + c0;
      // Windows inside the input horizontally count kernel_w columns either way.
      const float divisor = static_cast<float>(count_h * p.kernel_w);
      float* dst = yrow + span.vlo;
      if (span.blocks > 0) f32_avgpool2d_row__avx2(rows, nrows, p.kernel_w, p.stride_w, span.blocks, divisor, dst);
      const int64_t done = 8 * span.blocks, rest = span.vhi - span.vlo - done;
      if (rest > 0 && span.blocks > 0) {  // an overlapping last block, as maxpool_plane
        const int64_t back = span.vhi - span.vlo - 8;
        for (int64_t r = 0; r < nrows; ++r) rows[r] += back * p.stride_w;
        f32_avgpool2d_row__avx2(rows, nrows, p.kernel_w, p.stride_w, 1, divisor, dst + back);
      } else {
        for (int64_t r = 0; r < nrows; ++r) rows[r] += done * p.stride_w;
        interior_row_avg(rows, nrows, p.kernel_w, p.stride_w, rest, divisor, dst + done);
      }
      ow = span.vhi;
    }
    for (; ow < p.out_w; ++ow) scalar(ow);
  }
}

std::string suffix(Isa isa) { return use_avx2(isa) ? "__avx2" : "__scalar"; }

}  // namespace

void f32_maxpool2d(const Pool2dParams& p, const float* x, float* y, ThreadPool* pool, Isa isa) {
  if (p.planes <= 0 || p.out_h <= 0 || p.out_w <= 0) return;
  if (maxpool_c16(p, isa)) {
    parallel_for(pool, (p.planes + 15) / 16, [&](int64_t b) { f32_maxpool2d_c16__avx512(p, 16 * b, x, y); });
    return;
  }
  const RowKernel rk = max_row_kernel(p, isa);
  const int64_t in_size = p.in_h * p.in_w, out_size = p.out_h * p.out_w;
  for_planes(p.planes, std::max(in_size, out_size), pool,
             [&](int64_t c) { maxpool_plane(p, x + c * in_size, y + c * out_size, rk); });
}

void f32_maxpool2d_plane(const Pool2dParams& p, const float* x, float* y, Isa isa) {
  if (p.out_h > 0 && p.out_w > 0) maxpool_plane(p, x, y, max_row_kernel(p, isa));
}

void f32_avgpool2d(const Pool2dParams& p, bool count_include_pad, const float* x, float* y, ThreadPool* pool,
                   Isa isa) {
  if (p.planes <= 0 || p.out_h <= 0 || p.out_w <= 0) return;
  const int64_t in_size = p.in_h * p.in_w, out_size = p.out_h * p.out_w;
  const RowKernel rk = avg_row_kernel(p, isa);
  for_planes(p.planes, std::max(in_size, out_size), pool,
             [&](int64_t c) { avgpool_plane(p, count_include_pad, x + c * in_size, y + c * out_size, rk); });
}

void f32_global_avgpool(int64_t planes, int64_t plane_size, const float* x, float* y, ThreadPool* pool, Isa isa) {
  const bool avx2 = use_avx2(isa);
  for_planes(planes, plane_size, pool, [&](int64_t c) {
    const float* v = x + c * plane_size;
    if (avx2) {
      y[c] = f32_global_avgpool_plane__avx2(v, plane_size);
      return;
    }
    double sum = 0;
    for (int64_t i = 0; i < plane_size; ++i) sum += static_cast<double>(v[i]);
    y[c] = static_cast<float>(plane_size > 0 ? sum / static_cast<double>(plane_size) : 0.0);
  });
}

std::string maxpool2d_kernel_name(const Pool2dParams& p, Isa isa) {
  if (maxpool_c16(p, isa)) return "f32_maxpool2d_c16__avx512";
  switch (max_row_kernel(p, isa)) {
    case RowKernel::kNone: return "f32_maxpool2d__scalar";
    case RowKernel::kMax3x3s2:
      if (p.kernel_h == 3 && p.stride_h == 2) return "f32_maxpool2d_3x3s2__avx2";
      break;
    case RowKernel::kMax3x3s2Zmm:
      return p.kernel_h == 3 && p.stride_h == 2 ? "f32_maxpool2d_3x3s2__avx512" : "f32_maxpool2d_kx3s2__avx512";
    case RowKernel::kMax2x2s2:
      if (p.kernel_h == 2 && p.stride_h == 2) return "f32_maxpool2d_2x2s2__avx2";
      break;
    default: break;
  }
  return "f32_maxpool2d__avx2";
}

std::string avgpool2d_kernel_name(const Pool2dParams& p, Isa isa) {
  return avg_row_kernel(p, isa) == RowKernel::kNone ? "f32_avgpool2d__scalar" : "f32_avgpool2d__avx2";
}

std::string global_avgpool_kernel_name(Isa isa) { return "f32_global_avgpool" + suffix(isa); }

}  // namespace xnn::kernels
