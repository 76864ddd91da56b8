// Int8 convolution: 1×1 direct GEMM, uint8 im2col + GEMM, and the reference (design in qconv.h).
#include "engine/kernels/qconv.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "engine/core/error.h"
#include "engine/kernels/byte_runs.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {
namespace {

// Floor of a / b for b > 0 (C++ division truncates toward zero).
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The i in [0, count) with base + i·step in [0, limit) (step > 0), as [begin, end).
struct Range {
  int64_t begin, end;
};
Range inside_range(int64_t base, int64_t step, int64_t limit, int64_t count) {
  const int64_t begin = std::clamp<int64_t>(-floor_div(base, step), 0, count);
  const int64_t end = std::clamp<int64_t>(floor_div(limit - 1 - base, step) + 1, begin, count);
  return {begin, end};
}

// The implicit GEMM's copy of the input: the padded input [Hp × Wp] per channel split into
// sh × sw phase planes of hs × ws bytes (phase (a, b) holds rows a, a + sh, ... and columns
// b, b + sw, ...). Tap (ki, kj) of output (oy, ox) reads padded (sh·oy + ki·dh, sw·ox + kj·dw),
// which is phase (ki·dh mod sh, kj·dw mod sw) at (oy + ki·dh / sh, ox + kj·dw / sw): a shifted
// view, the same for every output. For stride 1 there is one phase, the padded plane itself.
struct PhaseGeometry {
  int64_t hs, ws, phases;
  int64_t plane_bytes() const { return hs * ws; }
  int64_t channel_bytes() const { return phases * hs * ws; }
};
PhaseGeometry phase_geometry(const QConvShape& s) {
  const int64_t hp = s.in_h + s.pad_t + s.pad_b, wp = s.in_w + s.pad_l + s.pad_r;
  return {(hp + s.stride_h - 1) / s.stride_h, (wp + s.stride_w - 1) / s.stride_w, s.stride_h * s.stride_w};
}

// Rows r = (c, ki, kj) of group g's column matrix for output positions [c0, c0 + cols): the input
// pixel each tap reads, x_zp in the padding. Row r lands at col + r·cols.
void im2col_block(const QConvShape& s, const uint8_t* xg, uint8_t x_zp, int64_t c0, int64_t cols, uint8_t* col) {
  const int64_t k = s.depth(), ow = s.out_w(), end = c0 + cols;
  const int64_t oy_first = c0 / ow, ox_first = c0 % ow;  // no division per run below
  int64_t c = 0, ki = 0, kj = 0;                          // the tap of row r, stepped with r
  for (int64_t r = 0; r < k; ++r) {
    const uint8_t* plane = xg + c * s.in_h * s.in_w;
    uint8_t* dst = col + r * cols;
    const int64_t base = kj * s.dilation_w - s.pad_l;           // ix = ox·sw + base
    const Range valid = inside_range(base, s.stride_w, s.in_w, ow);  // the ox whose ix is inside, any row
    for (int64_t p = c0, oy = oy_first, ox0 = ox_first; p < end; ++oy, ox0 = 0) {
      const int64_t run = std::min(ow - ox0, end - p);  // positions left in this output row
      const int64_t iy = oy * s.stride_h + ki * s.dilation_h - s.pad_t;
      uint8_t* d = dst + (p - c0);
      if (iy < 0 || iy >= s.in_h) {
        fill_byte_run(d, x_zp, run);
      } else {
        const int64_t b = std::clamp<int64_t>(valid.begin - ox0, 0, run), e = std::clamp<int64_t>(valid.end - ox0, b, run);
        fill_byte_run(d, x_zp, b);
        const uint8_t* src = plane + iy * s.in_w + base + (ox0 + b) * s.stride_w;
        if (s.stride_w == 1) {
          copy_byte_run(d + b, src, e - b);
        } else if (s.stride_w == 2) {
          copy_byte_run_stride2(d + b, src, e - b);
        } else {
          for (int64_t i = 0; i < e - b; ++i) d[b + i] = src[i * s.stride_w];
        }
        fill_byte_run(d + e, x_zp, run - e);
      }
      p += run;
    }
    if (++kj == s.kernel_w) {
      kj = 0;
      if (++ki == s.kernel_h) ki = 0, ++c;
    }
  }
}

// The group's slice of the requantisation (its output channels' multipliers).
QRequant group_requant(const QRequant& rq, const QConvShape& s, int64_t g) {
  QRequant r = rq;
  r.multiplier = rq.multiplier + g * s.out_per_group();
  return r;
}

}  // namespace

