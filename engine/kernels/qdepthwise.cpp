// Int8 depthwise convolution driver (task split, padded int16 row buffer, weight pairs) and the
// reference, which is also the scalar ISA's kernel. The design is described in qdepthwise.h; the
// AVX2 row kernels are in qdepthwise_avx2.cpp.
#include "engine/kernels/qdepthwise.h"

#include <algorithm>
#include <limits>

#include "engine/core/error.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {
namespace {

constexpr int64_t kGroupRows = 4;  // output rows the AVX2 row kernels compute together

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Output rows per row-kernel call: about 1K outputs, so the padded rows built just before are
// still in L1; small planes go in one call.
int64_t chunk_rows(int64_t out_w) {
  const int64_t rows = 1024 / std::max<int64_t>(out_w, 1);
  return std::max(kGroupRows, rows / kGroupRows * kGroupRows);
}

struct Requant {
  float multiplier, lower, upper;
  int32_t zero_point;
};

// Output rows [oy0, oy1) of one channel, straight from the definition.
void channel_rows_reference(const DepthwiseParams& p, const uint8_t* plane, uint8_t x_zp, const int8_t* w,
                            int32_t bias, const Requant& rq, uint8_t* out_plane, int64_t oy0, int64_t oy1) {
  const int64_t k = p.kernel;
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    for (int64_t ox = 0; ox < p.out_w; ++ox) {
      int64_t acc = bias;
      for (int64_t kh = 0; kh < k; ++kh) {
        const int64_t iy = oy * p.stride - p.pad_t + kh;
        for (int64_t kw = 0; kw < k; ++kw) {
          const int64_t ix = ox * p.stride - p.pad_l + kw;
          const bool inside = iy >= 0 && iy < p.in_h && ix >= 0 && ix < p.in_w;
          const int64_t v = inside ? plane[iy * p.in_w + ix] : x_zp;
          acc += int64_t{w[kh * k + kw]} * (v - x_zp);
        }
      }
      XNN_CHECK(acc >= std::numeric_limits<int32_t>::min() && acc <= std::numeric_limits<int32_t>::max(),
                "qs8_dwconv: accumulator overflows int32");
      out_plane[oy * p.out_w + ox] =
          requantize(static_cast<int32_t>(acc), rq.multiplier, rq.lower, rq.upper, rq.zero_point);
    }
  }
}

// Messages are built only on failure: this runs on every call, which must not allocate.
void check_params(const DepthwiseParams& p, const QRequant& rq, const int32_t* bias, const char* what) {
  const auto w = [what] { return std::string(what); };
  XNN_CHECK(qs8_dwconv_supported(p.kernel, p.stride, 1),
            w() + ": kernel " + std::to_string(p.kernel) + " stride " + std::to_string(p.stride) +
                " unsupported (expected kernel 3, 5 or 7, stride 1 or 2)");
  XNN_CHECK(p.pad_t >= 0 && p.pad_l >= 0, w() + ": negative padding");
  XNN_CHECK(p.channels >= 0 && p.in_h >= 0 && p.in_w >= 0, w() + ": negative size");
  check_requant(rq, p.channels, what);
  // The largest |Σ w·(x − zp)| is k²·128·255; with the bias it must fit int32, for any input.
  const int64_t limit = std::numeric_limits<int32_t>::max() - p.kernel * p.kernel * 128 * 255;
  for (int64_t c = 0; bias && c < p.channels; ++c) {
    XNN_CHECK(bias[c] <= limit && bias[c] >= -limit,
              w() + ": bias " + std::to_string(bias[c]) + " of channel " + std::to_string(c) +
                  " can overflow the int32 accumulator");
  }
}

// (lo, hi) as one int32 lane of two int16, lo in the low half (the first tap of the pair).
int32_t weight_pair(int lo, int hi) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                              (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
}

