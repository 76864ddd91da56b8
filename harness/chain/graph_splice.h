// Copies one graph into another: how `xnn-lab chain` puts a model inside the bundle (into the
// main graph, an If branch or a Scan body) without its names clashing with anything else.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "engine/core/graph.h"

namespace xnn::chain {

// Adds `source`'s values and nodes to `target`. Wherever `source` reads its graph input i,
// the copy reads `bind[i]` (a value of `target`) instead. Every other value, and every node,
// is renamed `prefix + name`, in nested subgraphs too, so their outer-scope reads follow the
// renaming. Returns the values of `target` that hold `source`'s outputs, in order. Throws
// xnn::Error if a renamed value would clash with one `target` already has.
std::vector<int> splice_graph(Graph& target, const Graph& source, std::span<const int> bind,
                              const std::string& prefix);

}  // namespace xnn::chain