void check_qconv_shape(const QConvShape& s) {
  const auto positive = [](int64_t v, const char* name) {
    XNN_CHECK(v > 0, std::string("qs8 conv: ") + name + " is " + std::to_string(v) + ", expected > 0");
  };
  positive(s.in_channels, "in_channels");
  positive(s.in_h, "in_h");
  positive(s.in_w, "in_w");
  positive(s.out_channels, "out_channels");
  positive(s.kernel_h, "kernel_h");
  positive(s.kernel_w, "kernel_w");
  positive(s.stride_h, "stride_h");
  positive(s.stride_w, "stride_w");
  positive(s.dilation_h, "dilation_h");
  positive(s.dilation_w, "dilation_w");
  positive(s.groups, "groups");
  XNN_CHECK(s.pad_t >= 0 && s.pad_l >= 0 && s.pad_b >= 0 && s.pad_r >= 0, "qs8 conv: negative padding");
  XNN_CHECK(s.in_channels % s.groups == 0 && s.out_channels % s.groups == 0,
            "qs8 conv: in_channels " + std::to_string(s.in_channels) + " and out_channels " +
                std::to_string(s.out_channels) + " must be multiples of groups " + std::to_string(s.groups));
  XNN_CHECK(s.in_h + s.pad_t + s.pad_b >= s.dilation_h * (s.kernel_h - 1) + 1 &&
                s.in_w + s.pad_l + s.pad_r >= s.dilation_w * (s.kernel_w - 1) + 1,
            "qs8 conv: the (dilated) kernel is larger than the padded input");
}

PackedQConvWeights::PackedQConvWeights(const QConvShape& s, const int8_t* weights, const int32_t* bias, Isa isa)
    : shape_(s) {
  check_qconv_shape(s);
  direct_ = s.kernel_h == 1 && s.kernel_w == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_t == 0 &&
            s.pad_l == 0 && s.pad_b == 0 && s.pad_r == 0;
  const int64_t m = s.out_per_group(), k = s.depth();
  const PhaseGeometry pg = phase_geometry(s);
  const bool implicit = !direct_ && 4 * (pg.ws - s.out_w()) <= pg.ws;
  const int64_t cin_g = s.in_per_group(), taps = s.kernel_h * s.kernel_w;
  if (implicit && cin_g % 4 == 0 && isa == Isa::kAvx2 && best_qs8_kernels() == Qs8Kernels::kVnni512) {
    // K reordered from (c, ki, kj) to (ki, kj, c): 4 consecutive k are 4 channels at one tap.
    std::vector<int8_t> reordered(static_cast<size_t>(m * k));
    for (int64_t g = 0; g < s.groups; ++g) {
      const int8_t* wg = weights + g * m * k;
      for (int64_t o = 0; o < m; ++o)
        for (int64_t c = 0; c < cin_g; ++c)
          for (int64_t t = 0; t < taps; ++t) reordered[static_cast<size_t>(o * k + t * cin_g + c)] = wg[o * k + c * taps + t];
      groups_.emplace_back(m, k, reordered.data(), k, bias ? bias + g * m : nullptr, isa);
      if (!qs8_gemm_interleaved_supported(groups_.back())) break;
    }
    if (static_cast<int64_t>(groups_.size()) == s.groups && qs8_gemm_interleaved_supported(groups_.front())) {
      const int64_t quad_bytes = 4 * pg.channel_bytes();
      for (int64_t ki = 0; ki < s.kernel_h; ++ki)
        for (int64_t kj = 0; kj < s.kernel_w; ++kj)
          for (int64_t q = 0; q < cin_g / 4; ++q) {
            const int64_t dy = ki * s.dilation_h, dx = kj * s.dilation_w;
            const int64_t phase = (dy % s.stride_h) * s.stride_w + dx % s.stride_w;
            interleaved_offsets_.push_back(q * quad_bytes +
                                           4 * (phase * pg.plane_bytes() + dy / s.stride_h * pg.ws + dx / s.stride_w));
          }
      return;
    }
    groups_.clear();  // no interleaved kernel for these weights after all: the plain paths below
  }
  if (implicit) {
    implicit_offsets_.reserve(static_cast<size_t>(k));
    for (int64_t c = 0; c < s.in_per_group(); ++c)
      for (int64_t ki = 0; ki < s.kernel_h; ++ki)
        for (int64_t kj = 0; kj < s.kernel_w; ++kj) {
          const int64_t dy = ki * s.dilation_h, dx = kj * s.dilation_w;
          const int64_t phase = (dy % s.stride_h) * s.stride_w + dx % s.stride_w;
          implicit_offsets_.push_back(c * pg.channel_bytes() + phase * pg.plane_bytes() + dy / s.stride_h * pg.ws +
                                      dx / s.stride_w);
        }
  }
  groups_.reserve(static_cast<size_t>(s.groups));
  for (int64_t g = 0; g < s.groups; ++g) {
    groups_.emplace_back(m, k, weights + g * m * k, k, bias ? bias + g * m : nullptr, isa);
  }
}

