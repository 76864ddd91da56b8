// Backward of 2-D pooling. MaxPool routes each output gradient to the first maximum of its
// window (PyTorch's tie rule); AveragePool spreads it over the window with the forward's divisor
// (valid taps, or taps inside input + padding with count_include_pad); the global pools spread it
// over the whole plane. Planes (image, channel) are independent, so they run in parallel. The
// training forward of a 2×2 stride-2 max pool records each window's winning tap (one byte per
// output), so its backward scatters dy without reading x again.
#include <algorithm>
#include <cstring>

#include "engine/kernels/pooling.h"
#include "engine/kernels/training_kernels.h"
#include "engine/ops/nn_common.h"
#include "engine/runtime/executor.h"
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

// Forward with the CPU backend's pooling kernels (what inference runs) where they apply: 2-D,
// no dilation, the single-output form; anything else runs the reference kernel.
bool fast_pool_applies(const ForwardContext& c) {
  const Tensor& x = *c.inputs[0];
  if (x.rank() != 4 || x.dtype() != DType::kF32 || c.outputs.size() != 1) return false;
  for (int64_t d : c.node.attr_ints("dilations", {1, 1}))
    if (d != 1) return false;
  return true;
}

kernels::Pool2dParams pool2d_params(const PoolGeom& g) {
  kernels::Pool2dParams p;
  p.planes = g.planes;
  p.in_h = g.h, p.in_w = g.w, p.out_h = g.oh, p.out_w = g.ow;
  p.kernel_h = g.kh, p.kernel_w = g.kw, p.stride_h = g.sh, p.stride_w = g.sw;
  p.pad_t = g.ph, p.pad_l = g.pw, p.pad_b = g.ph_end, p.pad_r = g.pw_end;
  return p;
}

void run_reference(ForwardContext& c) {
  KernelContext k(c.node, c.inputs, c.outputs, c.pool);
  schema_for(OpRegistry::builtin(), c.node).reference(k);
}

// The common 2×2 stride-2 pool whose windows tile the input (no padding, dilation or ceil-mode
// window past the end; an odd last row or column is simply not covered).
bool tiled_2x2(const PoolGeom& g) {
  return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 && g.dh == 1 && g.dw == 1 &&
         2 * g.oh <= g.h && 2 * g.ow <= g.w;
}

// Planes per task for the row kernels below (whole planes; a few dozen tasks per batch).
int64_t planes_per_task(const PoolGeom& g) { return std::max<int64_t>(1, g.planes / 64); }

void maxpool_forward(ForwardContext& c) {
  if (!fast_pool_applies(c)) return run_reference(c);
  const PoolGeom g = pool_geometry(c.node, *c.inputs[0]);
  if (c.training && tiled_2x2(g)) {
    // Training: the winning tap of every window is recorded (one byte per output) so the
    // backward pass scatters dy without reading x again.
    const float* x = c.inputs[0]->data<float>();
    float* y = c.outputs[0]->data<float>();
    uint8_t* taps = c.state.slot(0, DType::kU8, {g.planes, g.oh, g.ow}).data<uint8_t>();
    const kernels::Isa isa = kernels::best_isa();
    const int64_t per = planes_per_task(g);
    parallel_for(c.pool, (g.planes + per - 1) / per, [&](int64_t t) {
      for (int64_t pl = t * per; pl < std::min(g.planes, (t + 1) * per); ++pl)
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const float* r0 = x + (pl * g.h + 2 * oy) * g.w;
          const int64_t o = (pl * g.oh + oy) * g.ow;
          kernels::f32_maxpool2x2_argmax_row(r0, r0 + g.w, g.ow, y + o, taps + o, isa);
        }
    });
    return;
  }
  kernels::f32_maxpool2d(pool2d_params(g), c.inputs[0]->data<float>(), c.outputs[0]->data<float>(), c.pool,
                         kernels::best_isa());
}

void avgpool_forward(ForwardContext& c) {
  if (!fast_pool_applies(c)) return run_reference(c);
  const PoolGeom g = pool_geometry(c.node, *c.inputs[0]);
  kernels::f32_avgpool2d(pool2d_params(g), c.node.attr_int("count_include_pad", 0) != 0, c.inputs[0]->data<float>(),
                         c.outputs[0]->data<float>(), c.pool, kernels::best_isa());
}

void maxpool_backward(BackwardContext& c) {
  if (!c.wants(0)) return;
  const PoolGeom g = pool_geometry(c.node, c.input(0));
  const float* x = c.input(0).data<float>();
  const float* dy = c.grad_output(0).data<float>();
  float* dx = c.grad_input(0).data<float>();
  // Taps recorded by the training forward (maxpool_forward) for this very shape.
  if (tiled_2x2(g) && !c.state.saved.empty() && c.state.saved[0].dtype() == DType::kU8 &&
      c.state.saved[0].shape() == Shape{g.planes, g.oh, g.ow}) {
    const uint8_t* taps = c.state.saved[0].data<uint8_t>();
    const kernels::Isa isa = kernels::best_isa();
    const int64_t per = planes_per_task(g);
    parallel_for(c.pool, (g.planes + per - 1) / per, [&](int64_t t) {
      for (int64_t pl = t * per; pl < std::min(g.planes, (t + 1) * per); ++pl) {
        float* dp = dx + pl * g.h * g.w;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          float* d0 = dp + 2 * oy * g.w;
          const int64_t o = (pl * g.oh + oy) * g.ow;
          kernels::f32_maxpool2x2_grad_row(dy + o, taps + o, g.ow, d0, d0 + g.w, isa);
          if (g.w > 2 * g.ow) d0[g.w - 1] = d0[2 * g.w - 1] = 0.0f;  // odd width: the last column
        }
        if (g.h > 2 * g.oh) std::fill(dp + (g.h - 1) * g.w, dp + g.h * g.w, 0.0f);  // odd height: the last row
      }
    });
    return;
  }
  // Anything else (ceil mode, padding, other windows; or no taps recorded): the general loop.
  // Window tap ranges per output row and column, shared by every plane.
  std::vector<IndexRange> rows(static_cast<size_t>(g.oh)), cols(static_cast<size_t>(g.ow));
  for (int64_t oy = 0; oy < g.oh; ++oy) rows[static_cast<size_t>(oy)] = valid_range(oy * g.sh - g.ph, g.dh, g.h, g.kh);
  for (int64_t ox = 0; ox < g.ow; ++ox) cols[static_cast<size_t>(ox)] = valid_range(ox * g.sw - g.pw, g.dw, g.w, g.kw);
  parallel_for(c.pool, g.planes, [&](int64_t pl) {
    const float* xp = x + pl * g.h * g.w;
    const float* gp = dy + pl * g.oh * g.ow;
    float* dp = dx + pl * g.h * g.w;
    std::fill(dp, dp + g.h * g.w, 0.0f);
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const IndexRange ry = rows[static_cast<size_t>(oy)];
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const IndexRange rx = cols[static_cast<size_t>(ox)];
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
  r.add({"MaxPool", {0}, maxpool_forward, maxpool_backward});
  r.add({"AveragePool", {0}, avgpool_forward, avgpool_backward});
  r.add({"GlobalAveragePool", {0}, {}, global_avgpool_backward});
  r.add({"GlobalMaxPool", {0}, {}, global_maxpool_backward});
}

}  // namespace xnn::train
