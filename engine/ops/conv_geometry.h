// Convolution geometry shared by the float convolution (conv.cpp) and the integer ones
// (QLinearConv / ConvInteger in quantized_conv.cpp): parameter validation, output shape, and the
// im2col unfolding that lowers a convolution to a GEMM.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "engine/ops/nn_common.h"

namespace xnn {

// The kernel's spatial shape: W.shape[2:], which the optional kernel_shape attribute must match.
template <typename Ctx>
std::vector<int64_t> kernel_from_weights(const Ctx& ctx, const Shape& w) {
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  if (ctx.node().has_attr("kernel_shape") && ctx.node().attr_ints("kernel_shape") != kernel) {
    ctx.fail("kernel_shape " + shape_str(ctx.node().attr_ints("kernel_shape")) + " does not match weights " +
             shape_str(w));
  }
  return kernel;
}

// ---- Conv geometry ---------------------------------------------------------------------------

struct ConvParams {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  Spatial3 geo;
  Shape out_shape;
};

// Validates X [N, C, spatial...] and W [M, C/group, kernel...] and computes the geometry.
template <typename Ctx>
ConvParams conv_params(const Ctx& ctx, const Shape& x, const Shape& w) {
  spatial_rank_or_fail(ctx, x, "Conv");
  if (w.size() != x.size()) {
    ctx.fail("weights have shape " + shape_str(w) + ", expected rank " + std::to_string(x.size()) +
             " (M, C/group, kernel...) to match input " + shape_str(x));
  }
  ConvParams p;
  p.batch = x[0];
  p.in_channels = x[1];
  p.out_channels = w[0];
  p.group = ctx.node().attr_int("group", 1);
  if (p.group <= 0) ctx.fail("group must be positive, got " + std::to_string(p.group));
  if (w[1] * p.group != p.in_channels) {
    ctx.fail("input has " + std::to_string(p.in_channels) + " channels, but weights " + shape_str(w) + " with group " +
             std::to_string(p.group) + " expect " + std::to_string(w[1] * p.group));
  }
  if (p.out_channels % p.group != 0) {
    ctx.fail("output channels " + std::to_string(p.out_channels) + " are not divisible by group " +
             std::to_string(p.group));
  }
  const Shape in_spatial(x.begin() + 2, x.end());
  const WindowGeometry g = window_geometry(ctx.node(), in_spatial, kernel_from_weights(ctx, w), false);
  p.geo = to_spatial3(g, in_spatial);
  p.out_shape = {p.batch, p.out_channels};
  p.out_shape.insert(p.out_shape.end(), g.out.begin(), g.out.end());
  return p;
}

// Unfolds one group of one image, X [C/g, in...], into col [C/g * kernel_elems, out_elems]:
// row (c, kd, kh, kw) holds, for every output position, the input value under that kernel tap
// (zero where the tap falls into padding).
template <typename T>
void im2col(const Spatial3& s, int64_t channels, const T* x, T* col) {
  const int64_t in_size = s.in_size();
  T* dst = col;
  for (int64_t c = 0; c < channels; ++c) {
    const T* xc = x + c * in_size;
    for (int64_t kd = 0; kd < s.kernel[0]; ++kd) {
      const int64_t base_d = kd * s.dilation[0] - s.pad_begin[0];
      const IndexRange rd = valid_range(base_d, s.stride[0], s.in[0], s.out[0]);
      for (int64_t kh = 0; kh < s.kernel[1]; ++kh) {
        const int64_t base_h = kh * s.dilation[1] - s.pad_begin[1];
        const IndexRange rh = valid_range(base_h, s.stride[1], s.in[1], s.out[1]);
        for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
          const int64_t base_w = kw * s.dilation[2] - s.pad_begin[2];
          const IndexRange rw = valid_range(base_w, s.stride[2], s.in[2], s.out[2]);
          for (int64_t od = 0; od < s.out[0]; ++od) {
            if (od < rd.begin || od >= rd.end) {
              std::fill(dst, dst + s.out[1] * s.out[2], T(0));
              dst += s.out[1] * s.out[2];
              continue;
            }
            const int64_t id = base_d + od * s.stride[0];
            for (int64_t oh = 0; oh < s.out[1]; ++oh, dst += s.out[2]) {
              if (oh < rh.begin || oh >= rh.end) {
                std::fill(dst, dst + s.out[2], T(0));
                continue;
              }
              const int64_t ih = base_h + oh * s.stride[1];
              const T* src = xc + (id * s.in[1] + ih) * s.in[2];
              std::fill(dst, dst + rw.begin, T(0));
              if (s.stride[2] == 1) {
                const int64_t first = base_w + rw.begin;  // >= 0 by construction of rw
                std::copy(src + first, src + first + rw.size(), dst + rw.begin);
              } else {
                for (int64_t ow = rw.begin; ow < rw.end; ++ow) dst[ow] = src[base_w + ow * s.stride[2]];
              }
              std::fill(dst + rw.end, dst + s.out[2], T(0));
            }
          }
        }
      }
    }
  }
}

}  // namespace xnn