std::string PackedQConvWeights::kernel_name() const {
  if (interleaved_gemm()) return std::string("qs8_conv_implicit4c+") + groups_.front().interleaved_kernel_name();
  const char* algo = direct_ ? "qs8_conv_1x1+" : implicit_gemm() ? "qs8_conv_implicit+" : "qs8_conv_im2col+";
  return std::string(algo) + groups_.front().kernel_name();
}

namespace {

// [C][H][W] into the phase planes of phase_geometry(s): P[c][a·sw + b][y][x] = the padded input
// (x_zp outside the image) at row sh·y + a, column sw·x + b.
// Only the phases some tap reads are copied (a 1×1 stride-2 layer reads one of four); the others
// are filled with x_zp (a memset), since the dropped extra columns may read into them.
void split_phases(const QConvShape& s, const uint8_t* in, uint8_t x_zp, uint8_t* out) {
  const PhaseGeometry pg = phase_geometry(s);
  const int64_t sh = s.stride_h, sw = s.stride_w;
  const auto used = [&s](int64_t step, int64_t stride, int64_t taps, int64_t phase) {
    for (int64_t t = 0; t < taps; ++t)
      if (t * step % stride == phase) return true;
    return false;
  };
  for (int64_t c = 0; c < s.in_channels; ++c) {
    const uint8_t* plane = in + c * s.in_h * s.in_w;
    for (int64_t a = 0; a < sh; ++a) {
      for (int64_t b = 0; b < sw; ++b) {
        if (!used(s.dilation_h, sh, s.kernel_h, a) || !used(s.dilation_w, sw, s.kernel_w, b)) {
          fill_byte_run(out, x_zp, pg.plane_bytes());
          out += pg.plane_bytes();
          continue;
        }
        // Phase columns x whose input column sw·x + b − pl is inside [0, in_w): [x0, x1).
        const int64_t x0 = std::clamp<int64_t>((s.pad_l - b + sw - 1) / sw, 0, pg.ws);
        const int64_t x1 = std::clamp<int64_t>((s.in_w + s.pad_l - b + sw - 1) / sw, x0, pg.ws);
        for (int64_t y = 0; y < pg.hs; ++y, out += pg.ws) {
          const int64_t iy = sh * y + a - s.pad_t;
          if (iy < 0 || iy >= s.in_h || x0 == x1) {
            fill_byte_run(out, x_zp, pg.ws);
            continue;
          }
          fill_byte_run(out, x_zp, x0);
          const uint8_t* src = plane + iy * s.in_w + sw * x0 + b - s.pad_l;
          if (sw == 1) {
            copy_byte_run(out + x0, src, x1 - x0);
          } else if (sw == 2) {
            copy_byte_run_stride2(out + x0, src, x1 - x0);
          } else {
            for (int64_t x = x0; x < x1; ++x) out[x] = src[(x - x0) * sw];
          }
          fill_byte_run(out + x1, x_zp, pg.ws - x1);
        }
      }
    }
  }
}

#if defined(__SSE2__)
// Channels 0-3 of 16 pixels (one 16-byte vector per channel) as 64 bytes, 4 per pixel.
inline void store_interleaved16(__m128i c0, __m128i c1, __m128i c2, __m128i c3, uint8_t* out) {
  const __m128i lo01 = _mm_unpacklo_epi8(c0, c1), hi01 = _mm_unpackhi_epi8(c0, c1);
  const __m128i lo23 = _mm_unpacklo_epi8(c2, c3), hi23 = _mm_unpackhi_epi8(c2, c3);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_unpacklo_epi16(lo01, lo23));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm_unpackhi_epi16(lo01, lo23));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 32), _mm_unpacklo_epi16(hi01, hi23));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 48), _mm_unpackhi_epi16(hi01, hi23));
}
#endif

