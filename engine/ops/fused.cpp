// Fused ops in our own domain "ai.xnn", produced by the graph passes (engine/passes/) and never
// by importers. Modelled on ONNX Runtime's com.microsoft FusedConv / FusedGemm:
//   FusedConv(X, W, B?, Z?)  Y = act(Conv(X, W, B) + Z)   Z: a residual of exactly Y's shape
//   FusedGemm(A, B, C?)      Y = act(Gemm(A, B, C))
// Attributes: all of Conv's / Gemm's, plus `activation` (string: "", "Relu", "Clip", "LeakyRelu",
// "HardSwish", "HardSigmoid", "Sigmoid", "Silu") and `activation_params` (floats: Clip [min, max],
// LeakyRelu [alpha], HardSigmoid [alpha, beta]; absent: the ONNX defaults).
//
// Shape inference, cost and the main computation are Conv's / Gemm's own, taken from the
// registry when these ops are registered, so a fused op can never drift from the op it replaces.
// The epilogue (+Z, activation) uses kernels::apply_activation_scalar, the one definition of each
// fused activation that optimised backends share, so fused and unfused results agree.
// f32 only: the shared activation math is float; the passes fuse only f32 producers.
#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <vector>

#include "engine/kernels/activation.h"
#include "engine/ops/fused_activation.h"
#include "engine/ops/nn_common.h"

