// CPU kernels for MaxPool, AveragePool and GlobalAveragePool on fp32 NCHW inputs
// (engine/kernels/pooling.h). Geometry comes from window_geometry, the function the reference
// kernels use, so pads, auto_pad and ceil_mode output sizes agree by construction.
#include "engine/backends/cpu/pool_cpu.h"

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/kernels/pooling.h"
#include "engine/ops/op_helpers.h"

namespace xnn {
namespace {

using kernels::Pool2dParams;

// The 2-D pooling parameters of a MaxPool/AveragePool node on a 4-D fp32 input, or false when
// the node is outside what the kernels cover (other ranks, dtypes, dilation).
bool pool2d_params(const CpuKernelPrepareContext& ctx, Pool2dParams* out) {
  if (ctx.inputs.empty() || ctx.outputs.empty()) return false;
  const TensorInfo& x = ctx.inputs[0];
  if (x.dtype != DType::kF32 || x.shape.size() != 4 || ctx.outputs[0].dtype != DType::kF32) return false;
  const Node& node = ctx.node;
  const std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  if (kernel.size() != 2) return false;
  const Shape in_spatial(x.shape.begin() + 2, x.shape.end());
  const WindowGeometry g = window_geometry(node, in_spatial, kernel, node.attr_int("ceil_mode", 0) != 0);
  if (g.dilations[0] != 1 || g.dilations[1] != 1) return false;
  const Shape expected{x.shape[0], x.shape[1], g.out[0], g.out[1]};
  if (ctx.outputs[0].shape != expected) return false;
  Pool2dParams p;
  p.planes = x.shape[0] * x.shape[1];
  p.in_h = x.shape[2], p.in_w = x.shape[3];
  p.out_h = g.out[0], p.out_w = g.out[1];
  p.kernel_h = kernel[0], p.kernel_w = kernel[1];
  p.stride_h = g.strides[0], p.stride_w = g.strides[1];
  p.pad_t = g.pads_begin[0], p.pad_l = g.pads_begin[1];
  p.pad_b = g.pads_end[0], p.pad_r = g.pads_end[1];
  *out = p;
  return true;
}

class AvgPool2dKernel : public CpuKernel {
 public:
  AvgPool2dKernel(const Pool2dParams& p, bool count_include_pad, kernels::Isa isa)
      : p_(p), count_include_pad_(count_include_pad), isa_(isa) {}
  std::string name() const override { return kernels::avgpool2d_kernel_name(p_, isa_); }
  void run(KernelContext& ctx) override {
    kernels::f32_avgpool2d(p_, count_include_pad_, ctx.input(0).data<float>(), ctx.output(0).data<float>(),
                           ctx.pool(), isa_);
  }

 private:
  Pool2dParams p_;
  bool count_include_pad_;
  kernels::Isa isa_;
};

class GlobalAvgPoolKernel : public CpuKernel {
 public:
  GlobalAvgPoolKernel(int64_t planes, int64_t plane_size, kernels::Isa isa)
      : planes_(planes), plane_size_(plane_size), isa_(isa) {}
  std::string name() const override { return kernels::global_avgpool_kernel_name(isa_); }
  void run(KernelContext& ctx) override {
    kernels::f32_global_avgpool(planes_, plane_size_, ctx.input(0).data<float>(), ctx.output(0).data<float>(),
                                ctx.pool(), isa_);
  }

 private:
  int64_t planes_, plane_size_;
  kernels::Isa isa_;
};

std::unique_ptr<CpuKernel> make_max_pool(const CpuKernelPrepareContext& ctx) {
  // The kernels do not produce Indices: leave a node that asks for them to the reference.
  if (ctx.node.outputs.size() > 1 && ctx.node.outputs[1] >= 0) return nullptr;
  Pool2dParams p;
  if (!pool2d_params(ctx, &p)) return nullptr;
  return std::make_unique<MaxPool2dKernel>(p, ctx.isa);
}

std::unique_ptr<CpuKernel> make_average_pool(const CpuKernelPrepareContext& ctx) {
  Pool2dParams p;
  if (!pool2d_params(ctx, &p)) return nullptr;
  return std::make_unique<AvgPool2dKernel>(p, ctx.node.attr_int("count_include_pad", 0) != 0, ctx.isa);
}

std::unique_ptr<CpuKernel> make_global_average_pool(const CpuKernelPrepareContext& ctx) {
  if (ctx.inputs.empty() || ctx.outputs.empty()) return nullptr;
  const TensorInfo& x = ctx.inputs[0];
  if (x.dtype != DType::kF32 || x.shape.size() < 3 || ctx.outputs[0].dtype != DType::kF32) return nullptr;
  const int64_t planes = x.shape[0] * x.shape[1];
  const int64_t plane_size = planes == 0 ? 0 : shape_numel(x.shape) / planes;
  return std::make_unique<GlobalAvgPoolKernel>(planes, plane_size, ctx.isa);
}

}  // namespace

void register_cpu_pool_kernels(CpuKernelRegistry& r) {
  r.add("MaxPool", "", make_max_pool);
  r.add("AveragePool", "", make_average_pool);
  r.add("GlobalAveragePool", "", make_global_average_pool);
}

}  // namespace xnn
