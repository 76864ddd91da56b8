// The scope chain of nested subgraphs: the values a subgraph may read by name are those of the
// graph running it, then those of the graph around that one, and so on out to the main graph
// (ONNX forbids a subgraph to redefine an outer name, so the first match is the only one).
//
// One ValueScope per running graph, linked to its enclosing graph's scope. While a graph is
// being prepared its scope holds what inference knows (TensorInfo per value); while it runs, the
// tensors. Scopes only borrow: the session that owns the graph keeps both alive meanwhile.
#pragma once
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/core/op_registry.h"

namespace xnn {

// Name -> value index of one graph, built once per graph.
using ValueIndex = std::unordered_map<std::string, int>;
ValueIndex index_values(const Graph& g);

struct ValueScope {
  const Graph* graph = nullptr;
  const ValueIndex* index = nullptr;
  const std::vector<TensorInfo>* infos = nullptr;  // at preparation: one per value of `graph`
  const std::vector<Tensor>* tensors = nullptr;    // while running: one per value of `graph`
  const ValueScope* parent = nullptr;

  // dtype and shape of `name` from the innermost scope that knows it (its infos, else its
  // tensors), or nullopt. The value is kept only for constants of their graph (data that never
  // changes), so what is prepared from it holds for any run.
  std::optional<TensorInfo> find_info(const std::string& name) const;
  // The tensor named `name` in the innermost scope that holds it, or null.
  const Tensor* find_tensor(const std::string& name) const;
};

// Indices (in the graph `index` covers) of the values that `n`'s subgraphs, at any depth, read
// by name: a control-flow node's implicit inputs, which must stay alive until the node has run.
std::vector<int> implicit_inputs(const ValueIndex& index, const Node& n);

}  // namespace xnn
