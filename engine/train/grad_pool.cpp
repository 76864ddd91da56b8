// Backward of 2-D pooling. MaxPool routes each output gradient to the first maximum of its
// window (PyTorch's tie rule); AveragePool spreads it over the window with the forward's divisor
// (valid taps, or taps inside input + padding with count_include_pad); the global pools spread it
// over the whole plane. Planes (image, channel) are independent, so they run in parallel.
#include <algorithm>
#include <cstring>

#include "engine/ops/nn_common.h"
#include "engine/train/autograd.h"

namespace xnn::train {
namespace {

struct PoolGeom {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, ph_end, pw_end;
};

PoolGeom pool_geometry(const Node& node, const Tensor& x) {
  if (x.rank() != 4 || x.dtype() != DType::kF32) {
    throw UnsupportedError("training: " + node.describe() + ": only 2-D f32 pooling (N×C×H×W) can be trained");
  }
  const std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  const WindowGeometry g = window_geometry(node, {x.dim(2), x.dim(3)}, kernel, node.attr_int("ceil_mode", 0) != 0);
  return PoolGeom{x.dim(0) * x.dim(1), x.dim(2), x.dim(3), g.out[0], g.out[1], g.kernel[0], g.kernel[1],
                  g.strides[0], g.strides[1], g.pads_begin[0], g.pads_begin[1], g.dilations[0], g.dilations[1],
                  g.pads_end[0], g.pads_end[1]};
}

void maxpool_backward(BackwardContext& c) {
  if (!c.wants(0)) return;
  const PoolGeom g = pool_geometry(c.node, c.input(0));
  const float* x = c.input(0).data<float>();
  const float* dy = c.grad_output(0).data<float>();
  float* dx = c.grad_input(0).data<float>();
  parallel_for(c.pool, g.planes, [&](int64_t pl) {
    const float* xp = x + pl * g.h * g.w;
    const float* gp = dy + pl * g.oh * g.ow;
    float* dp = dx + pl * g.h * g.w;
    std::fill(dp, dp + g.h * g.w, 0.0f);
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const IndexRange ry = valid_range(oy * g.sh - g.ph, g.dh, g.h, g.kh);
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const IndexRange rx = valid_range(ox * g.sw - g.pw, g.dw, g.w, g.kw);
        int64_t best = -1;
        float bv = 0;
        for (int64_t ky = ry.begin; ky < ry.end; ++ky) {
          const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
          for (int64_t kx = rx.begin; kx < rx.end; ++kx) {
            const int64_t i = iy * g.w + ox * g.sw - g.pw + kx * g.dw;
            if (best < 0 || xp[i] > bv) best = i, bv = xp[i];
          }
        }
        if (best >= 0) dp[best] += gp[oy * g.ow + ox];
      }
    }
  });
}

void avgpool_backward(BackwardContext& c) {
  if (!c.wants(0)) return;
  const PoolGeom g = pool_geometry(c.node, c.input(0));
  const bool include_pad = c.node.attr_int("count_include_pad", 0) != 0;
  const float* dy = c.grad_output(0).data<float>();
  float* dx = c.grad_input(0).data<float>();
  parallel_for(c.pool, g.planes, [&](int64_t pl) {
    const float* gp = dy + pl * g.oh * g.ow;
    float* dp = dx + pl * g.h * g.w;
    std::fill(dp, dp + g.h * g.w, 0.0f);
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const IndexRange ry = valid_range(oy * g.sh - g.ph, g.dh, g.h, g.kh);
      const int64_t pad_y = valid_range(oy * g.sh, g.dh, g.h + g.ph + g.ph_end, g.kh).size();
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const IndexRange rx = valid_range(ox * g.sw - g.pw, g.dw, g.w, g.kw);
        const int64_t pad_x = valid_range(ox * g.sw, g.dw, g.w + g.pw + g.pw_end, g.kw).size();
        const int64_t count = include_pad ? pad_y * pad_x : ry.size() * rx.size();
        if (count <= 0) continue;
        const float v = gp[oy * g.ow + ox] / static_cast<float>(count);
        for (int64_t ky = ry.begin; ky < ry.end; ++ky) {
          float* row = dp + (oy * g.sh - g.ph + ky * g.dh) * g.w + ox * g.sw - g.pw;
          for (int64_t kx = rx.begin; kx < rx.end; ++kx) row[kx * g.dw] += v;
        }
      }
    }
  });
}

void global_avgpool_backward(BackwardContext& c) {
  if (!c.wants(0)) return;
  const Tensor& x = c.input(0);
  const int64_t planes = x.dim(0) * x.dim(1), inner = x.numel() / std::max<int64_t>(planes, 1);
  const float* dy = c.grad_output(0).data<float>();
  float* dx = c.grad_input(0).data<float>();
  const float inv = 1.0f / static_cast<float>(inner);
  for (int64_t p = 0; p < planes; ++p) std::fill(dx + p * inner, dx + (p + 1) * inner, dy[p] * inv);
}

void global_maxpool_backward(BackwardContext& c) {
  if (!c.wants(0)) return;
  const Tensor& x = c.input(0);
  const int64_t planes = x.dim(0) * x.dim(1), inner = x.numel() / std::max<int64_t>(planes, 1);
  const float* xp = x.data<float>();
  const float* dy = c.grad_output(0).data<float>();
  float* dx = c.grad_input(0).data<float>();
  std::memset(dx, 0, x.nbytes());
  for (int64_t p = 0; p < planes; ++p) {
    const float* row = xp + p * inner;
    dx[p * inner + (std::max_element(row, row + inner) - row)] = dy[p];
  }
}

}  // namespace

void register_pool_grads(GradRegistry& r) {
  r.add({"MaxPool", {0}, {}, maxpool_backward});
  r.add({"AveragePool", {0}, {}, avgpool_backward});
  r.add({"GlobalAveragePool", {0}, {}, global_avgpool_backward});
  r.add({"GlobalMaxPool", {0}, {}, global_maxpool_backward});
}

}  // namespace xnn::train
