// Conv (2-D, groups, stride, padding, dilation) in training. Each pass takes the fastest path that
// applies; all of them are held to a double-precision definition (train_conv_paths_test.cpp):
//   forward      3×3 stride-1, groups 1: Winograd (the inference kernels, several images' tiles per
//                call, where choose_winograd_tile says it pays); depthwise with multiplier 1,
//                3/5/7, stride 1/2: the inference depthwise kernels; few input channels (a first
//                layer; kernels::f32_conv_direct_pays): the inference direct kernel per image;
//                else im2col + the packed GEMM (into y directly when a feature map is wide; a
//                1×1 reads x as it is).
//   input grad   3×3 stride-1: Winograd on dy with the weights flipped in space and transposed in
//                channels (W'[c][m][i][j] = W[m][c][2−i][2−j]), padded by 2 − pad: the input
//                gradient of a stride-1 convolution is itself one; depthwise: a stride-1 depthwise
//                convolution of dy (spread onto a zero plane for stride 2) with rotated windows;
//                1×1 stride-1: Wᵀ·dy, one GEMM per image into dx; else col2im(Wᵀ·dy).
//   weight grad  3×3 stride-1: Winograd (kernels::f32_conv3x3s1_winograd_wgrad); depthwise: per
//                channel over the batch (kernels::f32_dwconv_wgrad_plane); groups 1: a GEMM over
//                panels copied from a channels-last input (f32_gemm_panels); else dy·colᵀ.
//   bias grad    Σ dy per channel.
// Images are split into one contiguous chunk per thread; partial weight gradients are summed in
// chunk order, so results do not depend on scheduling, only (through that order) on the thread
// count. The weights change every step, so their packing and transforms are redone per step:
// O(M·C) against the O(N·M·C·H·W) convolution. With ForwardContext::output_stats the forward also
// hands its consumer (a BatchNorm) per-plane sums while each plane is in cache.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "engine/kernels/depthwise.h"
#include "engine/kernels/direct_conv.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/scratch.h"
#include "engine/kernels/training_kernels.h"
#include "engine/kernels/transpose.h"
#include "engine/kernels/winograd.h"
#include "engine/ops/nn_common.h"
#include "engine/train/autograd.h"

namespace xnn::train {
namespace {

using kernels::GemmEpilogue;
using kernels::MatrixRef;

struct ConvGeom {
  int64_t n, c, h, w, m, groups, cg, mg, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
  int64_t k() const { return cg * kh * kw; }
  int64_t p() const { return oh * ow; }
  bool depthwise() const { return cg == 1 && groups > 1; }
};

ConvGeom conv_geometry(const Node& node, const Tensor& x, const Tensor& wt) {
  if (x.rank() != 4) {
    throw UnsupportedError("training: " + node.describe() +
                           ": only 2-D convolutions (input N×C×H×W) can be trained, got input " + shape_str(x.shape()));
  }
  if (x.dtype() != DType::kF32) throw UnsupportedError("training: " + node.describe() + ": only f32 convolutions can be trained");
  ConvGeom g{};
  g.n = x.dim(0), g.c = x.dim(1), g.h = x.dim(2), g.w = x.dim(3);
  g.m = wt.dim(0), g.groups = node.attr_int("group", 1), g.cg = wt.dim(1), g.mg = g.m / g.groups;
  g.kh = wt.dim(2), g.kw = wt.dim(3);
  const WindowGeometry wg = window_geometry(node, {g.h, g.w}, {g.kh, g.kw}, false);
  g.oh = wg.out[0], g.ow = wg.out[1];
  g.sh = wg.strides[0], g.sw = wg.strides[1];
  g.ph = wg.pads_begin[0], g.pw = wg.pads_begin[1];
  g.dh = wg.dilations[0], g.dw = wg.dilations[1];
  return g;
}

// col[K×P] (row stride ld) from the cg channels of one image starting at `x` (channel stride h·w).
void im2col(const ConvGeom& g, const float* x, float* col, int64_t ld) {
  for (int64_t c = 0; c < g.cg; ++c) {
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        float* row = col + ((c * g.kh + ki) * g.kw + kj) * ld;
        const IndexRange cols = valid_range(kj * g.dw - g.pw, g.sw, g.w, g.ow);
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          float* out = row + oy * g.ow;
          const int64_t iy = oy * g.sh - g.ph + ki * g.dh;
          if (iy < 0 || iy >= g.h) {
            std::memset(out, 0, static_cast<size_t>(g.ow) * sizeof(float));
            continue;
          }
          const float* in = x + (c * g.h + iy) * g.w + kj * g.dw - g.pw;
          for (int64_t ox = 0; ox < cols.begin; ++ox) out[ox] = 0;
          if (g.sw == 1) {
            std::memcpy(out + cols.begin, in + cols.begin, static_cast<size_t>(cols.size()) * sizeof(float));
          } else {
            for (int64_t ox = cols.begin; ox < cols.end; ++ox) out[ox] = in[ox * g.sw];
          }
          for (int64_t ox = cols.end; ox < g.ow; ++ox) out[ox] = 0;
        }
      }
    }
  }
}

