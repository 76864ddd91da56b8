#include "engine/backends/cpu/const_weight_conv.h"

namespace xnn {

std::optional<ConstWeightConv> match_const_weight_conv(const CpuKernelPrepareContext& ctx, int64_t kernel_h,
                                                       int64_t kernel_w) {
  const Node& node = ctx.node;
  if (ctx.inputs.size() < 2 || ctx.outputs.empty()) return std::nullopt;
  const TensorInfo& x = ctx.inputs[0];
  const TensorInfo& w = ctx.inputs[1];
  if (x.dtype != DType::kF32 || w.dtype != DType::kF32 || !w.value || x.shape.size() != 4 || w.shape.size() != 4) {
    return std::nullopt;
  }
  ConstWeightConv c;
  c.in = x.shape;
  c.out = ctx.outputs[0].shape;
  if (c.out.size() != 4 || w.shape[2] != kernel_h || w.shape[3] != kernel_w || node.attr_int("group", 1) != 1 ||
      w.shape[1] != x.shape[1]) {
    return std::nullopt;
  }
  c.geo = window_geometry(node, {x.shape[2], x.shape[3]}, {kernel_h, kernel_w}, false);
  c.cout = w.shape[0], c.cin = w.shape[1];
  if (c.out[0] != x.shape[0] || c.out[1] != c.cout || c.out[2] != c.geo.out[0] || c.out[3] != c.geo.out[1] ||
      c.out[2] <= 0 || c.out[3] <= 0) {
    return std::nullopt;
  }
  c.weights = w.value->data<float>();
  if (ctx.inputs.size() > 2 && ctx.inputs[2].dtype != DType::kUnknown) {
    const TensorInfo& b = ctx.inputs[2];
    if (!b.value || b.dtype != DType::kF32 || shape_numel(b.shape) != c.cout) return std::nullopt;
    const float* v = b.value->data<float>();
    c.bias.assign(v, v + c.cout);
  }
  c.has_residual = ctx.inputs.size() > 3 && ctx.inputs[3].dtype != DType::kUnknown;
  if (c.has_residual && (ctx.inputs[3].dtype != DType::kF32 || ctx.inputs[3].shape != c.out)) return std::nullopt;
  return c;
}

}  // namespace xnn
