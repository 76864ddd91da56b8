// Pooling of uint8 NCHW activations on the CPU (engine/kernels/qpooling.h):
//   MaxPool (int8 graphs pool their activations directly): same geometry source as pool_cpu.cpp
//     (window_geometry, what the reference uses), so pads, auto_pad and ceil_mode agree by
//     construction. Other dtypes, ranks, dilation and the Indices output stay with pool_cpu.cpp
//     or the reference kernel.
//   com.microsoft QLinearGlobalAveragePool, channels first, uint8, constant per-tensor scales
//     and zero points (the channels_last form and int8 run the reference).
#include <optional>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/backends/cpu/quant_params_cpu.h"
#include "engine/kernels/qpooling.h"
#include "engine/ops/op_helpers.h"

namespace xnn {
namespace {

class U8MaxPool2dKernel final : public CpuKernel {
 public:
  explicit U8MaxPool2dKernel(const kernels::Pool2dParams& p) : p_(p) {}
  std::string name() const override { return kernels::u8_maxpool2d_kernel_name(); }
  void run(KernelContext& ctx) override {
    kernels::u8_maxpool2d(p_, ctx.input(0).data<uint8_t>(), ctx.output(0).data<uint8_t>(), ctx.pool());
  }

 private:
  kernels::Pool2dParams p_;
};

std::unique_ptr<CpuKernel> make_u8_max_pool(const CpuKernelPrepareContext& ctx) {
  if (ctx.inputs.empty() || ctx.outputs.empty()) return nullptr;
  if (ctx.node.outputs.size() > 1 && ctx.node.outputs[1] >= 0) return nullptr;  // Indices
  const TensorInfo& x = ctx.inputs[0];
  if (x.dtype != DType::kU8 || x.shape.size() != 4 || ctx.outputs[0].dtype != DType::kU8) return nullptr;
  const std::vector<int64_t> kernel = ctx.node.attr_ints("kernel_shape");
  if (kernel.size() != 2) return nullptr;
  const WindowGeometry g = window_geometry(ctx.node, {x.shape[2], x.shape[3]}, kernel, ctx.node.attr_int("ceil_mode", 0) != 0);
  if (g.dilations[0] != 1 || g.dilations[1] != 1) return nullptr;
  if (ctx.outputs[0].shape != Shape{x.shape[0], x.shape[1], g.out[0], g.out[1]}) return nullptr;
  kernels::Pool2dParams p;
  p.planes = x.shape[0] * x.shape[1];
  p.in_h = x.shape[2], p.in_w = x.shape[3];
  p.out_h = g.out[0], p.out_w = g.out[1];
  p.kernel_h = kernel[0], p.kernel_w = kernel[1];
  p.stride_h = g.strides[0], p.stride_w = g.strides[1];
  p.pad_t = g.pads_begin[0], p.pad_l = g.pads_begin[1], p.pad_b = g.pads_end[0], p.pad_r = g.pads_end[1];
  return std::make_unique<U8MaxPool2dKernel>(p);
}

class U8GlobalAvgPoolKernel final : public CpuKernel {
 public:
  U8GlobalAvgPoolKernel(int64_t planes, int64_t plane_size, const kernels::QGlobalAvgPoolParams& p)
      : planes_(planes), plane_size_(plane_size), p_(p) {}
  std::string name() const override { return kernels::u8_global_avgpool_kernel_name(); }
  void run(KernelContext& ctx) override {
    kernels::u8_global_avgpool(planes_, plane_size_, ctx.input(0).data<uint8_t>(), p_, ctx.output(0).data<uint8_t>(),
                               ctx.pool());
  }

 private:
  int64_t planes_, plane_size_;
  kernels::QGlobalAvgPoolParams p_;
};

// (X, x_scale, x_zero_point, y_scale, y_zero_point?)
std::unique_ptr<CpuKernel> make_u8_global_avg_pool(const CpuKernelPrepareContext& ctx) {
  if (ctx.inputs.size() < 4 || ctx.outputs.empty()) return nullptr;
  const TensorInfo& x = ctx.inputs[0];
  if (x.dtype != DType::kU8 || x.shape.size() < 3 || ctx.outputs[0].dtype != DType::kU8) return nullptr;
  if (ctx.node.attr_int("channels_last", 0) != 0) return nullptr;
  const auto zero_point = [](const TensorInfo& t) {
    return t.dtype == DType::kUnknown ? std::optional<uint8_t>(0) : constant_u8_zero_point(t);
  };
  const auto x_scale = constant_scale(ctx.inputs[1]), y_scale = constant_scale(ctx.inputs[3]);
  const auto x_zp = zero_point(ctx.inputs[2]);
  const auto y_zp = ctx.inputs.size() > 4 ? zero_point(ctx.inputs[4]) : std::optional<uint8_t>(0);
  if (!x_scale || !y_scale || !x_zp || !y_zp) return nullptr;
  const int64_t planes = x.shape[0] * x.shape[1];
  if (planes <= 0 || shape_numel(ctx.outputs[0].shape) != planes) return nullptr;
  kernels::QGlobalAvgPoolParams p;
  p.x_scale = *x_scale, p.y_scale = *y_scale, p.x_zero_point = *x_zp, p.y_zero_point = *y_zp;
  return std::make_unique<U8GlobalAvgPoolKernel>(planes, shape_numel(x.shape) / planes, p);
}

}  // namespace

void register_cpu_qpool_kernels(CpuKernelRegistry& r) {
  r.add("MaxPool", "", make_u8_max_pool);
  r.add("QLinearGlobalAveragePool", "com.microsoft", make_u8_global_avg_pool);
}

}  // namespace xnn
