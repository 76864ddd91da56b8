#include "engine/passes/eliminate_dead_code.h"

#include <unordered_map>
#include <unordered_set>

#include "engine/passes/pass_utils.h"

namespace xnn {

DeadCodeStats eliminate_dead_code(Graph& g) {
  DeadCodeStats stats;
  std::unordered_map<std::string, int> index;
  for (size_t i = 0; i < g.values.size(); ++i) index.emplace(g.values[i].name, static_cast<int>(i));
  // Backwards over the (topologically ordered) nodes: readers come after producers.
  std::vector<char> live(g.values.size(), 0);
  for (int o : g.outputs) live[static_cast<size_t>(o)] = 1;
  std::vector<char> remove(g.nodes.size(), 0);
  for (size_t k = g.nodes.size(); k-- > 0;) {
    const Node& n = g.nodes[k];
    bool used = false;
    for (int o : n.outputs) used = used || (o >= 0 && live[static_cast<size_t>(o)]);
    if (!used) {
      remove[k] = 1;
      ++stats.nodes;
      continue;
    }
    for (int i : n.inputs) {
      if (i >= 0) live[static_cast<size_t>(i)] = 1;
    }
    for (const std::string& name : passes::node_outer_names(n)) {
      auto it = index.find(name);
      if (it != index.end()) live[static_cast<size_t>(it->second)] = 1;
    }
  }
  if (stats.nodes) passes::erase_nodes(g, remove);

  // Values: keep what anything still refers to, renumber the rest.
  std::vector<char> used = live;
  for (int i : g.inputs) used[static_cast<size_t>(i)] = 1;
  for (const Node& n : g.nodes) {
    for (int o : n.outputs) {
      if (o >= 0) used[static_cast<size_t>(o)] = 1;
    }
  }
  std::vector<int> remap(g.values.size(), -1);
  std::vector<Value> kept;
  kept.reserve(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    if (!used[i]) continue;
    remap[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(g.values[i]));
  }
  stats.values = static_cast<int>(g.values.size() - kept.size());
  g.values = std::move(kept);
  auto renumber = [&](std::vector<int>& indices) {
    for (int& i : indices) {
      if (i >= 0) i = remap[static_cast<size_t>(i)];
    }
  };
  renumber(g.inputs);
  renumber(g.outputs);
  for (Node& n : g.nodes) {
    renumber(n.inputs);
    renumber(n.outputs);
  }
  return stats;
}

}  // namespace xnn
