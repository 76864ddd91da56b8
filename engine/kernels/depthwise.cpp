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

// Output rows per row-kernel call: about 1K output floats, so the padded input rows they read
// (built just before) are still in L1; small planes go in one call.
int64_t chunk_rows(int64_t out_w) {
  const int64_t rows = 1024 / std::max<int64_t>(out_w, 1);
  return std::max(kGroupRows, rows / kGroupRows * kGroupRows);
}

bool use_avx2(Isa isa) { return isa == Isa::kAvx2 && isa_supported(Isa::kAvx2); }

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Layout of one padded row: stride 1 holds padded columns [0, len); stride 2 holds the even
// padded columns at [0, half) and the odd ones at [odd, odd + half).
struct RowLayout {
  int64_t len = 0, half = 0, odd = 0, stride = 0;
};

RowLayout row_layout(const DepthwiseParams& p) {
  RowLayout l;
  const int64_t w_vec = round_up(p.out_w, 8);  // the last vector is computed in full
  if (p.stride == 1) {
    l.len = w_vec + p.kernel - 1;
    l.stride = round_up(l.len, 8);
  } else {
    l.half = w_vec + (p.kernel - 1) / 2;
    l.odd = round_up(l.half, 8);
    l.stride = 2 * l.odd;
  }
  return l;
}

// Padded row for input row ih of one channel: zeros outside the image.
void build_row(const DepthwiseParams& p, const RowLayout& l, const float* plane, int64_t ih, float* dst) {
  if (ih < 0 || ih >= p.in_h) {
    std::memset(dst, 0, static_cast<size_t>(l.stride) * sizeof(float));
    return;
  }
  const float* src = plane + ih * p.in_w;
  if (p.stride == 1) {
    // Padded column q holds input column q - pad_l.
    const int64_t b = std::min(p.pad_l, l.len);
    const int64_t e = std::clamp(p.pad_l + p.in_w, b, l.len);
    std::memset(dst, 0, static_cast<size_t>(b) * sizeof(float));
    if (e > b) std::memcpy(dst + b, src + (b - p.pad_l), static_cast<size_t>(e - b) * sizeof(float));
    std::memset(dst + e, 0, static_cast<size_t>(l.stride - e) * sizeof(float));
    return;
  }
  float* even = dst;
  float* odd = dst + l.odd;
  // Padded columns 2j and 2j+1 are input columns c = 2j - pad_l and c + 1; [jb, je) has both inside.
  const int64_t jb = std::min(l.half, (p.pad_l + 1) / 2);
  const int64_t je = p.in_w + p.pad_l < 2 ? jb : std::clamp((p.in_w + p.pad_l - 2) / 2 + 1, jb, l.half);
  const auto at = [&](int64_t c) { return c >= 0 && c < p.in_w ? src[c] : 0.0f; };
  for (int64_t j = 0; j < jb; ++j) even[j] = at(2 * j - p.pad_l), odd[j] = at(2 * j + 1 - p.pad_l);
  const float* s = src + (2 * jb - p.pad_l);
  for (int64_t j = jb; j < je; ++j, s += 2) even[j] = s[0], odd[j] = s[1];
  for (int64_t j = je; j < l.half; ++j) even[j] = at(2 * j - p.pad_l), odd[j] = at(2 * j + 1 - p.pad_l);
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

}  // namespace

bool f32_dwconv_supported(int64_t kernel, int64_t stride, int64_t dilation) {
  return (kernel == 3 || kernel == 5 || kernel == 7) && (stride == 1 || stride == 2) && dilation == 1;
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
  const bool avx2 = use_avx2(isa);
  const RowLayout layout = row_layout(p);
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

  DwPadRow pad_row;
  pad_row.stride = s, pad_row.in_w = p.in_w, pad_row.pad_l = p.pad_l;
  pad_row.row_floats = layout.stride, pad_row.odd_offset = layout.odd;
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  const int64_t chunk = chunk_rows(p.out_w);
  parallel_for(pool, p.channels * row_blocks, [&](int64_t t) {
    const int64_t c = t / row_blocks;
    const int64_t oh0 = (t % row_blocks) * rows_per_block;
    const int64_t oh1 = std::min(p.out_h, oh0 + rows_per_block);
    const int64_t ih0 = oh0 * s - p.pad_t;  // input row of padded row 0
    const int64_t buf_rows = (oh1 - oh0 - 1) * s + k;
    float* buf = thread_scratch_f32(static_cast<size_t>(buf_rows * layout.stride), 2);
    const float* plane = input + c * in_plane;
    DwRows a;
    a.kernel = k;
    a.stride = s;
    a.in_stride = layout.stride;
    a.odd_offset = layout.odd;
    a.weights = weights + c * k * k;
    a.bias = bias ? bias[c] : 0.0f;
    a.out_w = p.out_w;
    int64_t built = 0;
    for (int64_t oh = oh0; oh < oh1; oh += chunk) {
      a.rows = std::min(chunk, oh1 - oh);
      const int64_t first = (oh - oh0) * s;
      const int64_t need = first + (a.rows - 1) * s + k;
      if (avx2) {
        f32_dwconv_pad_rows__avx2(pad_row, plane, p.in_h, ih0 + built, need - built, buf + built * layout.stride);
        built = need;
      }
      for (; built < need; ++built) build_row(p, layout, plane, ih0 + built, buf + built * layout.stride);
      a.in = buf + first * layout.stride;
      a.out = output + c * out_plane + oh * p.out_w;
      a.residual = residual ? residual + c * out_plane + oh * p.out_w : nullptr;
      if (avx2) {
        f32_dwconv_rows__avx2(a, act);
      } else {
        rows_scalar_dispatch(a, act);
      }
    }
  });
}

}  // namespace xnn::kernels
