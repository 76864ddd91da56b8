// Graph partitioning for an accelerator: nodes it accepts run on it, the others fall back to the
// host CPU, and the graph is cut into partitions (runs of nodes on one side, executed in turn).
//
// Partitions are contiguous runs of one execution order, found by a topological sort (Kahn) that
// keeps taking ready nodes of the side it is on and only switches side when none is left. That
// gives maximal partitions without ever making a cycle between them (a partition never waits for
// one that runs after it), which merging connected components alone could.
//
// Free nodes (views: Reshape, Flatten, ...; op_support.h) belong to no partition: a view lives
// wherever its input lives, so it never forces a cut or a transfer of its own.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "engine/core/graph.h"

namespace xnn::sim {

enum class Side { kDevice = 0, kHost = 1 };

struct Partition {
  size_t index = 0;
  Side side = Side::kDevice;
  std::vector<size_t> nodes;  // in execution order
};

// A tensor crossing between sides: produced (or a graph input) on `from`, read on the other side
// by partition `to_partition` (-1: the tensor is a graph output going to the host).
struct Crossing {
  int value = -1;
  Side from = Side::kHost;
  int to_partition = -1;
  size_t first_consumer = 0;  // node that first reads it there; for graph outputs, the producer
};

struct Partitioning {
  std::vector<Partition> partitions;   // in execution order
  std::vector<int> partition_of_node;  // -1 for free nodes
  std::vector<size_t> order;           // execution order of all nodes (free ones included)
  std::vector<Side> side_of_node;      // free nodes: the side of their input
  std::vector<Crossing> crossings;     // every boundary tensor, once per reading partition
};

// `side_of_node[k]` for non-free nodes; `free[k]` marks views. `inputs_side`: where graph inputs
// live and where outputs must end up (the host when there is an accelerator; the device when
// the device is itself a CPU, which then gives no crossings at all). Constants live on every side.
Partitioning partition_graph(const Graph& graph, const std::vector<Side>& side_of_node, const std::vector<bool>& free,
                             Side inputs_side);

}  // namespace xnn::sim