// dx += col2im(dcol): the adjoint of im2col (dcol row stride ld).
void col2im_add(const ConvGeom& g, const float* col, float* dx, int64_t ld) {
  for (int64_t c = 0; c < g.cg; ++c) {
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const float* row = col + ((c * g.kh + ki) * g.kw + kj) * ld;
        const IndexRange cols = valid_range(kj * g.dw - g.pw, g.sw, g.w, g.ow);
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.sh - g.ph + ki * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          const float* src = row + oy * g.ow;
          float* out = dx + (c * g.h + iy) * g.w + kj * g.dw - g.pw;
          for (int64_t ox = cols.begin; ox < cols.end; ++ox) out[ox * g.sw] += src[ox];
        }
      }
    }
  }
}

// Contiguous image ranges, one per thread (fewer when the batch is small).
int64_t chunk_count(ThreadPool* pool, int64_t n) { return std::max<int64_t>(1, std::min<int64_t>(pool ? pool->threads() : 1, n)); }
std::pair<int64_t, int64_t> chunk_range(int64_t chunk, int64_t chunks, int64_t n) {
  return {n * chunk / chunks, n * (chunk + 1) / chunks};
}

// ForwardContext::output_stats of channels [m0, m0 + count) of image n, from their output planes
// (just written by this thread, so still in its cache).
void plane_stats(const ConvGeom& g, const float* y, int64_t n, int64_t m0, int64_t count, float* stats) {
  if (!stats) return;
  for (int64_t m = m0; m < m0 + count; ++m) {
    const float* plane = y + (n * g.m + m) * g.p();
    float* st = stats + (n * g.m + m) * 3;
    st[2] = plane[0];
    kernels::f32_shifted_sums(plane, g.p(), plane[0], &st[0], &st[1]);
  }
}

// Each thread runs its images through run_batch a few at a time: enough that their tiles fill
// whole rows of the Winograd GEMM kernel (7×7 maps have 4 tiles each, 14×14 maps 16).
template <typename F>
void for_image_slices(ThreadPool* pool, int64_t n, int64_t slice, F&& run_slice) {
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(pool ? pool->threads() : 1, n));
  parallel_for(pool, chunks, [&](int64_t t) {
    const int64_t end = n * (t + 1) / chunks;
    for (int64_t i = n * t / chunks; i < end; i += slice) run_slice(i, std::min(slice, end - i));
  });
}

// ---- depthwise (one input channel per group) ----
// The common case — one output channel per input channel, square 3×3/5×5/7×7 windows, stride 1
// or 2, no dilation — runs on the inference engine's depthwise kernels (f32_dwconv, AVX2 row
// kernels): the forward as is; the input gradient as a stride-1 depthwise convolution of dy (for
// stride 2: dy spread onto the even positions of a zero plane) with each channel's window
// rotated by 180°, padded by k − 1 − pad; the weight gradient per channel over the batch
// (f32_dwconv_wgrad_plane). Anything else runs direct loops over each (image, output channel)
// plane.

bool fast_depthwise(const ConvGeom& g) {
  return g.depthwise() && g.mg == 1 && g.kh == g.kw && g.sh == g.sw && g.dh == 1 && g.dw == 1 &&
         kernels::f32_dwconv_supported(g.kh, g.sh, 1) && g.ph >= 0 && g.pw >= 0 && g.ph <= g.kh - 1 &&
         g.pw <= g.kw - 1;
}

kernels::DepthwiseParams dw_params(int64_t channels, int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w,
                                   int64_t kernel, int64_t stride, int64_t pad_t, int64_t pad_l) {
  kernels::DepthwiseParams p;
  p.channels = channels, p.in_h = in_h, p.in_w = in_w, p.out_h = out_h, p.out_w = out_w;
  p.kernel = kernel, p.stride = stride, p.pad_t = pad_t, p.pad_l = pad_l;
  return p;
}

void fast_depthwise_forward(const ConvGeom& g, const float* x, const float* wt, const float* bias, float* y,
                            float* stats, ThreadPool* pool) {
  const kernels::DepthwiseParams p = dw_params(g.c, g.h, g.w, g.oh, g.ow, g.kh, g.sh, g.ph, g.pw);
  const kernels::Isa isa = kernels::best_isa();
  for_image_slices(pool, g.n, 1, [&](int64_t n, int64_t) {
    kernels::f32_dwconv(p, x + n * g.c * g.h * g.w, wt, bias, nullptr, kernels::Activation{}, y + n * g.m * g.p(), nullptr, isa);
    plane_stats(g, y, n, 0, g.m, stats);
  });
}

