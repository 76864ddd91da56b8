// Constant folding: evaluates, at load time, every part of a graph that does not depend on the
// graph inputs (PyTorch exports are full of Shape -> Gather -> Unsqueeze -> Concat -> Reshape
// chains that compute static shapes at run time). Values are computed with the reference
// kernels through run_node, so a folded constant equals what the session would compute.
#pragma once
#include <cstdint>

#include "engine/core/graph.h"

namespace xnn {

struct FoldStats {
  int folded_nodes = 0;      // nodes evaluated into constants (Shape of a static shape included)
  int removed_nodes = 0;     // folded plus dead nodes removed
  int removed_values = 0;    // values no longer referenced
};

// Output tensors larger than this stay computed at run time (keeps files small and load fast).
constexpr int64_t kMaxFoldedBytes = int64_t{64} << 20;

// One forward pass over the (topologically sorted, valid) main graph:
//   - Shape(x) becomes a constant when x's shape is fully static and exact: x is a graph input
//     (the session checks its shape), a constant, or a value whose shape this pass inferred.
//     Shapes only declared in value_info are not relied on: nothing checks them at run time;
//   - a node whose inputs are all constants is evaluated and its outputs become constants
//     (skipped: unregistered ops, control flow, nondeterministic ops, outputs over
//     kMaxFoldedBytes, very costly nodes, folding beyond an overall memory allowance, and
//     nodes whose kernel fails: that error belongs to run time);
//   - otherwise, when all input shapes are static, the op's shape inference records its
//     output dtypes and static shapes on the values (so later Shape nodes fold).
// Then nodes whose outputs nobody uses are removed, and values nothing refers to. Graph inputs
// and outputs stay (an output that became constant keeps its data); names read by subgraphs
// (outer-scope references) count as uses. Subgraphs themselves are not folded.
FoldStats fold_constants(Graph& g);

// The shape-propagation step on its own, for passes that edit a graph in topological order
// (the ONNX importer's legacy rewrites): when every input of `node` is a constant or has a
// static shape (declared shapes included), runs the op's shape inference and records output
// dtypes and static shapes on the node's output values. Returns false, changing nothing, when
// that is not possible (unknown op, dynamic shapes, inference error).
bool propagate_static_shapes(Graph& g, const Node& node);

}  // namespace xnn
