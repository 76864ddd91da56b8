// remove_identity: drops nodes that copy their input unchanged at inference time.
#pragma once
#include "engine/core/graph.h"

namespace xnn {

// Removes Identity, and Dropout in inference form (no training_mode input, or a constant false
// one; the mask output absent or unused), rewiring their consumers to the input. Graph outputs
// keep their names: when the removed node's output is a graph output (or is named by a
// subgraph), the input's producer is made to produce that value instead. A node is kept when
// neither is possible (its input is a graph input, a constant, another graph output or pinned
// by a subgraph). Returns the number of nodes removed.
int remove_identity(Graph& g);

}  // namespace xnn