void fast_depthwise_backward(const ConvGeom& g, const float* x, const float* wt, const float* dy, float* dx, float* dw,
                             float* db, ThreadPool* pool) {
  const kernels::Isa isa = kernels::best_isa();
  const int64_t k = g.kh, s = g.sh;
  if (dx) {
    std::vector<float> flipped(static_cast<size_t>(g.c * k * k));
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t t = 0; t < k * k; ++t) flipped[static_cast<size_t>(c * k * k + t)] = wt[c * k * k + k * k - 1 - t];
    // Stride 2: dy on the even rows and columns of a (2·oh − 1) × (2·ow − 1) zero plane.
    const int64_t uh = s == 1 ? g.oh : 2 * g.oh - 1, uw = s == 1 ? g.ow : 2 * g.ow - 1;
    const kernels::DepthwiseParams p = dw_params(g.c, uh, uw, g.h, g.w, k, 1, k - 1 - g.ph, k - 1 - g.pw);
    for_image_slices(pool, g.n, 1, [&](int64_t n, int64_t) {
      const float* src = dy + n * g.m * g.p();
      if (s == 2) {
        float* up = kernels::thread_scratch_f32(static_cast<size_t>(g.c * uh * uw), 3);
        std::memset(up, 0, static_cast<size_t>(g.c * uh * uw) * sizeof(float));
        for (int64_t c = 0; c < g.c; ++c)
          for (int64_t oy = 0; oy < g.oh; ++oy)
            for (int64_t ox = 0; ox < g.ow; ++ox) up[(c * uh + 2 * oy) * uw + 2 * ox] = src[(c * g.oh + oy) * g.ow + ox];
        src = up;
      }
      kernels::f32_dwconv(p, src, flipped.data(), nullptr, nullptr, kernels::Activation{}, dx + n * g.c * g.h * g.w, nullptr, isa);
    });
  }
  if (dw || db) {
    // One task per channel over the whole batch: no reduction across threads; lane sums across
    // the images, added up once per channel.
    const int64_t scratch = kernels::f32_dwconv_wgrad_scratch_floats(g.oh, g.ow, k, s);
    parallel_for(pool, g.m, [&](int64_t m) {
      float* dwp = dw ? dw + m * k * k : nullptr;
      float* pad = dwp ? kernels::thread_scratch_f32(static_cast<size_t>(scratch + k * k * 8), 3) : nullptr;
      float* acc = dwp ? pad + scratch : nullptr;
      if (acc) std::fill(acc, acc + k * k * 8, 0.0f);
      double bsum = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        const float* dyp = dy + (n * g.m + m) * g.p();
        if (db)
          for (int64_t i = 0; i < g.p(); ++i) bsum += dyp[i];
        if (dwp)
          kernels::f32_dwconv_wgrad_plane(x + (n * g.c + m) * g.h * g.w, g.h, g.w, dyp, g.oh, g.ow, k, s, g.ph, g.pw, pad,
                                          acc, isa);
      }
      if (dwp) kernels::f32_dwconv_wgrad_finish(acc, k, dwp);
      if (db) db[m] = static_cast<float>(bsum);
    });
  }
}

void depthwise_forward(const ConvGeom& g, const float* x, const float* wt, const float* bias, float* y, float* stats,
                       ThreadPool* pool) {
  if (fast_depthwise(g)) return fast_depthwise_forward(g, x, wt, bias, y, stats, pool);
  parallel_for(pool, g.n * g.m, [&](int64_t nm) {
    const int64_t n = nm / g.m, m = nm % g.m, c = m / g.mg;
    const float* xp = x + (n * g.c + c) * g.h * g.w;
    const float* wp = wt + m * g.kh * g.kw;
    float* yp = y + (n * g.m + m) * g.p();
    const float b = bias ? bias[m] : 0.0f;
    for (int64_t i = 0; i < g.p(); ++i) yp[i] = b;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const float wv = wp[ki * g.kw + kj];
        const IndexRange cols = valid_range(kj * g.dw - g.pw, g.sw, g.w, g.ow);
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.sh - g.ph + ki * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          const float* in = xp + iy * g.w + kj * g.dw - g.pw;
          float* out = yp + oy * g.ow;
          for (int64_t ox = cols.begin; ox < cols.end; ++ox) out[ox] += wv * in[ox * g.sw];
        }
      }
    }
    plane_stats(g, y, n, m, 1, stats);
  });
}

void depthwise_backward(const ConvGeom& g, const float* x, const float* wt, const float* dy, float* dx, float* dw,
                        float* db, ThreadPool* pool) {
  if (fast_depthwise(g)) return fast_depthwise_backward(g, x, wt, dy, dx, dw, db, pool);
  if (dx) {
    std::memset(dx, 0, static_cast<size_t>(g.n * g.c * g.h * g.w) * sizeof(float));
    // One task per (image, input channel): it owns that dx plane, summing its mg output channels.
    parallel_for(pool, g.n * g.c, [&](int64_t nc) {
      const int64_t n = nc / g.c, c = nc % g.c;
      float* dxp = dx + nc * g.h * g.w;
      for (int64_t m = c * g.mg; m < (c + 1) * g.mg; ++m) {
        const float* wp = wt + m * g.kh * g.kw;
        const float* dyp = dy + (n * g.m + m) * g.p();
        for (int64_t ki = 0; ki < g.kh; ++ki) {
          for (int64_t kj = 0; kj < g.kw; ++kj) {
            const float wv = wp[ki * g.kw + kj];
            const IndexRange cols = valid_range(kj * g.dw - g.pw, g.sw, g.w, g.ow);
            for (int64_t oy = 0; oy < g.oh; ++oy) {
              const int64_t iy = oy * g.sh - g.ph + ki * g.dh;
              if (iy < 0 || iy >= g.h) continue;
              float* out = dxp + iy * g.w + kj * g.dw - g.pw;
              const float* src = dyp + oy * g.ow;
              for (int64_t ox = cols.begin; ox < cols.end; ++ox) out[ox * g.sw] += wv * src[ox];
            }
          }
        }
      }
    });
  }
  if (dw || db) {
    // One task per output channel: it sums over the whole batch, so no reduction is needed.
    parallel_for(pool, g.m, [&](int64_t m) {
      const int64_t c = m / g.mg;
      float* dwp = dw ? dw + m * g.kh * g.kw : nullptr;
      if (dwp) std::fill(dwp, dwp + g.kh * g.kw, 0.0f);
      double bsum = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        const float* xp = x + (n * g.c + c) * g.h * g.w;
        const float* dyp = dy + (n * g.m + m) * g.p();
        if (db)
          for (int64_t i = 0; i < g.p(); ++i) bsum += dyp[i];
        if (!dwp) continue;
        for (int64_t ki = 0; ki < g.kh; ++ki) {
          for (int64_t kj = 0; kj < g.kw; ++kj) {
            const IndexRange cols = valid_range(kj * g.dw - g.pw, g.sw, g.w, g.ow);
            float acc = 0;
            for (int64_t oy = 0; oy < g.oh; ++oy) {
              const int64_t iy = oy * g.sh - g.ph + ki * g.dh;
              if (iy < 0 || iy >= g.h) continue;
              const float* in = xp + iy * g.w + kj * g.dw - g.pw;
              const float* src = dyp + oy * g.ow;
              for (int64_t ox = cols.begin; ox < cols.end; ++ox) acc += src[ox] * in[ox * g.sw];
            }
            dwp[ki * g.kw + kj] += acc;
          }
        }
      }
      if (db) db[m] = static_cast<float>(bsum);
    });
  }
}

