#include "engine/passes/pass_utils.h"

#include <algorithm>

namespace xnn::passes {
namespace {

void collect_outer_names(const Graph& g, std::unordered_set<std::string>& names);

void collect_node_outer_names(const Node& n, std::unordered_set<std::string>& names) {
  for (const auto& [key, attr] : n.attrs) {
    if (auto sub = attr.get_if<std::shared_ptr<Graph>>()) {
      if (*sub) collect_outer_names(**sub, names);
    } else if (auto subs = attr.get_if<std::vector<std::shared_ptr<Graph>>>()) {
      for (const auto& s : *subs) {
        if (s) collect_outer_names(*s, names);
      }
    }
  }
}

void collect_outer_names(const Graph& g, std::unordered_set<std::string>& names) {
  for (const Value& v : g.values) {
    if (v.outer_scope) names.insert(v.name);
  }
  for (const Node& n : g.nodes) collect_node_outer_names(n, names);
}

}  // namespace

// Only the subgraphs' references count: the main graph's own values are never outer_scope.
std::unordered_set<std::string> subgraph_outer_names(const Graph& g) {
  std::unordered_set<std::string> names;
  for (const Node& n : g.nodes) collect_node_outer_names(n, names);
  return names;
}

std::unordered_set<std::string> node_outer_names(const Node& n) {
  std::unordered_set<std::string> names;
  collect_node_outer_names(n, names);
  return names;
}

UseInfo::UseInfo(const Graph& g) {
  const size_t nv = g.values.size();
  producer.assign(nv, -1);
  consumers.assign(nv, {});
  graph_output.assign(nv, 0);
  pinned.assign(nv, 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (int i : g.nodes[k].inputs) {
      if (i >= 0) consumers[static_cast<size_t>(i)].push_back(static_cast<int>(k));
    }
    for (int o : g.nodes[k].outputs) {
      if (o >= 0) producer[static_cast<size_t>(o)] = static_cast<int>(k);
    }
  }
  for (int o : g.outputs) graph_output[static_cast<size_t>(o)] = 1;
  const std::unordered_set<std::string> outer = subgraph_outer_names(g);
  if (!outer.empty()) {
    for (size_t i = 0; i < nv; ++i) pinned[i] = outer.count(g.values[i].name) ? 1 : 0;
  }
}

bool UseInfo::single_private_use(int v) const {
  const size_t i = static_cast<size_t>(v);
  return consumers[i].size() == 1 && !graph_output[i] && !pinned[i];
}

bool is_op(const Node& n, const char* type, const char* domain) {
  if (n.op_type != type) return false;
  const std::string& d = n.domain;
  return d == domain || (std::string(domain).empty() && d == "ai.onnx");
}

int input_at(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; }

bool single_output(const Node& n) {
  if (n.outputs.empty() || n.outputs[0] < 0) return false;
  return std::all_of(n.outputs.begin() + 1, n.outputs.end(), [](int o) { return o < 0; });
}

const Tensor* constant_input(const Graph& g, const Node& n, size_t i) {
  const int v = input_at(n, i);
  if (v < 0 || !g.value(v).is_constant()) return nullptr;
  return &*g.value(v).data;
}

DType known_input_dtype(const Graph& g, const Node& n) {
  for (int i : n.inputs) {
    if (i < 0) continue;
    const Value& v = g.value(i);
    if (v.is_constant()) return v.data->dtype();
    if (v.dtype != DType::kUnknown) return v.dtype;
  }
  return DType::kUnknown;
}

std::unordered_set<std::string> value_names(const Graph& g) {
  std::unordered_set<std::string> names;
  for (const Value& v : g.values) names.insert(v.name);
  return names;
}

std::string fresh_name(const std::string& base, std::unordered_set<std::string>& taken) {
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  taken.insert(name);
  return name;
}

bool is_conv_like(const Node& n) { return is_op(n, "Conv") || is_op(n, "FusedConv", kFusedDomain); }
bool is_gemm_like(const Node& n) { return is_op(n, "Gemm") || is_op(n, "FusedGemm", kFusedDomain); }

bool has_activation(const Node& n) { return !n.attr_string("activation", "").empty(); }
bool has_residual(const Node& n) { return is_op(n, "FusedConv", kFusedDomain) && input_at(n, 3) >= 0; }

void make_fused(Node& n) {
  if (is_op(n, "Conv")) n.op_type = "FusedConv";
  else if (is_op(n, "Gemm")) n.op_type = "FusedGemm";
  n.domain = kFusedDomain;
}

void set_activation(Node& n, const kernels::Activation& act) {
  n.attrs["activation"] = std::string(kernels::act_kind_name(act.kind));
  switch (act.kind) {
    case kernels::ActKind::kClip:
    case kernels::ActKind::kHardSigmoid: n.attrs["activation_params"] = std::vector<float>{act.alpha, act.beta}; break;
    case kernels::ActKind::kLeakyRelu: n.attrs["activation_params"] = std::vector<float>{act.alpha}; break;
    default: n.attrs.erase("activation_params");
  }
}

void erase_nodes(Graph& g, const std::vector<char>& remove) {
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (!remove[k]) kept.push_back(std::move(g.nodes[k]));
  }
  g.nodes = std::move(kept);
}

}  // namespace xnn::passes
