// Int8 convolution: 1×1 direct GEMM, uint8 im2col + GEMM, and the reference (design in qconv.h).
#include "engine/kernels/qconv.h"

#include <algorithm>
#include <cstring>
#include <limits>

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
  const int64_t hp = s.in_h + s.pad_t + s.pad_b, wp = s.in_w + s.pad_l + s.pad_r;
  if (!direct_ && s.stride_h == 1 && s.stride_w == 1 && 4 * (wp - s.out_w()) <= wp) {
    implicit_offsets_.reserve(static_cast<size_t>(k));
    for (int64_t c = 0; c < s.in_per_group(); ++c)
      for (int64_t ki = 0; ki < s.kernel_h; ++ki)
        for (int64_t kj = 0; kj < s.kernel_w; ++kj)
          implicit_offsets_.push_back(c * hp * wp + ki * s.dilation_h * wp + kj * s.dilation_w);
  }
  groups_.reserve(static_cast<size_t>(s.groups));
  for (int64_t g = 0; g < s.groups; ++g) {
    groups_.emplace_back(m, k, weights + g * m * k, k, bias ? bias + g * m : nullptr, isa);
  }
}

std::string PackedQConvWeights::kernel_name() const {
  const char* algo = direct_ ? "qs8_conv_1x1+" : implicit_gemm() ? "qs8_conv_implicit+" : "qs8_conv_im2col+";
  return std::string(algo) + groups_.front().kernel_name();
}

namespace {

// [C][H][W] into [C][H + pt + pb][W + pl + pr] with x_zp around each plane.
void pad_planes(const QConvShape& s, const uint8_t* in, uint8_t x_zp, uint8_t* out) {
  const int64_t wp = s.in_w + s.pad_l + s.pad_r;
  for (int64_t c = 0; c < s.in_channels; ++c) {
    const uint8_t* plane = in + c * s.in_h * s.in_w;
    fill_byte_run(out, x_zp, s.pad_t * wp + s.pad_l);
    out += s.pad_t * wp + s.pad_l;
    for (int64_t y = 0; y < s.in_h; ++y) {
      copy_byte_run(out, plane + y * s.in_w, s.in_w);
      // This row's right padding and the next row's left padding (or the bottom rows').
      const int64_t gap = y + 1 < s.in_h ? s.pad_r + s.pad_l : s.pad_r + s.pad_b * wp;
      fill_byte_run(out + s.in_w, x_zp, gap);
      out += s.in_w + gap;
    }
  }
}

}  // namespace

void qs8_conv2d(const PackedQConvWeights& w, const uint8_t* input, uint8_t x_zero_point, const QRequant& rq,
                uint8_t* output, ThreadPool* pool) {
  const QConvShape& s = w.shape();
  check_requant(rq, s.out_channels, "qs8_conv2d");
  const int64_t n = s.out_h() * s.out_w(), k = s.depth();
  const int64_t in_plane = s.in_h * s.in_w;
  if (w.implicit_gemm()) {
    const int64_t hp = s.in_h + s.pad_t + s.pad_b, wp = s.in_w + s.pad_l + s.pad_r;
    const int64_t oh = s.out_h(), ow = s.out_w(), wide = oh * wp;  // the GEMM's columns
    // The last rows' shifted views read up to (kw − 1)·dw bytes past the copy: slack.
    const size_t padded_bytes = static_cast<size_t>(s.in_channels * hp * wp + s.kernel_w * s.dilation_w);
    auto* padded = reinterpret_cast<uint8_t*>(thread_scratch_f32((padded_bytes + 3) / 4, 2));
    pad_planes(s, input, x_zero_point, padded);
    auto* wide_y = reinterpret_cast<uint8_t*>(thread_scratch_f32(static_cast<size_t>(s.out_per_group() * wide + 3) / 4, 3));
    for (int64_t g = 0; g < s.groups; ++g) {
      const QRequant rg = group_requant(rq, s, g);
      qs8_gemm_rows(w.group(g), wide, padded + g * s.in_per_group() * hp * wp, w.implicit_offsets(), x_zero_point, rg,
                    wide_y, wide, pool);
      uint8_t* yg = output + g * s.out_per_group() * n;
      for (int64_t o = 0; o < s.out_per_group(); ++o)
        for (int64_t oy = 0; oy < oh; ++oy) copy_byte_run(yg + (o * oh + oy) * ow, wide_y + o * wide + oy * wp, ow);
    }
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
