// Depthwise convolution driver (task split, padded row buffer) and the scalar row kernels.
// The AVX2 row kernels are in depthwise_avx2.cpp; the design is described in depthwise.h.
#include "engine/kernels/depthwise.h"

#include <algorithm>
#include <cstring>

#include "engine/core/error.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {
namespace {

constexpr int64_t kGroupRows = 4;  // output rows the row kernels compute together


bool use_avx2(Isa isa) { return isa == Isa::kAvx2 && isa_supported(Isa::kAvx2); }

// Blocks of 16 channels, and bands of output rows when there are too few blocks to keep every
// thread busy (4 tasks per thread lets the dynamic split balance).
void dwconv_c16_blocks(const DepthwiseParams& p, const float* input, const float* weights, const float* bias,
                       const float* residual, const Activation& act, float* output, ThreadPool* pool) {
  const int64_t blocks = (p.channels + 15) / 16;
  const int64_t threads = pool ? pool->threads() : 1;
  int64_t bands = 1;
  if (threads > 1 && blocks < 4 * threads) bands = std::min(p.out_h, (4 * threads + blocks - 1) / blocks);
  const int64_t band_rows = (p.out_h + bands - 1) / bands;
  bands = (p.out_h + band_rows - 1) / band_rows;
  parallel_for(pool, blocks * bands, [&](int64_t t) {
    const int64_t oh0 = (t % bands) * band_rows;
    f32_dwconv_c16__avx512(p, (t / bands) * 16, oh0, std::min(p.out_h, oh0 + band_rows), input, weights, bias,
                           residual, act, output);
  });
}

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Padded row for input row ih of one channel: zeros outside the image (scalar path; the AVX2
// one is f32_dwconv_pad_rows__avx2, same contents).
void build_row(const DwPadRow& l, const float* plane, int64_t in_h, int64_t ih, float* dst) {
  if (ih < 0 || ih >= in_h) {
    std::memset(dst, 0, static_cast<size_t>(l.row_floats) * sizeof(float));
    return;
  }
  const float* src = plane + ih * l.in_w;
  if (l.stride == 1) {
    // Padded column q holds input column q - pad_l.
    const int64_t b = std::min(l.pad_l, l.row_floats);
    const int64_t e = std::clamp(l.pad_l + l.in_w, b, l.row_floats);
    std::memset(dst, 0, static_cast<size_t>(b) * sizeof(float));
    if (e > b) std::memcpy(dst + b, src + (b - l.pad_l), static_cast<size_t>(e - b) * sizeof(float));
    std::memset(dst + e, 0, static_cast<size_t>(l.row_floats - e) * sizeof(float));
    return;
  }
  const int64_t half = l.odd_offset;
  float* even = dst;
  float* odd = dst + half;
  // Padded columns 2j and 2j+1 are input columns c = 2j - pad_l and c + 1; [jb, je) has both inside.
  const int64_t jb = std::min(half, (l.pad_l + 1) / 2);
  const int64_t je = l.in_w + l.pad_l < 2 ? jb : std::clamp((l.in_w + l.pad_l - 2) / 2 + 1, jb, half);
  const auto at = [&](int64_t c) { return c >= 0 && c < l.in_w ? src[c] : 0.0f; };
  for (int64_t j = 0; j < jb; ++j) even[j] = at(2 * j - l.pad_l), odd[j] = at(2 * j + 1 - l.pad_l);
  const float* s = src + (2 * jb - l.pad_l);
  for (int64_t j = jb; j < je; ++j, s += 2) even[j] = s[0], odd[j] = s[1];
  for (int64_t j = je; j < half; ++j) even[j] = at(2 * j - l.pad_l), odd[j] = at(2 * j + 1 - l.pad_l);
}

// Scalar row kernel: per output, all taps accumulated in a register (bias first, then row by
// row, as the AVX2 kernel); the x loop has no calls or branches, so compilers vectorise it with
// baseline SSE. The residual is read at x before out[x] is written, so it may be the output.
template <int K, int S>
void rows_scalar(const DwRows& a, const Activation& act) {
  float w[K * K];
  for (int k = 0; k < K * K; ++k) w[k] = a.weights[k];
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* in[K];
    for (int kh = 0; kh < K; ++kh) in[kh] = a.in + (r * S + kh) * a.in_stride;
    float* out = a.out + r * a.out_w;
    const float* res = a.residual ? a.residual + r * a.out_w : nullptr;
    for (int64_t x = 0; x < a.out_w; ++x) {
      float acc = a.bias;
      for (int kh = 0; kh < K; ++kh) {
        for (int kw = 0; kw < K; ++kw) {
          const float v = S == 1 ? in[kh][x + kw] : in[kh][((kw & 1) ? a.odd_offset : 0) + x + kw / 2];
          acc += w[kh * K + kw] * v;
        }
      }
      out[x] = res ? acc + res[x] : acc;
    }
    if (act.kind != ActKind::kNone) {
      for (int64_t x = 0; x < a.out_w; ++x) out[x] = apply_activation_scalar(out[x], act);
    }
  }
}

void rows_scalar_dispatch(const DwRows& a, const Activation& act) {
  if (a.kernel == 3) return a.stride == 1 ? rows_scalar<3, 1>(a, act) : rows_scalar<3, 2>(a, act);
  if (a.kernel == 5) return a.stride == 1 ? rows_scalar<5, 1>(a, act) : rows_scalar<5, 2>(a, act);
  return a.stride == 1 ? rows_scalar<7, 1>(a, act) : rows_scalar<7, 2>(a, act);
}

// Small planes with 8 channels in the lanes (depthwise.h): transposes in, the AVX2 block
// kernel, the transpose out. Lanes past the last channel compute zeros and are not stored.
void dwconv_channel_blocks(const DepthwiseParams& p, const float* input, const float* weights, const float* bias,
                           const float* residual, const Activation& act, float* output, ThreadPool* pool) {
  const int64_t k = p.kernel, s = p.stride, kk = k * k;
  const int64_t rows8 = (p.out_h - 1) * s + k, w8 = (p.out_w - 1) * s + k;
  const int64_t in_floats = rows8 * w8 * 8, out_floats = p.out_h * p.out_w * 8;
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  parallel_for(pool, (p.channels + 7) / 8, [&](int64_t blk) {
    const int64_t c0 = blk * 8, nc = std::min<int64_t>(8, p.channels - c0);
    float* in8 = thread_scratch_f32(static_cast<size_t>(in_floats + out_floats + kk * 8 + 8), 2);
    float* out8 = in8 + in_floats;
    float* wt8 = out8 + out_floats;
    float* bias8 = wt8 + kk * 8;
    std::fill(in8, in8 + in_floats, 0.0f);
    // Padded rows/columns that hold image pixels.
    const int64_t r0 = std::min(rows8, p.pad_t), r1 = std::clamp(p.pad_t + p.in_h, r0, rows8);
    const int64_t q0 = std::min(w8, p.pad_l), q1 = std::clamp(p.pad_l + p.in_w, q0, w8);
    for (int64_t c = 0; c < nc; ++c) {
      const float* plane = input + (c0 + c) * in_plane;
      for (int64_t r = r0; r < r1; ++r) {
        const float* src = plane + (r - p.pad_t) * p.in_w;
        float* dst = in8 + r * w8 * 8 + c;
        for (int64_t q = q0; q < q1; ++q) dst[q * 8] = src[q - p.pad_l];
      }
    }
    for (int64_t c = 0; c < 8; ++c) {
      for (int64_t t = 0; t < kk; ++t) wt8[t * 8 + c] = c < nc ? weights[(c0 + c) * kk + t] : 0.0f;
      bias8[c] = c < nc && bias ? bias[c0 + c] : 0.0f;
    }
    if (residual) {
      if (nc < 8) std::fill(out8, out8 + out_floats, 0.0f);
      for (int64_t c = 0; c < nc; ++c) {
        const float* res = residual + (c0 + c) * out_plane;
        for (int64_t q = 0; q < out_plane; ++q) out8[q * 8 + c] = res[q];
      }
    }
    DwChannelBlock b;
    b.kernel = k, b.stride = s, b.pad_t = p.pad_t, b.in_h = p.in_h, b.in_w8 = w8;
    b.out_h = p.out_h, b.out_w = p.out_w;
    b.in8 = in8, b.w8 = wt8, b.bias8 = bias8, b.has_residual = residual != nullptr, b.out8 = out8;
    f32_dwconv_c8_block__avx2(b, act);
    for (int64_t c = 0; c < nc; ++c) {
      float* out = output + (c0 + c) * out_plane;
      for (int64_t q = 0; q < out_plane; ++q) out[q] = out8[q * 8 + c];
    }
  });
}

}  // namespace

