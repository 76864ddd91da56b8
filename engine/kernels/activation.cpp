#include "engine/kernels/activation.h"

#include "engine/core/error.h"
#include "engine/kernels/elementwise.h"

namespace xnn::kernels {

ActKind act_kind_from_name(const std::string& name) {
  if (name.empty() || name == "None") return ActKind::kNone;
  if (name == "Relu") return ActKind::kRelu;
  if (name == "Clip") return ActKind::kClip;
  if (name == "LeakyRelu") return ActKind::kLeakyRelu;
  if (name == "HardSwish") return ActKind::kHardSwish;
  if (name == "HardSigmoid") return ActKind::kHardSigmoid;
  if (name == "Sigmoid") return ActKind::kSigmoid;
  if (name == "Silu") return ActKind::kSilu;
  throw Error("unknown fused activation '" + name + "' (expected Relu, Clip, LeakyRelu, HardSwish, HardSigmoid, Sigmoid or Silu)");
}

const char* act_kind_name(ActKind kind) {
  switch (kind) {
    case ActKind::kNone: return "";
    case ActKind::kRelu: return "Relu";
    case ActKind::kClip: return "Clip";
    case ActKind::kLeakyRelu: return "LeakyRelu";
    case ActKind::kHardSwish: return "HardSwish";
    case ActKind::kHardSigmoid: return "HardSigmoid";
    case ActKind::kSigmoid: return "Sigmoid";
    case ActKind::kSilu: return "Silu";
  }
  return "";
}

void apply_activation(float* data, int64_t n, const Activation& act, Isa isa) {
  if (act.kind == ActKind::kNone) return;
  // The scalar loop is the definition; the AVX2 path (elementwise_avx2.cpp) matches it lane-wise.
  if (isa == Isa::kAvx2 && isa_supported(Isa::kAvx2)) return f32_vact__avx2(n, data, data, act);
  for (int64_t i = 0; i < n; ++i) data[i] = apply_activation_scalar(data[i], act);
}

}  // namespace xnn::kernels
