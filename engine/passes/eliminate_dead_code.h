// eliminate_dead_code: drops nodes nobody needs and values nothing refers to.
#pragma once
#include "engine/core/graph.h"

namespace xnn {

struct DeadCodeStats {
  int nodes = 0;   // nodes removed
  int values = 0;  // values removed (old weights left behind by fold_batchnorm, bypassed outputs)
};

// A node is live when one of its outputs is a graph output, is read by a live node, or is named
// by a subgraph of a live node (outer-scope read); the others go (inference ops have no side
// effects). Then values that no graph input/output, node or subgraph refers to are removed and
// the rest renumbered (value indices held across this call are invalid afterwards). Graph
// inputs always stay, used or not: they are the model's signature.
DeadCodeStats eliminate_dead_code(Graph& g);

}  // namespace xnn