// Both output sides at most 4, or at most 8 with 5×5 and 7×7 kernels: there the row kernels
// use at most half their lanes (5×5/7×7 step 16 columns) and most taps of a padded row are
// padding.
bool dwconv_channels_in_lanes(const DepthwiseParams& p, Isa isa) {
  if (!use_avx2(isa) || dwconv_c16(p, isa)) return false;
  const int64_t side = std::max(p.out_h, p.out_w);
  return side <= 4 || (side <= 8 && p.kernel >= 5);
}

// About 1K output floats per call, so the padded input rows they read (built just before) are
// still in L1; small planes go in one call.
int64_t dwconv_chunk_rows(int64_t out_w) {
  const int64_t rows = 1024 / std::max<int64_t>(out_w, 1);
  return std::max(kGroupRows, rows / kGroupRows * kGroupRows);
}

DwPadRow dwconv_pad_row(const DepthwiseParams& p) {
  DwPadRow l;
  l.stride = p.stride, l.in_w = p.in_w, l.pad_l = p.pad_l;
  const int64_t w_vec = round_up(p.out_w, 8);  // the last vector is computed in full
  if (p.stride == 1) {
    l.row_floats = round_up(w_vec + p.kernel - 1, 8);
  } else {
    l.odd_offset = round_up(w_vec + (p.kernel - 1) / 2, 8);
    l.row_floats = 2 * l.odd_offset;
  }
  return l;
}