// Per kernel row: ceil(k / 4) int32 of 4 int8 taps (little-endian: tap 4q in the low byte), 0
// past the row's end.
void make_weight_quads(const int8_t* w, int64_t k, int32_t* quads) {
  const int64_t q_count = (k + 3) / 4;
  for (int64_t kh = 0; kh < k; ++kh) {
    for (int64_t q = 0; q < q_count; ++q) {
      uint32_t v = 0;
      for (int64_t j = 0; j < 4; ++j) {
        const int64_t kw = 4 * q + j;
        if (kw < k) v |= static_cast<uint32_t>(static_cast<uint8_t>(w[kh * k + kw])) << (8 * j);
      }
      quads[kh * q_count + q] = static_cast<int32_t>(v);
    }
  }
}

// Per kernel row: pairs (w[2t], w[2t+1]) for t < (k+1)/2, then (w[2t−1], w[2t]); w outside the
// row is 0. Writes 2·k·((k + 1) / 2) values.
void make_weight_pairs(const int8_t* w, int64_t k, int32_t* pairs) {
  const int64_t t_count = (k + 1) / 2;
  for (int64_t kh = 0; kh < k; ++kh) {
    int row[10] = {};  // row[1 + kw] = w[kh][kw], zeros around
    for (int64_t kw = 0; kw < k; ++kw) row[1 + kw] = w[kh * k + kw];
    int32_t* even = pairs + kh * 2 * t_count;
    int32_t* odd = even + t_count;
    for (int64_t t = 0; t < t_count; ++t) {
      even[t] = weight_pair(row[1 + 2 * t], row[2 + 2 * t]);
      odd[t] = weight_pair(row[2 * t], row[1 + 2 * t]);
    }
  }
}

}  // namespace

bool qs8_dwconv_supported(int64_t kernel, int64_t stride, int64_t dilation) {
  return (kernel == 3 || kernel == 5 || kernel == 7) && (stride == 1 || stride == 2) && dilation == 1;
}

bool qs8_dwconv_vnni_enabled() { return vnni512_enabled() && cpu_features().avx512_vbmi; }

std::string qs8_dwconv_kernel_name(int64_t kernel, int64_t stride, Isa isa) {
  const std::string k = std::to_string(kernel);
  const bool avx2 = isa == Isa::kAvx2 && isa_supported(Isa::kAvx2);
  const char* suffix = !avx2 ? "__scalar" : qs8_dwconv_vnni_enabled() ? "__avx512vnni" : "__avx2";
  return "qs8_dwconv" + k + "x" + k + "s" + std::to_string(stride) + suffix;
}

namespace internal {
void qs8_dwconv_check_params(const DepthwiseParams& p, const QRequant& rq, const int32_t* bias, const char* what) {
  check_params(p, rq, bias, what);
}

int64_t qs8_dwconv_padded_width(int64_t out_w, int64_t kernel, int64_t stride) {
  const int64_t w_vec = round_up(out_w, 16);  // the last step of 16 outputs is computed in full
  return round_up(stride * w_vec + kernel - 1, 16);
}
}  // namespace internal

void qs8_dwconv_reference(const DepthwiseParams& p, const uint8_t* input, uint8_t x_zero_point, const int8_t* weights,
                          const int32_t* bias, const QRequant& rq, uint8_t* output) {
  check_params(p, rq, bias, "qs8_dwconv_reference");
  const Requant r{0, requant_lower(rq), requant_upper(rq), rq.zero_point};
  for (int64_t c = 0; c < p.channels; ++c) {
    Requant rc = r;
    rc.multiplier = rq.multiplier[c];
    channel_rows_reference(p, input + c * p.in_h * p.in_w, x_zero_point, weights + c * p.kernel * p.kernel,
                           bias ? bias[c] : 0, rc, output + c * p.out_h * p.out_w, 0, p.out_h);
  }
}

