// Elementwise int8 ops on the CPU (engine/kernels/qelementwise.h), for the int8 graphs' residual
// adds and input quantisation:
//   com.microsoft QLinearAdd with A and B uint8 of the same shape and constant per-tensor scales
//     and zero points (absent = 0) -> u8_qlinear_add, multipliers A_scale / C_scale and
//     B_scale / C_scale formed as the reference forms them;
//   QuantizeLinear from float32 to uint8 with a constant per-tensor scale and zero point ->
//     f32_quantize_u8.
// Broadcasting adds, int8 tensors and per-axis quantisation run the reference kernels.
#include <optional>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/backends/cpu/quant_params_cpu.h"
#include "engine/kernels/qelementwise.h"

namespace xnn {
namespace {

// An absent zero point is 0.
std::optional<uint8_t> u8_zero_point_or_absent(const TensorInfo& t) {
  return t.dtype == DType::kUnknown ? std::optional<uint8_t>(0) : constant_u8_zero_point(t);
}

class QLinearAddKernel final : public CpuKernel {
 public:
  QLinearAddKernel(int64_t n, const kernels::QAddParams& p, kernels::Isa isa) : n_(n), p_(p), isa_(isa) {}
  std::string name() const override { return "u8_qlinear_add__" + std::string(kernels::isa_name(isa_)); }
  void run(KernelContext& ctx) override {
    kernels::u8_qlinear_add(n_, ctx.input(0).data<uint8_t>(), ctx.input(3).data<uint8_t>(), p_,
                            ctx.output(0).data<uint8_t>(), ctx.pool(), isa_);
  }

 private:
  int64_t n_;
  kernels::QAddParams p_;
  kernels::Isa isa_;
};

// (A, A_scale, A_zp?, B, B_scale, B_zp?, C_scale, C_zp?)
std::unique_ptr<CpuKernel> make_qlinear_add(const CpuKernelPrepareContext& ctx) {
  static const TensorInfo absent;
  if (ctx.inputs.size() < 7 || ctx.outputs.empty()) return nullptr;
  const TensorInfo& a = ctx.inputs[0];
  const TensorInfo& b = ctx.inputs[3];
  if (a.dtype != DType::kU8 || b.dtype != DType::kU8 || ctx.outputs[0].dtype != DType::kU8) return nullptr;
  if (a.shape != b.shape || ctx.outputs[0].shape != a.shape) return nullptr;
  const auto a_scale = constant_scale(ctx.inputs[1]), b_scale = constant_scale(ctx.inputs[4]);
  const auto c_scale = constant_scale(ctx.inputs[6]);
  const auto a_zp = u8_zero_point_or_absent(ctx.inputs[2]), b_zp = u8_zero_point_or_absent(ctx.inputs[5]);
  const auto c_zp = u8_zero_point_or_absent(ctx.inputs.size() > 7 ? ctx.inputs[7] : absent);
  if (!a_scale || !b_scale || !c_scale || !a_zp || !b_zp || !c_zp) return nullptr;
  kernels::QAddParams p;
  p.a_multiplier = *a_scale / *c_scale;
  p.b_multiplier = *b_scale / *c_scale;
  p.a_zero_point = *a_zp, p.b_zero_point = *b_zp, p.y_zero_point = *c_zp;
  return std::make_unique<QLinearAddKernel>(shape_numel(a.shape), p, ctx.isa);
}

class QuantizeU8Kernel final : public CpuKernel {
 public:
  QuantizeU8Kernel(int64_t n, float scale, uint8_t zero_point, kernels::Isa isa)
      : n_(n), scale_(scale), zp_(zero_point), isa_(isa) {}
  std::string name() const override { return "f32_quantize_u8__" + std::string(kernels::isa_name(isa_)); }
  void run(KernelContext& ctx) override {
    kernels::f32_quantize_u8(n_, ctx.input(0).data<float>(), scale_, zp_, ctx.output(0).data<uint8_t>(), ctx.pool(),
                             isa_);
  }

 private:
  int64_t n_;
  float scale_;
  uint8_t zp_;
  kernels::Isa isa_;
};

// (x, y_scale, y_zero_point?)
std::unique_ptr<CpuKernel> make_quantize_linear(const CpuKernelPrepareContext& ctx) {
  static const TensorInfo absent;
  if (ctx.inputs.size() < 2 || ctx.outputs.empty()) return nullptr;
  if (ctx.inputs[0].dtype != DType::kF32 || ctx.outputs[0].dtype != DType::kU8) return nullptr;
  const auto scale = constant_scale(ctx.inputs[1]);
  const auto zp = u8_zero_point_or_absent(ctx.inputs.size() > 2 ? ctx.inputs[2] : absent);
  if (!scale || !zp) return nullptr;
  return std::make_unique<QuantizeU8Kernel>(shape_numel(ctx.inputs[0].shape), *scale, *zp, ctx.isa);
}

}  // namespace

void register_cpu_qelementwise_kernels(CpuKernelRegistry& r) {
  r.add("QLinearAdd", "com.microsoft", make_qlinear_add);
  r.add("QuantizeLinear", "", make_quantize_linear);
}

}  // namespace xnn
