#include "harness/chain/graph_splice.h"

#include <unordered_map>

#include "engine/core/error.h"

namespace xnn::chain {
namespace {

using Renames = std::unordered_map<std::string, std::string>;

std::string renamed(const Renames& renames, const std::string& prefix, const std::string& name) {
  auto it = renames.find(name);
  return it == renames.end() ? prefix + name : it->second;
}

std::shared_ptr<Graph> copy_subgraph(const Graph& g, const Renames& renames, const std::string& prefix);

// The node's subgraph attributes copied with every name renamed.
void rename_subgraphs(Node& n, const Renames& renames, const std::string& prefix) {
  for (auto& [key, attr] : n.attrs) {
    if (auto sub = attr.get_if<std::shared_ptr<Graph>>()) {
      if (*sub) attr = Attribute(copy_subgraph(**sub, renames, prefix));
    } else if (auto subs = attr.get_if<std::vector<std::shared_ptr<Graph>>>()) {
      std::vector<std::shared_ptr<Graph>> copies;
      for (const auto& s : *subs) copies.push_back(s ? copy_subgraph(*s, renames, prefix) : nullptr);
      attr = Attribute(std::move(copies));
    }
  }
}

// Inside a subgraph every name follows the same map (outer-scope reads included), so the copy
// scopes exactly as the original did.
std::shared_ptr<Graph> copy_subgraph(const Graph& g, const Renames& renames, const std::string& prefix) {
  auto copy = std::make_shared<Graph>(g);
  for (Value& v : copy->values) v.name = renamed(renames, prefix, v.name);
  for (Node& n : copy->nodes) {
    n.name = prefix + n.name;
    rename_subgraphs(n, renames, prefix);
  }
  return copy;
}

}  // namespace

std::vector<int> splice_graph(Graph& target, const Graph& source, std::span<const int> bind, const std::string& prefix) {
  if (bind.size() != source.inputs.size()) {
    throw Error("splice: graph '" + source.name + "' has " + std::to_string(source.inputs.size()) + " inputs, " +
                std::to_string(bind.size()) + " bound");
  }
  std::unordered_map<std::string, int> taken;
  for (size_t i = 0; i < target.values.size(); ++i) taken.emplace(target.values[i].name, static_cast<int>(i));
  Renames renames;
  std::vector<int> index(source.values.size(), -1);
  for (size_t k = 0; k < source.inputs.size(); ++k) {
    const int src = source.inputs[k];
    index[static_cast<size_t>(src)] = bind[k];
    renames[source.value(src).name] = target.value(bind[k]).name;
  }
  for (size_t i = 0; i < source.values.size(); ++i) {
    if (index[i] >= 0) continue;
    Value v = source.values[i];
    v.name = prefix + v.name;
    renames[source.values[i].name] = v.name;
    if (taken.count(v.name)) throw Error("splice: value '" + v.name + "' already exists in '" + target.name + "'");
    taken.emplace(v.name, static_cast<int>(target.values.size()));
    index[i] = target.add_value(std::move(v));
  }
  for (const Node& n : source.nodes) {
    Node copy = n;
    copy.name = prefix + n.name;
    for (int& v : copy.inputs) v = v < 0 ? -1 : index[static_cast<size_t>(v)];
    for (int& v : copy.outputs) v = v < 0 ? -1 : index[static_cast<size_t>(v)];
    rename_subgraphs(copy, renames, prefix);
    target.nodes.push_back(std::move(copy));
  }
  std::vector<int> outputs;
  for (int o : source.outputs) outputs.push_back(index[static_cast<size_t>(o)]);
  return outputs;
}

}  // namespace xnn::chain