// Pixels [x0, x1) of one interleaved phase row: out[4·x + l] = rows[l][sw·x] (rows[l] already at
// the row's first source byte for x = 0, which may lie before the row: only x >= x0 is read).
// Stride 1 and 2 take 16 pixels per step (stride 2 keeps the even bytes of 32, as pick_even in
// qpooling.cpp) while the 16 or 32 source bytes stay inside the row (row_end: its end for rows[0];
// the other rows are at the same offsets in their planes).
void interleave_row(const uint8_t* const rows[4], int64_t sw, int64_t x0, int64_t x1, int64_t row_end, uint8_t* out) {
  int64_t x = x0;
#if defined(__SSE2__)
  if (sw == 1) {
    for (; x + 16 <= x1 && x + 16 <= row_end; x += 16) {
      const auto ld = [x](const uint8_t* r) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + x)); };
      store_interleaved16(ld(rows[0]), ld(rows[1]), ld(rows[2]), ld(rows[3]), out + 4 * x);
    }
  } else if (sw == 2) {
    const __m128i low_bytes = _mm_set1_epi16(0x00FF);
    for (; x + 16 <= x1 && 2 * x + 32 <= row_end; x += 16) {
      const auto even = [x, low_bytes](const uint8_t* r) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 2 * x));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 2 * x + 16));
        return _mm_packus_epi16(_mm_and_si128(a, low_bytes), _mm_and_si128(b, low_bytes));
      };
      store_interleaved16(even(rows[0]), even(rows[1]), even(rows[2]), even(rows[3]), out + 4 * x);
    }
  }
#endif
  for (; x < x1; ++x)
    for (int l = 0; l < 4; ++l) out[4 * x + l] = rows[l][sw * x];
}

// [C][H][W] into the interleaved phase planes [C/4][phase][Hs][Ws][4] of the interleaved implicit
// GEMM: the phase planes of split_phases, 4 channels per pixel, in one pass.
void interleaved_phase_copy(const QConvShape& s, const uint8_t* in, uint8_t x_zp, uint8_t* out) {
  const PhaseGeometry pg = phase_geometry(s);
  const int64_t sh = s.stride_h, sw = s.stride_w, row_bytes = 4 * pg.ws, in_plane = s.in_h * s.in_w;
  for (int64_t q = 0; q < s.in_channels / 4; ++q) {
    const uint8_t* planes = in + 4 * q * in_plane;
    for (int64_t a = 0; a < sh; ++a) {
      for (int64_t b = 0; b < sw; ++b) {
        // Phase columns x whose input column sw·x + b − pl is inside [0, in_w): [x0, x1).
        const int64_t x0 = std::clamp<int64_t>((s.pad_l - b + sw - 1) / sw, 0, pg.ws);
        const int64_t x1 = std::clamp<int64_t>((s.in_w + s.pad_l - b + sw - 1) / sw, x0, pg.ws);
        for (int64_t y = 0; y < pg.hs; ++y, out += row_bytes) {
          const int64_t iy = sh * y + a - s.pad_t;
          if (iy < 0 || iy >= s.in_h || x0 == x1) {
            fill_byte_run(out, x_zp, row_bytes);
            continue;
          }
          fill_byte_run(out, x_zp, 4 * x0);
          // Source byte of phase column x: sw·x + b − pl in the row; rows[l] points at x = 0.
          const int64_t first = b - s.pad_l;
          const uint8_t* rows[4];
          for (int l = 0; l < 4; ++l) rows[l] = planes + l * in_plane + iy * s.in_w + first;
          interleave_row(rows, sw, x0, x1, s.in_w - first, out);
          fill_byte_run(out + 4 * x1, x_zp, row_bytes - 4 * x1);
        }
      }
    }
  }
}