// ---- 3×3 stride-1 convolutions on Winograd ----

bool winograd_shape(const ConvGeom& g) {
  return g.groups == 1 && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.ph >= 0 &&
         g.pw >= 0 && g.ph <= 2 && g.pw <= 2 && g.oh + 2 - g.ph <= g.h + 2 && g.ow + 2 - g.pw <= g.w + 2;
}

// Tile for y = conv(x) (cin = C, cout = M), or nullopt for the GEMM path.
std::optional<kernels::WinogradTile> winograd_forward_tile(const ConvGeom& g) {
  if (!winograd_shape(g)) return std::nullopt;
  return kernels::choose_winograd_tile(g.c, g.m, g.oh, g.ow, kernels::best_isa());
}

// Tile for the weight gradient (kernels::f32_conv3x3s1_winograd_wgrad), or nullopt.
std::optional<kernels::WinogradTile> winograd_wgrad_tile(const ConvGeom& g) {
  if (!winograd_shape(g)) return std::nullopt;
  return kernels::choose_winograd_tile(g.c, g.m, g.oh, g.ow, kernels::best_isa());
}

// Tile for dx = conv(dy, W') (cin = M, cout = C, output H×W).
std::optional<kernels::WinogradTile> winograd_input_grad_tile(const ConvGeom& g) {
  if (!winograd_shape(g)) return std::nullopt;
  // The implied bottom/right padding of the gradient convolution, 2 − pad_end, must be >= 0.
  const int64_t pad_b = g.h - g.oh + 2 - (2 - g.ph), pad_r = g.w - g.ow + 2 - (2 - g.pw);
  if (pad_b < 0 || pad_r < 0) return std::nullopt;
  return kernels::choose_winograd_tile(g.m, g.c, g.h, g.w, kernels::best_isa());
}

void winograd_forward(const ConvGeom& g, kernels::WinogradTile tile, const float* x, const float* wt, const float* bias,
                      float* y, float* stats, ThreadPool* pool) {
  const kernels::WinogradConv3x3 conv(g.m, g.c, wt, tile, kernels::best_isa(), kernels::WinogradWeights::kAuto, pool);
  kernels::ConvEpilogue ep;
  ep.bias = bias;
  const int64_t in_stride = g.c * g.h * g.w, out_stride = g.m * g.p();
  for_image_slices(pool, g.n, conv.images_per_full_rows(g.oh, g.ow, 8), [&](int64_t i, int64_t cnt) {
    conv.run_batch(cnt, x + i * in_stride, in_stride, g.h, g.w, g.ph, g.pw, y + i * out_stride, out_stride, g.oh, g.ow,
                   ep, nullptr);
    for (int64_t n = i; n < i + cnt; ++n) plane_stats(g, y, n, 0, g.m, stats);
  });
}

void winograd_input_grad(const ConvGeom& g, kernels::WinogradTile tile, const float* wt, const float* dy, float* dx,
                         std::vector<float>& flipped, ThreadPool* pool) {
  flipped.resize(static_cast<size_t>(g.c * g.m * 9));
  for (int64_t m = 0; m < g.m; ++m)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t t = 0; t < 9; ++t) flipped[static_cast<size_t>((c * g.m + m) * 9 + t)] = wt[(m * g.c + c) * 9 + 8 - t];
  const kernels::WinogradConv3x3 conv(g.c, g.m, flipped.data(), tile, kernels::best_isa(),
                                      kernels::WinogradWeights::kAuto, pool);
  const int64_t in_stride = g.m * g.p(), out_stride = g.c * g.h * g.w;
  for_image_slices(pool, g.n, conv.images_per_full_rows(g.h, g.w, 8), [&](int64_t i, int64_t cnt) {
    conv.run_batch(cnt, dy + i * in_stride, in_stride, g.oh, g.ow, 2 - g.ph, 2 - g.pw, dx + i * out_stride, out_stride,
                   g.h, g.w, kernels::ConvEpilogue{}, nullptr);
  });
}

