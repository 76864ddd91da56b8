// Executes single nodes with their reference kernels. Shared by the Session and by the
// importer's constant folding, so a folded constant is computed exactly as at run time.
#pragma once
#include <span>
#include <vector>

#include "engine/core/op_registry.h"

namespace xnn {

// Infers the outputs of `node` from the concrete `inputs` (null = absent optional input),
// allocates `outputs` (reusing a tensor's storage when dtype and shape already match and nobody
// else holds it), and runs the reference kernel. `outputs` has one slot per node output.
// A control-flow node (If/Loop/Scan) needs `subgraphs`, which runs its subgraphs in the scope of
// the caller's graph; its kernel assigns the outputs (their shapes are known only once the
// subgraph has run). Without it, such a node throws UnsupportedError.
void run_node(const OpRegistry& registry, const Node& node, std::span<const Tensor* const> inputs,
              std::vector<Tensor>& outputs, SubgraphHost* subgraphs = nullptr);

// The schema for `node`, or an UnsupportedError naming the node and op type.
const OpSchema& schema_for(const OpRegistry& registry, const Node& node);

}  // namespace xnn
