// fuse_residual_add: folds Add(conv(x), z) into FusedConv(x, W, B, Z = z).
#pragma once
#include "engine/core/graph.h"

namespace xnn {

// Add(a, b) where a is the output of a Conv, or of a FusedConv with neither activation nor Z,
// computing in f32, that only this Add reads (no graph output, no subgraph names it), and b has
// exactly a's static shape (no broadcasting: FusedConv's Z is elementwise; unknown shapes do not
// fuse). The conv becomes FusedConv(X, W, B, Z = b), keeps its name, and writes the Add's output
// value. When both operands qualify, the conv whose Z (the other operand) is computed earlier
// is chosen. The fused node stays at the conv's position when Z is ready there, else it moves
// to the Add's position (after both operands), so the order stays topological with no re-sort.
// Run fuse_activation afterwards so a following Relu joins too: ResNet's
// relu(bn(conv(x)) + identity) becomes one FusedConv(activation = Relu, Z = identity).
// Returns the number of Adds fused.
int fuse_residual_add(Graph& g);

}  // namespace xnn