// Per-chunk scratch slots: col [K × B·P], its gradient, and an [M × B·P] buffer for the
// GEMM output (forward) or the gathered output gradient (backward).
enum Slot : size_t { kCol = 0, kDcol = 1, kRows = 2, kDwPart = 3, kSlotsPerChunk = 4 };
size_t slot_of(int64_t chunk, Slot s) { return static_cast<size_t>(chunk) * kSlotsPerChunk + s; }

// ---- weight gradient from channels-last panels ----
// dW[m][c][i][j] = Σ_n Σ_p dy[n][m][p] · x[n][c][y(p)·sh + i·dh − ph][x(p)·sw + j·dw − pw] is a
// GEMM over the depth (image, pixel): A = dy [M × depth], B = the im2col columns, taken in the
// order (i, j, c). With the input copied channels-last and zero-padded ([Hp][Wp][C]), a row of
// a B panel — nr consecutive columns at one pixel — is, when nr divides C, nr consecutive
// channels at one tap: one contiguous nr-float copy. Packing B then costs a load and a store per
// nr floats, where im2col gathers every float and the GEMM copies it again into its panels.
// Other channel counts (the 1-channel input layer) gather their nr columns from a table of
// offsets. Both operands go straight to the micro-kernels (f32_gemm_panels).

bool panel_wgrad_applies(const ConvGeom& g) { return g.groups == 1; }

