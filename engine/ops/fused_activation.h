// The activation an ai.xnn fused node (FusedConv, FusedGemm) applies in its epilogue, read from
// its `activation` and `activation_params` attributes (absent params: the ONNX defaults; a
// wrong count is an error naming the node). Plain ONNX nodes: no activation. One parser for
// the reference kernels (engine/ops/fused.cpp) and every backend.
#pragma once
#include "engine/core/graph.h"
#include "engine/kernels/activation.h"

namespace xnn {

kernels::Activation fused_activation(const Node& node);

}  // namespace xnn