void qs8_dwconv(const DepthwiseParams& p, const uint8_t* input, uint8_t x_zero_point, const int8_t* weights,
                const int32_t* bias, const QRequant& rq, uint8_t* output, ThreadPool* pool, Isa isa) {
  check_params(p, rq, bias, "qs8_dwconv");
  if (p.channels <= 0 || p.out_h <= 0 || p.out_w <= 0) return;
  const bool avx2 = isa == Isa::kAvx2 && isa_supported(Isa::kAvx2);
  const bool vnni = avx2 && qs8_dwconv_vnni_enabled();
  const int64_t k = p.kernel, s = p.stride;

  // Tasks: channels, and blocks of rows when there are too few channels to keep every thread
  // busy (4 tasks per thread lets the dynamic split balance).
  const int64_t threads = pool ? pool->threads() : 1;
  int64_t row_blocks = 1;
  if (threads > 1 && p.channels < 4 * threads) {
    row_blocks = std::min((p.out_h + kGroupRows - 1) / kGroupRows, (4 * threads + p.channels - 1) / p.channels);
  }
  const int64_t rows_per_block = round_up((p.out_h + row_blocks - 1) / row_blocks, kGroupRows);
  row_blocks = (p.out_h + rows_per_block - 1) / rows_per_block;

  const int64_t width = internal::qs8_dwconv_padded_width(p.out_w, k, s);
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  const int64_t chunk = chunk_rows(p.out_w);
  const float lower = requant_lower(rq), upper = requant_upper(rq);
  parallel_for(pool, p.channels * row_blocks, [&](int64_t t) {
    const int64_t c = t / row_blocks;
    const int64_t oh0 = (t % row_blocks) * rows_per_block;
    const int64_t oh1 = std::min(p.out_h, oh0 + rows_per_block);
    const uint8_t* plane = input + c * in_plane;
    const int8_t* w = weights + c * k * k;
    const int32_t b = bias ? bias[c] : 0;
    if (!avx2) {
      channel_rows_reference(p, plane, x_zero_point, w, b, {rq.multiplier[c], lower, upper, rq.zero_point},
                             output + c * out_plane, oh0, oh1);
      return;
    }
    int32_t pairs[7 * 2 * 4];  // the largest kernel's k · 2 · (k + 1) / 2
    int32_t quads[7 * 2];      // and k · (k + 3) / 4
    if (vnni) {
      make_weight_quads(w, k, quads);
    } else {
      make_weight_pairs(w, k, pairs);
    }
    int32_t wsum = 0;
    for (int64_t i = 0; i < k * k; ++i) wsum += w[i];
    internal::QDwRows a;
    a.kernel = k;
    a.stride = s;
    a.in_stride = width;
    a.weight_pairs = pairs;
    a.weight_quads = quads;
    a.init = b - int32_t{x_zero_point} * wsum;  // in range: checked against the bias limit
    a.multiplier = rq.multiplier[c];
    a.lower = lower;
    a.upper = upper;
    a.zero_point = rq.zero_point;
    a.qmin = rq.qmin;
    a.out_w = p.out_w;
    const int64_t ih0 = oh0 * s - p.pad_t;  // input row of padded row 0
    const int64_t buf_rows = (oh1 - oh0 - 1) * s + k;
    auto* buf = reinterpret_cast<uint8_t*>(thread_scratch_f32(static_cast<size_t>(buf_rows * width / 4 + 1), 2));
    int64_t built = 0;
    for (int64_t oh = oh0; oh < oh1; oh += chunk) {
      a.rows = std::min(chunk, oh1 - oh);
      const int64_t first = (oh - oh0) * s;
      const int64_t need = first + (a.rows - 1) * s + k;
      internal::qs8_dwconv_pad_rows__avx2(plane, p.in_h, p.in_w, p.pad_l, x_zero_point, ih0 + built, need - built,
                                          width, buf + built * width);
      built = need;
      a.in = buf + first * width;
      a.out = output + c * out_plane + oh * p.out_w;
      if (vnni) {
        internal::qs8_dwconv_rows__avx512vnni(a);
      } else {
        internal::qs8_dwconv_rows__avx2(a);
      }
    }
  });
}

}  // namespace xnn::kernels