void conv_weight_grad_panels(BackwardContext& c, const ConvGeom& g, const float* xp, const float* dyp, float* dw) {
  const kernels::Isa isa = kernels::best_isa();
  const kernels::F32GemmKernels family = kernels::best_f32_gemm_kernels();
  const kernels::GemmPanelShape ps = kernels::f32_gemm_panel_shape(isa, family);
  const int64_t nr = ps.nr, mr = ps.mr;
  const int64_t cp = g.c, taps = g.kh * g.kw, kcols = taps * cp, np = (kcols + nr - 1) / nr * nr;
  const bool contiguous = cp % nr == 0;  // each panel row is nr channels of one tap
  const int64_t mp = (g.m + mr - 1) / mr * mr;
  // The padded grid covers exactly the taps the outputs read.
  const int64_t hp = (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1, wp = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  const int64_t chunks = chunk_count(c.pool, g.n);
  // Images per GEMM: depth of a few hundred so the micro-kernel calls amortise.
  const int64_t block = std::clamp<int64_t>((256 + g.p() - 1) / g.p(), 1, (g.n + chunks - 1) / chunks);
  const int64_t depth_max = block * g.p();
  // Its own slots after the GEMM path's (a node may use both: dx on the GEMM, dW here).
  enum : size_t { kX = 0, kA = 1, kB = 2, kPart = 3, kHwc = 4, kSlots = 5 };
  auto slot = [&](int64_t t, size_t s) { return static_cast<size_t>(kSlotsPerChunk * chunks + t * kSlots) + s; };
  for (int64_t t = 0; t < chunks; ++t) {  // allocated on the calling thread, before the parallel region
    c.state.slot(slot(t, kX), DType::kF32, {block, hp, wp, cp});  // channels-last, zero-padded
    c.state.slot(slot(t, kA), DType::kF32, {mp, depth_max});
    c.state.slot(slot(t, kB), DType::kF32, {np, depth_max});
    c.state.slot(slot(t, kPart), DType::kF32, {g.m, np});
    c.state.slot(slot(t, kHwc), DType::kF32, {g.h * g.w, cp});  // one image, channels-last, unpadded
  }
  // Offset of column (tap, channel) from its pixel's window origin in the padded copy.
  std::vector<int64_t> offset(static_cast<size_t>(kcols));
  for (int64_t ki = 0; ki < g.kh; ++ki)
    for (int64_t kj = 0; kj < g.kw; ++kj)
      for (int64_t ch = 0; ch < cp; ++ch)
        offset[static_cast<size_t>((ki * g.kw + kj) * cp + ch)] = (ki * g.dh * wp + kj * g.dw) * cp + ch;
  parallel_for(c.pool, chunks, [&](int64_t t) {
    const auto [n0, n1] = chunk_range(t, chunks, g.n);
    float* xt = c.state.saved[slot(t, kX)].data<float>();
    float* a = c.state.saved[slot(t, kA)].data<float>();
    float* b = c.state.saved[slot(t, kB)].data<float>();
    float* part = c.state.saved[slot(t, kPart)].data<float>();
    float* hwc = c.state.saved[slot(t, kHwc)].data<float>();
    for (int64_t nb = n0; nb < n1; nb += block) {
      const int64_t cnt = std::min(block, n1 - nb), depth = cnt * g.p();
      // Channels-last, zero-padded copies of the block's images: each image transposed whole
      // ([C × H·W] → [H·W × C], one call: small rows would leave the 8×8 tiles mostly unused),
      // then its rows placed in the padded grid.
      std::memset(xt, 0, static_cast<size_t>(cnt * hp * wp * cp) * sizeof(float));
      const int64_t rows = std::min(g.h, hp - g.ph), cols = std::min(g.w, wp - g.pw);
      for (int64_t i = 0; i < cnt; ++i) {
        kernels::f32_transpose(g.c, g.h * g.w, xp + (nb + i) * g.c * g.h * g.w, g.h * g.w, hwc, cp, isa);
        float* xti = xt + i * hp * wp * cp;
        for (int64_t iy = 0; iy < rows && cols > 0; ++iy)
          std::memcpy(xti + ((iy + g.ph) * wp + g.pw) * cp, hwc + iy * g.w * cp, static_cast<size_t>(cols * cp) * sizeof(float));
      }
      // A panels: dy transposed in mr-row panels, a[panel][q][r] = dy[image][panel·mr + r][pixel].
      if (mp > g.m) std::memset(a, 0, static_cast<size_t>(mp * depth) * sizeof(float));
      for (int64_t i = 0; i < cnt; ++i)
        for (int64_t r0 = 0; r0 < g.m; r0 += mr)
          kernels::f32_transpose(std::min(mr, g.m - r0), g.p(), dyp + ((nb + i) * g.m + r0) * g.p(), g.p(),
                                 a + r0 * depth + i * g.p() * mr, mr, isa);
      // B panels: row q of panel j = columns [j·nr, j·nr + nr) of pixel q's window.
      for (int64_t j = 0; j < np / nr; ++j) {
        float* panel = b + j * nr * depth;
        const int64_t col0 = j * nr, valid = std::min(nr, kcols - col0);
        for (int64_t i = 0; i < cnt; ++i) {
          const float* xti = xt + i * hp * wp * cp;
          for (int64_t oy = 0; oy < g.oh; ++oy)
            for (int64_t ox = 0; ox < g.ow; ++ox, panel += nr) {
              const float* window = xti + (oy * g.sh * wp + ox * g.sw) * cp;
              if (contiguous && nr == 16) {  // a fixed size: inlined vector moves, not a libc call
                std::memcpy(panel, window + offset[static_cast<size_t>(col0)], 16 * sizeof(float));
              } else if (contiguous) {
                std::memcpy(panel, window + offset[static_cast<size_t>(col0)], static_cast<size_t>(nr) * sizeof(float));
              } else {
                for (int64_t cc = 0; cc < valid; ++cc) panel[cc] = window[offset[static_cast<size_t>(col0 + cc)]];
                for (int64_t cc = valid; cc < nr; ++cc) panel[cc] = 0.0f;
              }
            }
        }
      }
      kernels::f32_gemm_panels(g.m, np, depth, a, b, nr, nr * depth, part, np, /*accumulate=*/nb > n0, isa, family);
    }
  });
  // dw[m][c][i][j] = Σ_chunks part[m][(i·kw + j)·C + c]
  for (int64_t m = 0; m < g.m; ++m)
    for (int64_t ch = 0; ch < g.c; ++ch)
      for (int64_t tap = 0; tap < taps; ++tap) {
        float v = 0;
        for (int64_t t = 0; t < chunks; ++t) v += c.state.saved[slot(t, kPart)].data<float>()[m * np + tap * cp + ch];
        dw[(m * g.c + ch) * taps + tap] = v;
      }
}

// ---- general (grouped) convolution on the GEMM ----

const Tensor* optional_input(std::span<const Tensor* const> inputs, size_t i) {
  return i < inputs.size() && inputs[i] && inputs[i]->defined() ? inputs[i] : nullptr;
}

// Images per GEMM: small feature maps (7×7 = 49 columns) starve the micro-kernel, so several
// images' columns are laid side by side ([K × B·P]) until a GEMM has about 1024 columns.
// (One image when its feature map alone is wide enough: the forward GEMM then writes y directly.)
int64_t images_per_gemm(const ConvGeom& g, int64_t chunk_images) {
  if (g.p() >= 512) return 1;
  return std::clamp<int64_t>((1024 + g.p() - 1) / g.p(), 1, std::max<int64_t>(chunk_images, 1));
}

// A 1×1 stride-1 convolution without padding reads its input as the GEMM's B as it is.
bool im2col_is_identity(const ConvGeom& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.oh == g.h && g.ow == g.w;
}


// Groups 1, square kernel, equal strides, no dilation, and the inference rule says the direct
// kernel pays (few input channels: the first layer on images).
bool direct_forward_applies(const ConvGeom& g) {
  return g.groups == 1 && g.kh == g.kw && g.sh == g.sw && g.dh == 1 && g.dw == 1 &&
         kernels::f32_conv_direct_pays(g.c, g.m, g.kh, g.sh, g.oh, g.ow);
}

// One image per task (the kernel itself single-threaded), the output planes' statistics taken
// while they are in cache.
void direct_forward(const ConvGeom& g, const float* x, const float* wt, const float* bias, float* y, float* stats,
                    ThreadPool* pool) {
  const kernels::DirectConvParams p{g.c, g.m, g.h, g.w, g.oh, g.ow, g.kh, g.sh, g.ph, g.pw};
  const kernels::Isa isa = kernels::best_isa();
  for_image_slices(pool, g.n, 1, [&](int64_t n, int64_t) {
    kernels::f32_conv_direct(p, x + n * g.c * g.h * g.w, wt, bias, nullptr, kernels::Activation{}, y + n * g.m * g.p(),
                             nullptr, isa);
    plane_stats(g, y, n, 0, g.m, stats);
  });
}

void conv_forward(ForwardContext& c) {
  const Tensor& x = *c.inputs[0];
  const Tensor& wt = *c.inputs[1];
  const Tensor* b = optional_input(c.inputs, 2);
  Tensor& y = *c.outputs[0];
  const ConvGeom g = conv_geometry(c.node, x, wt);
  const float* xp = x.data<float>();
  const float* wp = wt.data<float>();
  const float* bp = b ? b->data<float>() : nullptr;
  float* yp = y.data<float>();
  float* stats = c.output_stats;
  if (g.depthwise()) return depthwise_forward(g, xp, wp, bp, yp, stats, c.pool);
  if (const auto tile = winograd_forward_tile(g)) return winograd_forward(g, *tile, xp, wp, bp, yp, stats, c.pool);
  if (direct_forward_applies(g)) return direct_forward(g, xp, wp, bp, yp, stats, c.pool);
  const int64_t chunks = chunk_count(c.pool, g.n);
  const int64_t batch = images_per_gemm(g, (g.n + chunks - 1) / chunks);
  for (int64_t t = 0; t < chunks; ++t) {
    c.state.slot(slot_of(t, kCol), DType::kF32, {g.k(), batch * g.p()});
    c.state.slot(slot_of(t, kRows), DType::kF32, {g.mg, batch * g.p()});
  }
  // The weights change every step, but within a step all images share them: pack once.
  std::vector<kernels::PackedA> packed;
  for (int64_t grp = 0; grp < g.groups; ++grp)
    packed.emplace_back(g.mg, g.k(), MatrixRef{wp + grp * g.mg * g.k(), g.k(), 1}, kernels::best_isa());
  parallel_for(c.pool, chunks, [&](int64_t t) {
    const auto [n0, n1] = chunk_range(t, chunks, g.n);
    float* col = c.state.saved[slot_of(t, kCol)].data<float>();
    float* rows = c.state.saved[slot_of(t, kRows)].data<float>();
    for (int64_t nb = n0; nb < n1; nb += batch) {
      const int64_t cnt = std::min(batch, n1 - nb), ld = cnt * g.p();
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        GemmEpilogue ep;
        ep.bias = bp ? bp + grp * g.mg : nullptr;
        const float* xg = xp + (nb * g.c + grp * g.cg) * g.h * g.w;
        if (cnt == 1) {  // straight into y, from x itself when im2col would only copy it
          if (!im2col_is_identity(g)) im2col(g, xg, col, ld);
          kernels::f32_gemm(packed[static_cast<size_t>(grp)], ld, MatrixRef{im2col_is_identity(g) ? xg : col, ld, 1},
                            yp + (nb * g.m + grp * g.mg) * g.p(), g.p(), ep, nullptr);
          plane_stats(g, yp, nb, grp * g.mg, g.mg, stats);
          continue;
        }
        for (int64_t i = 0; i < cnt; ++i) im2col(g, xp + ((nb + i) * g.c + grp * g.cg) * g.h * g.w, col + i * g.p(), ld);
        kernels::f32_gemm(packed[static_cast<size_t>(grp)], ld, MatrixRef{col, ld, 1}, rows, ld, ep, nullptr);
        for (int64_t i = 0; i < cnt; ++i) {
          for (int64_t m = 0; m < g.mg; ++m)
            std::memcpy(yp + ((nb + i) * g.m + grp * g.mg + m) * g.p(), rows + m * ld + i * g.p(),
                        static_cast<size_t>(g.p()) * sizeof(float));
          plane_stats(g, yp, nb + i, grp * g.mg, g.mg, stats);
        }
      }
    }
  });
}