// The implicit GEMMs' last step: gemm(g, wide_y, wide) computes group g's output channels over
// oh × ws columns into wide_y (the ws − ow columns past each output row computed and dropped
// here), and the output rows are copied out.
template <typename GroupGemm>
void for_each_group_wide(const QConvShape& s, int64_t ws, uint8_t* output, const GroupGemm& gemm) {
  const int64_t oh = s.out_h(), ow = s.out_w(), wide = oh * ws, n = oh * ow;
  auto* wide_y = reinterpret_cast<uint8_t*>(thread_scratch_f32(static_cast<size_t>(s.out_per_group() * wide + 3) / 4, 3));
  for (int64_t g = 0; g < s.groups; ++g) {
    gemm(g, wide_y, wide);
    uint8_t* yg = output + g * s.out_per_group() * n;
    for (int64_t o = 0; o < s.out_per_group(); ++o)
      for (int64_t oy = 0; oy < oh; ++oy) copy_byte_run(yg + (o * oh + oy) * ow, wide_y + o * wide + oy * ws, ow);
  }
}

// The interleaved implicit GEMM (qconv.h): the phase planes of every 4 channels interleaved into
// [C/4][phase][Hs][Ws][4], then per group one qs8_gemm_interleaved over oh × Ws columns.
void conv_interleaved(const PackedQConvWeights& w, const uint8_t* input, uint8_t x_zp, const QRequant& rq,
                      uint8_t* output, ThreadPool* pool) {
  const QConvShape& s = w.shape();
  const PhaseGeometry pg = phase_geometry(s);
  const int64_t quad_bytes = 4 * pg.channel_bytes(), quads = s.in_channels / 4;
  // Whole 16-column tiles read up to 15 columns past the last output row, plus a tap's shift:
  // slack set like the padding so even the dropped columns read defined bytes.
  const int64_t copy_bytes = quads * quad_bytes, slack = 4 * (pg.ws + 16) + 64;
  auto* copy = reinterpret_cast<uint8_t*>(thread_scratch_f32(static_cast<size_t>(copy_bytes + slack + 3) / 4, 2));
  interleaved_phase_copy(s, input, x_zp, copy);
  fill_byte_run(copy + copy_bytes, x_zp, slack);
  for_each_group_wide(s, pg.ws, output, [&](int64_t g, uint8_t* wide_y, int64_t wide) {
    qs8_gemm_interleaved(w.group(g), wide, copy + g * (s.in_per_group() / 4) * quad_bytes, w.interleaved_offsets(),
                         x_zp, group_requant(rq, s, g), wide_y, wide, pool);
  });
}

}  // namespace

