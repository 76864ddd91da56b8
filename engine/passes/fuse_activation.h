// fuse_activation: moves an activation into the Conv/Gemm that produces its input.
#pragma once
#include "engine/core/graph.h"

namespace xnn {

// Producer P: Conv, Gemm, or FusedConv/FusedGemm without an activation yet (FusedConv with Z
// included: Y = act(conv + Z) is what a residual block wants), computing in f32. Fused:
//   Relu, LeakyRelu (alpha), HardSwish, HardSigmoid (alpha, beta), Sigmoid, and Clip with
//   constant scalar min/max (absent: float lowest/max; not when min > max, where ONNX returns
//   max everywhere but the fused clamp would not);
//   SiLU written out: Mul(x, Sigmoid(x)) in either operand order;
//   HardSwish written out (PyTorch's export below opset 14): Mul(x, HardSigmoid(x)) with
//   alpha = 1/6, beta = 0.5;
// when P's output x is read only by the activation (by the Sigmoid/HardSigmoid and the Mul in
// the written-out forms, whose gate has no other reader), is no graph output and no subgraph
// names it. P becomes FusedConv/FusedGemm (domain ai.xnn, same name) with `activation` /
// `activation_params`, and writes the activation's output value directly, so that value's name
// (perhaps a graph output) survives. P stays where it is: the order remains topological.
// Returns the number of activations fused.
int fuse_activation(Graph& g);

}  // namespace xnn
