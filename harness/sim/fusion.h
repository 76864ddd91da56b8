// The fusion a device's runtime would do: chains of nodes matching one of the device's patterns
// ("Conv + Add + Relu|Clip") become one kernel: one dispatch, and the tensors between them never
// reach memory.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "harness/sim/device_profile.h"

namespace xnn::sim {

struct FusedGroup {
  std::vector<size_t> nodes;   // node indices in chain order; nodes[0] is the anchor
  std::vector<int> internal;   // values passed inside the group (never written to memory)
  std::string pattern;         // the pattern's text; "" for a single node
};

// Groups the nodes of `graph`: `device_of_node[k]` is the profile node k runs on (null: a free
// node, never fused), `partition_of_node[k]` the partition it runs in (partition.h). A chain
// matches a pattern when every step's op type (engine-fused nodes count as their base op) is one
// of the step's alternatives, every link is the producer's first output, consumed by exactly the
// next node and not a graph output, and every node runs in the same partition. Scanning in node
// order, each unfused node starts the longest pattern of its device that matches there. Every
// non-free node ends up in exactly one group.
std::vector<FusedGroup> find_fusions(const Graph& graph, const std::vector<const DeviceProfile*>& device_of_node,
                                     const std::vector<int>& partition_of_node);

}  // namespace xnn::sim