void conv_backward_gemm(BackwardContext& c, const ConvGeom& g, const float* xp, const float* wp, const float* dyp,
                        float* dx, float* dw);

// 1×1 stride-1 convolutions without padding: dx of each image and group is Wᵀ·dy, one GEMM
// straight into dx (col2im would only copy it).
void pointwise_input_grad(const ConvGeom& g, const float* wp, const float* dyp, float* dx, ThreadPool* pool) {
  std::vector<kernels::PackedA> packed_wt;  // Wᵀ per group [Cg × Mg], shared by every image
  for (int64_t grp = 0; grp < g.groups; ++grp)
    packed_wt.emplace_back(g.cg, g.mg, MatrixRef{wp + grp * g.mg * g.cg, 1, g.cg}, kernels::best_isa());
  for_image_slices(pool, g.n, 1, [&](int64_t n, int64_t) {
    for (int64_t grp = 0; grp < g.groups; ++grp)
      kernels::f32_gemm(packed_wt[static_cast<size_t>(grp)], g.p(), MatrixRef{dyp + (n * g.m + grp * g.mg) * g.p(), g.p(), 1},
                        dx + (n * g.c + grp * g.cg) * g.p(), g.p(), GemmEpilogue{}, nullptr);
  });
}

void conv_backward(BackwardContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& wt = c.input(1);
  const ConvGeom g = conv_geometry(c.node, x, wt);
  const float* xp = x.data<float>();
  const float* wp = wt.data<float>();
  const float* dyp = c.grad_output(0).data<float>();
  float* dx = c.wants(0) ? c.grad_input(0).data<float>() : nullptr;
  float* dw = c.wants(1) ? c.grad_input(1).data<float>() : nullptr;
  float* db = c.wants(2) ? c.grad_input(2).data<float>() : nullptr;
  if (g.depthwise()) return depthwise_backward(g, xp, wp, dyp, dx, dw, db, c.pool);
  if (dx) {
    if (const auto tile = winograd_input_grad_tile(g)) {
      std::vector<float> flipped;
      winograd_input_grad(g, *tile, wp, dyp, dx, flipped, c.pool);
      dx = nullptr;  // done: the GEMM loop below computes dW only
    } else if (im2col_is_identity(g)) {
      pointwise_input_grad(g, wp, dyp, dx, c.pool);
      dx = nullptr;
    }
  }
  if (dw) {
    if (const auto tile = winograd_wgrad_tile(g)) {
      kernels::f32_conv3x3s1_winograd_wgrad(*tile, g.n, g.c, g.m, xp, g.h, g.w, g.ph, g.pw, dyp, g.oh, g.ow, dw, c.pool,
                                            kernels::best_isa());
      dw = nullptr;
    }
  }
  if (dw && panel_wgrad_applies(g)) {
    conv_weight_grad_panels(c, g, xp, dyp, dw);
    dw = nullptr;
  }
  if (dx || dw) conv_backward_gemm(c, g, xp, wp, dyp, dx, dw);
  if (db) {
    for (int64_t m = 0; m < g.m; ++m) {
      double s = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        const float* row = dyp + (n * g.m + m) * g.p();
        for (int64_t i = 0; i < g.p(); ++i) s += row[i];
      }
      db[m] = static_cast<float>(s);
    }
  }
}

