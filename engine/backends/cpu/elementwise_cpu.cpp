// CPU kernels for fp32 elementwise ops (engine/kernels/elementwise.h): Add/Sub/Mul/Div in the
// same-shape, scalar and per-channel broadcast forms; the activations Relu, Clip, LeakyRelu,
// HardSwish, HardSigmoid, Sigmoid; Softmax along the last axis. Anything else (other dtypes,
// other broadcasts, Clip bounds only known at run time, Softmax over an inner axis) returns
// null and runs the reference kernel.
#include <cmath>
#include <limits>
#include <optional>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/kernels/elementwise.h"

namespace xnn {
namespace {

using kernels::Activation;
using kernels::ActKind;
using kernels::BinaryBroadcast;
using kernels::BinaryOp;

bool is_f32(const TensorInfo& t) { return t.dtype == DType::kF32; }

class BinaryKernel : public CpuKernel {
 public:
  BinaryKernel(BinaryOp op, const BinaryBroadcast& bc, kernels::Isa isa) : op_(op), bc_(bc), isa_(isa) {}
  std::string name() const override { return kernels::binary_kernel_name(op_, bc_, isa_); }
  void run(KernelContext& ctx) override {
    kernels::f32_binary(op_, bc_, ctx.input(0).data<float>(), ctx.input(1).data<float>(),
                        ctx.output(0).data<float>(), Activation{}, ctx.pool(), isa_);
  }

 private:
  BinaryOp op_;
  BinaryBroadcast bc_;
  kernels::Isa isa_;
};

CpuKernelFactory binary_factory(BinaryOp op) {
  return [op](const CpuKernelPrepareContext& ctx) -> std::unique_ptr<CpuKernel> {
    if (ctx.inputs.size() != 2 || ctx.outputs.empty()) return nullptr;
    if (!is_f32(ctx.inputs[0]) || !is_f32(ctx.inputs[1]) || !is_f32(ctx.outputs[0])) return nullptr;
    BinaryBroadcast bc;
    if (!kernels::plan_binary_broadcast(ctx.inputs[0].shape, ctx.inputs[1].shape, &bc)) return nullptr;
    if (bc.numel() != shape_numel(ctx.outputs[0].shape)) return nullptr;
    return std::make_unique<BinaryKernel>(op, bc, ctx.isa);
  };
}

class ActivationKernel : public CpuKernel {
 public:
  // `kind_for_name`: the op the kernel implements when `act` expresses it through another kind.
  ActivationKernel(const Activation& act, kernels::Isa isa, ActKind kind_for_name)
      : act_(act), isa_(isa), name_(kernels::activation_kernel_name(kind_for_name, isa)) {}
  ActivationKernel(const Activation& act, kernels::Isa isa) : ActivationKernel(act, isa, act.kind) {}
  std::string name() const override { return name_; }
  void run(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    kernels::f32_activation(x.numel(), x.data<float>(), ctx.output(0).data<float>(), act_, ctx.pool(), isa_);
  }

 private:
  Activation act_;
  kernels::Isa isa_;
  std::string name_;
};

// A factory for a one-input activation op whose Activation `make` derives from the node.
template <typename Make>
CpuKernelFactory activation_factory(Make make, std::optional<ActKind> kind_for_name = std::nullopt) {
  return [make, kind_for_name](const CpuKernelPrepareContext& ctx) -> std::unique_ptr<CpuKernel> {
    if (ctx.inputs.empty() || ctx.outputs.empty() || !is_f32(ctx.inputs[0]) || !is_f32(ctx.outputs[0])) {
      return nullptr;
    }
    const Activation act = make(ctx.node);
    return std::make_unique<ActivationKernel>(act, ctx.isa, kind_for_name.value_or(act.kind));
  };
}

// Clip's optional min/max inputs: absent, or constants (read at preparation).
std::unique_ptr<CpuKernel> make_clip(const CpuKernelPrepareContext& ctx) {
  if (ctx.inputs.empty() || ctx.outputs.empty() || !is_f32(ctx.inputs[0]) || !is_f32(ctx.outputs[0])) return nullptr;
  float bound[2] = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
  for (size_t i = 1; i <= 2; ++i) {
    if (i >= ctx.inputs.size() || ctx.inputs[i].dtype == DType::kUnknown) continue;  // absent
    const TensorInfo& t = ctx.inputs[i];
    if (!t.value || t.value->dtype() != DType::kF32 || t.value->numel() != 1) return nullptr;
    bound[i - 1] = t.value->data<float>()[0];
  }
  // The reference applies max(x, lo) then min(., hi), so lo > hi gives hi everywhere (NaN stays
  // NaN); Activation's clip tests x < lo first. Clamping lo to hi makes the two agree.
  const float hi = bound[1];
  const float lo = bound[0] > hi ? hi : bound[0];
  return std::make_unique<ActivationKernel>(Activation::clip(lo, hi), ctx.isa);
}

class SoftmaxKernel : public CpuKernel {
 public:
  SoftmaxKernel(int64_t rows, int64_t len, kernels::Isa isa) : rows_(rows), len_(len), isa_(isa) {}
  std::string name() const override { return kernels::softmax_kernel_name(isa_); }
  void run(KernelContext& ctx) override {
    kernels::f32_softmax(rows_, len_, ctx.input(0).data<float>(), ctx.output(0).data<float>(), ctx.pool(), isa_);
  }

 private:
  int64_t rows_, len_;
  kernels::Isa isa_;
};

std::unique_ptr<CpuKernel> make_softmax(const CpuKernelPrepareContext& ctx) {
  if (ctx.inputs.empty() || ctx.outputs.empty() || !is_f32(ctx.inputs[0]) || !is_f32(ctx.outputs[0])) return nullptr;
  const Shape& s = ctx.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  if (rank == 0) return nullptr;
  int64_t axis = ctx.node.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis != rank - 1) return nullptr;  // only rows contiguous along the reduced axis
  const int64_t len = s.back();
  const int64_t rows = len == 0 ? 0 : shape_numel(s) / len;
  return std::make_unique<SoftmaxKernel>(rows, len, ctx.isa);
}

}  // namespace

void register_cpu_elementwise_kernels(CpuKernelRegistry& r) {
  r.add("Add", "", binary_factory(BinaryOp::kAdd));
  r.add("Sub", "", binary_factory(BinaryOp::kSub));
  r.add("Mul", "", binary_factory(BinaryOp::kMul));
  r.add("Div", "", binary_factory(BinaryOp::kDiv));

  // The Relu op is x < 0 ? 0 : x (NaN stays NaN, -0 stays -0): that is clip(0, +inf), not the
  // fused kRelu (x > 0 ? x : 0, which maps NaN to 0).
  r.add("Relu", "", activation_factory([](const Node&) {
          return Activation::clip(0.0f, std::numeric_limits<float>::infinity());
        }, ActKind::kRelu));
  r.add("Clip", "", make_clip);
  r.add("LeakyRelu", "", activation_factory([](const Node& n) {
          return Activation::leaky_relu(n.attr_float("alpha", 0.01f));
        }));
  r.add("HardSwish", "", activation_factory([](const Node&) { return Activation{ActKind::kHardSwish}; }));
  r.add("HardSigmoid", "", activation_factory([](const Node& n) {
          return Activation{ActKind::kHardSigmoid, n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
        }));
  r.add("Sigmoid", "", activation_factory([](const Node&) { return Activation{ActKind::kSigmoid}; }));
  r.add("Softmax", "", make_softmax);
}

}  // namespace xnn