void f32_dwconv_pad_rows(const DwPadRow& r, const float* plane, int64_t in_h, int64_t ih, int64_t count, float* dst,
                         Isa isa) {
  if (use_avx2(isa)) return f32_dwconv_pad_rows__avx2(r, plane, in_h, ih, count, dst);
  for (int64_t i = 0; i < count; ++i) build_row(r, plane, in_h, ih + i, dst + i * r.row_floats);
}

void f32_dwconv_rows(const DwRows& r, const Activation& act, Isa isa) {
  if (use_avx2(isa)) return f32_dwconv_rows__avx2(r, act);
  rows_scalar_dispatch(r, act);
}

bool f32_dwconv_supported(int64_t kernel, int64_t stride, int64_t dilation) {
  return (kernel == 3 || kernel == 5 || kernel == 7) && (stride == 1 || stride == 2) && dilation == 1;
}

bool dwconv_c16(const DepthwiseParams& p, Isa isa) {
  (void)p;
  return use_avx2(isa) && avx512_enabled();
}

std::string dwconv_kernel_name(const DepthwiseParams& p, Isa isa) {
  const std::string k = std::to_string(p.kernel);
  const std::string base = "f32_dwconv" + k + "x" + k + "s" + std::to_string(p.stride);
  if (dwconv_c16(p, isa)) return base + "c16__avx512";
  if (!dwconv_channels_in_lanes(p, isa)) return dwconv_kernel_name(p.kernel, p.stride, isa);
  return base + "c8__avx2";
}

std::string dwconv_kernel_name(int64_t kernel, int64_t stride, Isa isa) {
  const std::string k = std::to_string(kernel);
  return "f32_dwconv" + k + "x" + k + "s" + std::to_string(stride) + (use_avx2(isa) ? "__avx2" : "__scalar");
}

void f32_dwconv(const DepthwiseParams& p, const float* input, const float* weights, const float* bias,
                const float* residual, const Activation& act, float* output, ThreadPool* pool, Isa isa) {
  XNN_CHECK(f32_dwconv_supported(p.kernel, p.stride, 1), "f32_dwconv: kernel must be 3, 5 or 7 and stride 1 or 2");
  XNN_CHECK(p.pad_t >= 0 && p.pad_l >= 0, "f32_dwconv: negative padding");
  if (p.channels <= 0 || p.out_h <= 0 || p.out_w <= 0) return;
  if (dwconv_c16(p, isa)) return dwconv_c16_blocks(p, input, weights, bias, residual, act, output, pool);
  XNN_CHECK(p.in_channel_stride == 0 && p.in_row0 == 0 && p.out_channel_stride == 0 && p.out_row0 == 0,
            "f32_dwconv: bands need the AVX-512 kernel");
  if (dwconv_channels_in_lanes(p, isa)) return dwconv_channel_blocks(p, input, weights, bias, residual, act, output, pool);
  const DwPadRow pad_row = dwconv_pad_row(p);
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

  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  const int64_t chunk = dwconv_chunk_rows(p.out_w);
  parallel_for(pool, p.channels * row_blocks, [&](int64_t t) {
    const int64_t c = t / row_blocks;
    const int64_t oh0 = (t % row_blocks) * rows_per_block;
    const int64_t oh1 = std::min(p.out_h, oh0 + rows_per_block);
    const int64_t ih0 = oh0 * s - p.pad_t;  // input row of padded row 0
    const int64_t buf_rows = (oh1 - oh0 - 1) * s + k;
    float* buf = thread_scratch_f32(static_cast<size_t>(buf_rows * pad_row.row_floats), 2);
    const float* plane = input + c * in_plane;
    DwRows a;
    a.kernel = k;
    a.stride = s;
    a.in_stride = pad_row.row_floats;
    a.odd_offset = pad_row.odd_offset;
    a.weights = weights + c * k * k;
    a.bias = bias ? bias[c] : 0.0f;
    a.out_w = p.out_w;
    int64_t built = 0;
    for (int64_t oh = oh0; oh < oh1; oh += chunk) {
      a.rows = std::min(chunk, oh1 - oh);
      const int64_t first = (oh - oh0) * s;
      const int64_t need = first + (a.rows - 1) * s + k;
      f32_dwconv_pad_rows(pad_row, plane, p.in_h, ih0 + built, need - built, buf + built * pad_row.row_floats, isa);
      built = need;
      a.in = buf + first * pad_row.row_floats;
      a.out = output + c * out_plane + oh * p.out_w;
      a.residual = residual ? residual + c * out_plane + oh * p.out_w : nullptr;
      f32_dwconv_rows(a, act, isa);
    }
  });
}

}  // namespace xnn::kernels