void qs8_conv2d(const PackedQConvWeights& w, const uint8_t* input, uint8_t x_zero_point, const QRequant& rq,
                uint8_t* output, ThreadPool* pool) {
  const QConvShape& s = w.shape();
  check_requant(rq, s.out_channels, "qs8_conv2d");
  const int64_t n = s.out_h() * s.out_w(), k = s.depth();
  const int64_t in_plane = s.in_h * s.in_w;
  if (w.interleaved_gemm()) {
    conv_interleaved(w, input, x_zero_point, rq, output, pool);
    return;
  }
  if (w.implicit_gemm()) {
    const PhaseGeometry pg = phase_geometry(s);
    // The last rows' shifted views read up to a phase row past the copy: slack, set like the
    // padding so that even the dropped columns read defined bytes.
    const int64_t copy_bytes = s.in_channels * pg.channel_bytes(), slack = pg.ws + 64;
    auto* phases = reinterpret_cast<uint8_t*>(thread_scratch_f32(static_cast<size_t>(copy_bytes + slack + 3) / 4, 2));
    split_phases(s, input, x_zero_point, phases);
    fill_byte_run(phases + copy_bytes, x_zero_point, slack);
    for_each_group_wide(s, pg.ws, output, [&](int64_t g, uint8_t* wide_y, int64_t wide) {
      qs8_gemm_rows(w.group(g), wide, phases + g * s.in_per_group() * pg.channel_bytes(), w.implicit_offsets(),
                    x_zero_point, group_requant(rq, s, g), wide_y, wide, pool);
    });
    return;
  }
  for (int64_t g = 0; g < s.groups; ++g) {
    const uint8_t* xg = input + g * s.in_per_group() * in_plane;
    uint8_t* yg = output + g * s.out_per_group() * n;
    const QRequant rg = group_requant(rq, s, g);
    if (w.direct_gemm()) {
      qs8_gemm(w.group(g), n, xg, n, x_zero_point, rg, yg, n, pool);
      continue;
    }
    // Column blocks of about 256 KiB of uint8 im2col, so the block is still in L2 when the GEMM
    // packs it.
    const int64_t nb = std::min(n, std::clamp<int64_t>((int64_t{256} << 10) / std::max<int64_t>(k, 1), 64, 4096) / 16 * 16);
    const int64_t blocks = (n + nb - 1) / nb;
    const int threads = pool ? pool->threads() : 1;
    const auto block = [&](int64_t bi, ThreadPool* gemm_pool) {
      const int64_t c0 = bi * nb, cols = std::min(nb, n - c0);
      auto* col = reinterpret_cast<uint8_t*>(thread_scratch_f32(static_cast<size_t>((k * cols + 3) / 4), 2));
      im2col_block(s, xg, x_zero_point, c0, cols, col);
      qs8_gemm(w.group(g), cols, col, cols, x_zero_point, rg, yg + c0, n, gemm_pool);
    };
    if (blocks >= 2 * threads) {
      parallel_for(pool, blocks, [&](int64_t bi) { block(bi, nullptr); });
    } else {
      for (int64_t bi = 0; bi < blocks; ++bi) block(bi, pool);
    }
  }
}

void qs8_conv2d_reference(const QConvShape& s, const int8_t* weights, const int32_t* bias, const uint8_t* input,
                          uint8_t x_zero_point, const QRequant& rq, uint8_t* output) {
  check_qconv_shape(s);
  check_requant(rq, s.out_channels, "qs8_conv2d_reference");
  const float lower = requant_lower(rq), upper = requant_upper(rq);
  const int64_t oh = s.out_h(), ow = s.out_w(), cin_g = s.in_per_group();
  for (int64_t o = 0; o < s.out_channels; ++o) {
    const int64_t g = o / s.out_per_group();
    const int8_t* wo = weights + o * s.depth();
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        int64_t acc = bias ? bias[o] : 0;
        for (int64_t c = 0; c < cin_g; ++c) {
          const uint8_t* plane = input + (g * cin_g + c) * s.in_h * s.in_w;
          for (int64_t ki = 0; ki < s.kernel_h; ++ki) {
            const int64_t iy = oy * s.stride_h - s.pad_t + ki * s.dilation_h;
            for (int64_t kj = 0; kj < s.kernel_w; ++kj) {
              const int64_t ix = ox * s.stride_w - s.pad_l + kj * s.dilation_w;
              const bool inside = iy >= 0 && iy < s.in_h && ix >= 0 && ix < s.in_w;
              const int64_t v = inside ? plane[iy * s.in_w + ix] : x_zero_point;
              acc += int64_t{wo[(c * s.kernel_h + ki) * s.kernel_w + kj]} * (v - x_zero_point);
            }
          }
        }
        XNN_CHECK(acc >= std::numeric_limits<int32_t>::min() && acc <= std::numeric_limits<int32_t>::max(),
                  "qs8_conv2d_reference: accumulator of output channel " + std::to_string(o) + " overflows int32");
        output[(o * oh + oy) * ow + ox] =
            requantize(static_cast<int32_t>(acc), rq.multiplier[o], lower, upper, rq.zero_point);
      }
    }
  }
}

}  // namespace xnn::kernels
