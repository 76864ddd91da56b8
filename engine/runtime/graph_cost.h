// Static cost of a graph for given input shapes: per-node MACs and bytes from each op's cost
// function, with shapes from each op's inference. Used by `inspect` now and by the latency
// model later. Symbolic input dims not bound by `input_shapes` count as 1.
//
// Control flow (If, Loop, Scan) counts each subgraph once per node: If both branches (only the
// taken one when the condition is a constant), Loop and Scan one iteration of the body, not
// multiplied by the trip count. When the graph has to be executed to learn its shapes, a
// control-flow node counts only what it reads and writes itself.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/core/op_registry.h"

namespace xnn {

struct NodeCost {
  size_t node_index = 0;
  OpCost cost;
  std::vector<Shape> input_shapes, output_shapes;
};

struct GraphCost {
  std::vector<NodeCost> nodes;
  OpCost total;
  // False when some shape depended on run-time values and the graph had to be executed on
  // zero-filled inputs to learn it (the costs are then those of that execution).
  bool static_shapes = true;
};

GraphCost estimate_graph_cost(const Graph& graph, const std::map<std::string, Shape>& input_shapes = {});

// The concrete shape a graph input gets: `bound` if given, else declared dims with symbols as 1.
Shape concrete_input_shape(const Value& input, const std::map<std::string, Shape>& input_shapes);

}  // namespace xnn
