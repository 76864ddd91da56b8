#include "compress/quantize/float_model.h"

#include <unordered_set>

#include "engine/passes/optimize.h"

namespace xnn::quantize {

std::shared_ptr<Model> prepare_float_model(const Model& model) {
  auto out = std::make_shared<Model>(model);
  optimize_graph(out->graph, 1);
  std::unordered_set<std::string> taken;
  for (const Node& n : out->graph.nodes) {
    if (!n.name.empty()) taken.insert(n.name);
  }
  std::unordered_set<std::string> seen;
  for (size_t k = 0; k < out->graph.nodes.size(); ++k) {
    Node& n = out->graph.nodes[k];
    if (!n.name.empty() && seen.insert(n.name).second) continue;
    // Unnamed or a repeated name: op type and position, made unique.
    const std::string base = n.name.empty() ? n.op_type + "_" + std::to_string(k) : n.name;
    std::string name = base;
    for (int i = 1; taken.count(name); ++i) name = base + "_" + std::to_string(i);
    taken.insert(name);
    seen.insert(name);
    n.name = name;
  }
  return out;
}

}  // namespace xnn::quantize