// dx (col2im) and dW on the GEMM, image chunks in parallel.
void conv_backward_gemm(BackwardContext& c, const ConvGeom& g, const float* xp, const float* wp, const float* dyp,
                        float* dx, float* dw) {
  const Tensor& x = c.input(0);
  const Tensor& wt = c.input(1);

  const int64_t chunks = chunk_count(c.pool, g.n);
  const int64_t batch = images_per_gemm(g, (g.n + chunks - 1) / chunks);
  // Allocated here, on the calling thread, before the parallel region.
  for (int64_t t = 0; t < chunks; ++t) {
    c.state.slot(slot_of(t, kCol), DType::kF32, {g.k(), batch * g.p()});
    if (dx) c.state.slot(slot_of(t, kDcol), DType::kF32, {g.k(), batch * g.p()});
    c.state.slot(slot_of(t, kRows), DType::kF32, {g.mg, batch * g.p()});
    if (dw) c.state.slot(slot_of(t, kDwPart), DType::kF32, {g.m, g.k()});
  }
  if (dx) std::memset(dx, 0, x.nbytes());
  std::vector<kernels::PackedA> packed_wt;  // Wᵀ per group, shared by every image
  if (dx)
    for (int64_t grp = 0; grp < g.groups; ++grp)
      packed_wt.emplace_back(g.k(), g.mg, MatrixRef{wp + grp * g.mg * g.k(), 1, g.k()}, kernels::best_isa());
  parallel_for(c.pool, chunks, [&](int64_t t) {
    const auto [n0, n1] = chunk_range(t, chunks, g.n);
    float* col = c.state.saved[slot_of(t, kCol)].data<float>();
    float* dcol = dx ? c.state.saved[slot_of(t, kDcol)].data<float>() : nullptr;
    float* rows = c.state.saved[slot_of(t, kRows)].data<float>();
    float* dw_part = dw ? c.state.saved[slot_of(t, kDwPart)].data<float>() : nullptr;
    for (int64_t nb = n0; nb < n1; nb += batch) {
      const int64_t cnt = std::min(batch, n1 - nb), ld = cnt * g.p();
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        // dy of these images and this group side by side: [Mg × cnt·P].
        for (int64_t i = 0; i < cnt; ++i)
          for (int64_t m = 0; m < g.mg; ++m)
            std::memcpy(rows + m * ld + i * g.p(), dyp + ((nb + i) * g.m + grp * g.mg + m) * g.p(),
                        static_cast<size_t>(g.p()) * sizeof(float));
        if (dw_part) {
          for (int64_t i = 0; i < cnt; ++i)
            im2col(g, xp + ((nb + i) * g.c + grp * g.cg) * g.h * g.w, col + i * g.p(), ld);
          float* dwg = dw_part + grp * g.mg * g.k();
          GemmEpilogue ep;
          if (nb > n0) {  // accumulate over this chunk's images: dW_part = dy·colᵀ + dW_part
            ep.residual = dwg;
            ep.ldr = g.k();
          }
          kernels::f32_gemm(g.mg, g.k(), ld, MatrixRef{rows, ld, 1}, MatrixRef{col, 1, ld}, dwg, g.k(), ep, nullptr);
        }
        if (dx) {
          kernels::f32_gemm(packed_wt[static_cast<size_t>(grp)], ld, MatrixRef{rows, ld, 1}, dcol, ld, GemmEpilogue{},
                            nullptr);
          for (int64_t i = 0; i < cnt; ++i)
            col2im_add(g, dcol + i * g.p(), dx + ((nb + i) * g.c + grp * g.cg) * g.h * g.w, ld);
        }
      }
    }
  });
  if (dw) {
    std::memcpy(dw, c.state.saved[slot_of(0, kDwPart)].data<float>(), wt.nbytes());
    for (int64_t t = 1; t < chunks; ++t) {
      const float* part = c.state.saved[slot_of(t, kDwPart)].data<float>();
      for (int64_t i = 0; i < wt.numel(); ++i) dw[i] += part[i];
    }
  }
}

}  // namespace

void register_conv_grads(GradRegistry& r) {
  GradOp conv{"Conv", {0, 1, 2}, conv_forward, conv_backward};
  conv.emits_output_stats = true;
  r.add(std::move(conv));
}

}  // namespace xnn::train
