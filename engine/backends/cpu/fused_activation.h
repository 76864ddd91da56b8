// The activation a fused node (ai.xnn FusedConv/FusedGemm) applies in its epilogue, from its
// `activation` and `activation_params` attributes; none for plain ONNX nodes.
#pragma once
#include <limits>

#include "engine/core/error.h"
#include "engine/core/graph.h"
#include "engine/kernels/activation.h"

namespace xnn {

inline kernels::Activation fused_activation(const Node& n) {
  kernels::Activation a;
  if (n.domain != "ai.xnn") return a;
  a.kind = kernels::act_kind_from_name(n.attr_string("activation", ""));
  const std::vector<float> p = n.attr_floats("activation_params", {});
  switch (a.kind) {
    case kernels::ActKind::kClip:
      a.alpha = p.size() > 0 ? p[0] : std::numeric_limits<float>::lowest();
      a.beta = p.size() > 1 ? p[1] : std::numeric_limits<float>::max();
      break;
    case kernels::ActKind::kLeakyRelu: a.alpha = p.size() > 0 ? p[0] : 0.01f; break;
    case kernels::ActKind::kHardSigmoid:
      a.alpha = p.size() > 0 ? p[0] : 0.2f;
      a.beta = p.size() > 1 ? p[1] : 0.5f;
      break;
    default: break;
  }
  return a;
}

}  // namespace xnn
