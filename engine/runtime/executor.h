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
void run_node(const OpRegistry& registry, const Node& node, std::span<const Tensor* const> inputs,
              std::vector<Tensor>& outputs);

// The schema for `node`, or an UnsupportedError naming the node and op type.
const OpSchema& schema_for(const OpRegistry& registry, const Node& node);

}  // namespace xnn
