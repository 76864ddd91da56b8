#include "harness/sim/fusion.h"

#include <algorithm>

#include "harness/sim/op_support.h"

namespace xnn::sim {

std::vector<FusedGroup> find_fusions(const Graph& g, const std::vector<const DeviceProfile*>& device_of_node,
                                     const std::vector<int>& partition_of_node) {
  // Who reads each value (graph outputs count as a reader that is not a node).
  std::vector<std::vector<size_t>> consumers(g.values.size());
  std::vector<bool> is_output(g.values.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (int i : g.nodes[k].inputs) {
      if (i >= 0 && (consumers[static_cast<size_t>(i)].empty() || consumers[static_cast<size_t>(i)].back() != k)) {
        consumers[static_cast<size_t>(i)].push_back(k);
      }
    }
  }
  for (int o : g.outputs) is_output[static_cast<size_t>(o)] = true;

  // The single node consuming node k's first output, if the link can be fused.
  auto sole_consumer = [&](size_t k) -> long {
    const Node& n = g.nodes[k];
    if (n.outputs.empty() || n.outputs[0] < 0) return -1;
    for (size_t j = 1; j < n.outputs.size(); ++j) {
      if (n.outputs[j] >= 0 && !consumers[static_cast<size_t>(n.outputs[j])].empty()) return -1;
    }
    const size_t v = static_cast<size_t>(n.outputs[0]);
    if (is_output[v] || consumers[v].size() != 1) return -1;
    return static_cast<long>(consumers[v][0]);
  };

  std::vector<bool> taken(g.nodes.size(), false);
  std::vector<FusedGroup> groups;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const DeviceProfile* dev = device_of_node[k];
    if (taken[k] || dev == nullptr) continue;
    FusedGroup best;
    best.nodes = {k};
    for (const FusionPattern& p : dev->fusion) {
      std::vector<size_t> chain;
      std::vector<int> internal;
      size_t cur = k;
      bool ok = true;
      for (size_t s = 0; s < p.steps.size() && ok; ++s) {
        const auto& alts = p.steps[s];
        if (s > 0) {
          const long next = sole_consumer(cur);
          if (next < 0) { ok = false; break; }
          internal.push_back(g.nodes[cur].outputs[0]);
          cur = static_cast<size_t>(next);
          if (taken[cur] || device_of_node[cur] != dev || partition_of_node[cur] != partition_of_node[k]) {
            ok = false;
            break;
          }
        }
        ok = std::find(alts.begin(), alts.end(), base_op_type(g.nodes[cur])) != alts.end();
        if (ok) chain.push_back(cur);
      }
      if (ok && chain.size() > best.nodes.size()) {
        best.nodes = chain;
        best.internal = internal;
        best.pattern = p.text;
      }
    }
    for (size_t n : best.nodes) taken[n] = true;
    groups.push_back(std::move(best));
  }
  return groups;
}

}  // namespace xnn::sim