namespace xnn {
namespace {

constexpr const char* kFusedDomain = "ai.xnn";

}  // namespace

kernels::Activation fused_activation(const Node& node) {
  if (node.domain != kFusedDomain) return kernels::Activation{};
  kernels::Activation act;
  const std::string name = node.attr_string("activation", "");
  try {
    act.kind = kernels::act_kind_from_name(name);
  } catch (const Error& e) {
    throw Error(node.describe() + ": " + e.what());
  }
  const std::vector<float> params = node.attr_floats("activation_params");
  auto want = [&](size_t n, std::vector<float> defaults) {
    if (params.empty()) return defaults;
    if (params.size() != n) {
      throw Error(node.describe() + ": activation " + name + " takes " + std::to_string(n) +
                  " activation_params, got " + std::to_string(params.size()));
    }
    return params;
  };
  switch (act.kind) {
    case kernels::ActKind::kClip: {
      const std::vector<float> p =
          want(2, {std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max()});
      act.alpha = p[0];
      act.beta = p[1];
      break;
    }
    case kernels::ActKind::kLeakyRelu: act.alpha = want(1, {0.01f})[0]; break;
    case kernels::ActKind::kHardSigmoid: {
      const std::vector<float> p = want(2, {0.2f, 0.5f});
      act.alpha = p[0];
      act.beta = p[1];
      break;
    }
    default:
      if (!params.empty()) {
        throw Error(node.describe() + ": activation '" + name + "' takes no activation_params, got " +
                    std::to_string(params.size()));
      }
  }
  return act;
}

namespace {

template <typename Ctx>
void check_f32(const Ctx& ctx, DType t) {
  if (t != DType::kF32) {
    ctx.unsupported("dtype " + std::string(dtype_name(t)) + " (fused ops are implemented for f32 only)");
  }
}

// Runs the base op's inference on the first `base_inputs` inputs; returns Y's info.
TensorInfo infer_base(InferContext& ctx, const InferFn& base_infer, int base_inputs) {
  std::vector<TensorInfo> ins(static_cast<size_t>(std::min(base_inputs, ctx.num_inputs())));
  for (int i = 0; i < static_cast<int>(ins.size()); ++i) {
    if (ctx.has_input(i)) ins[static_cast<size_t>(i)] = ctx.input(i);
  }
  std::vector<TensorInfo> outs(1);
  InferContext inner(ctx.node(), ins, outs);
  base_infer(inner);
  return outs[0];
}

// The base op's cost on its own inputs, plus the epilogue: Z is read, and +Z and the activation
// count one op per output element each, as the Add / activation nodes they replace did.
OpCost fused_cost(const CostFn& base_cost, int base_inputs, const Node& node, std::span<const TensorInfo> in,
                  std::span<const TensorInfo> out) {
  const auto base_in = in.first(std::min(in.size(), static_cast<size_t>(base_inputs)));
  OpCost c = base_cost ? base_cost(node, base_in, out) : default_cost(node, base_in, out);
  const double elems = out.empty() ? 0.0 : static_cast<double>(shape_numel(out[0].shape));
  for (size_t i = base_in.size(); i < in.size(); ++i) {
    if (in[i].dtype == DType::kUnknown) continue;
    c.bytes_read += static_cast<double>(shape_numel(in[i].shape) * dtype_size(in[i].dtype));
    c.macs += elems;
  }
  if (fused_activation(node).kind != kernels::ActKind::kNone) c.macs += elems;
  return c;
}

// Runs the base kernel into Y, then Y = act(Y + Z) element by element.
void run_fused(KernelContext& ctx, const KernelFn& base_kernel, int base_inputs, int z_input) {
  const kernels::Activation act = fused_activation(ctx.node());
  std::vector<const Tensor*> ins(static_cast<size_t>(std::min(base_inputs, ctx.num_inputs())), nullptr);
  for (int i = 0; i < static_cast<int>(ins.size()); ++i) {
    if (ctx.has_input(i)) ins[static_cast<size_t>(i)] = &ctx.input(i);
  }
  Tensor& y = ctx.output(0);
  check_f32(ctx, y.dtype());
  std::array<Tensor*, 1> outs{&y};
  KernelContext inner(ctx.node(), ins, outs, ctx.pool());
  base_kernel(inner);
  float* py = y.data<float>();
  const int64_t n = y.numel();
  if (z_input >= 0 && ctx.has_input(z_input)) {
    const Tensor& z = ctx.input(z_input);
    if (z.shape() != y.shape()) ctx.fail("Z has shape " + shape_str(z.shape()) + ", expected " + shape_str(y.shape()));
    const float* pz = z.data<float>();
    for (int64_t i = 0; i < n; ++i) py[i] = kernels::apply_activation_scalar(py[i] + pz[i], act);
  } else if (act.kind != kernels::ActKind::kNone) {
    for (int64_t i = 0; i < n; ++i) py[i] = kernels::apply_activation_scalar(py[i], act);
  }
}

// FusedConv: X, W, B?, Z?. FusedGemm: A, B, C? (no residual: C already is one).
OpSchema fused_schema(const OpSchema& base, const char* type, int z_input, const char* doc) {
  const int base_inputs = base.max_inputs;
  OpSchema s;
  s.type = type;
  s.domain = kFusedDomain;
  s.min_inputs = base.min_inputs;
  s.max_inputs = base.max_inputs + (z_input >= 0 ? 1 : 0);
  s.infer = [infer = base.infer, base_inputs, z_input](InferContext& ctx) {
    (void)fused_activation(ctx.node());  // rejects a bad name or parameter count up front
    const TensorInfo y = infer_base(ctx, infer, base_inputs);
    check_f32(ctx, y.dtype);
    if (z_input >= 0 && ctx.has_input(z_input)) {
      const TensorInfo& z = ctx.input(z_input);
      if (z.dtype != y.dtype) {
        ctx.fail("Z has dtype " + std::string(dtype_name(z.dtype)) + ", expected " + std::string(dtype_name(y.dtype)));
      }
      if (z.shape != y.shape) {
        ctx.fail("Z has shape " + shape_str(z.shape) + ", expected exactly Y's shape " + shape_str(y.shape) +
                 " (no broadcasting)");
      }
    }
    ctx.set_output(0, y.dtype, y.shape);
  };
  s.cost = [cost = base.cost, base_inputs](const Node& node, std::span<const TensorInfo> in,
                                           std::span<const TensorInfo> out) {
    return fused_cost(cost, base_inputs, node, in, out);
  };
  s.reference = [kernel = base.reference, base_inputs, z_input](KernelContext& ctx) {
    run_fused(ctx, kernel, base_inputs, z_input);
  };
  s.doc = doc;
  return s;
}

const OpSchema& base_schema(const OpRegistry& r, const char* type) {
  const OpSchema* s = r.find(type);
  if (!s) throw Error(std::string("register_fused_ops: ") + type + " must be registered before the fused ops");
  return *s;
}

}  // namespace

void register_fused_ops(OpRegistry& r) {
  r.add(fused_schema(base_schema(r, "Conv"), "FusedConv", 3,
                     "Y = act(Conv(X, W, B) + Z); Z optional, exactly Y's shape; activation / activation_params"));
  r.add(fused_schema(base_schema(r, "Gemm"), "FusedGemm", -1,
                     "Y = act(Gemm(A, B, C)); activation / activation_params"));
}

}  // namespace xnn
