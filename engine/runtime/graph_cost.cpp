#include "engine/runtime/graph_cost.h"

#include <memory>

#include "engine/runtime/executor.h"
#include "engine/runtime/subgraph_host.h"
#include "engine/runtime/value_scope.h"

namespace xnn {

Shape concrete_input_shape(const Value& v, const std::map<std::string, Shape>& bound) {
  auto it = bound.find(v.name);
  if (it != bound.end()) return it->second;
  if (!v.has_shape) throw Error("input '" + v.name + "' has no declared shape; give one explicitly");
  Shape s;
  for (const Dim& d : v.shape) s.push_back(d.known() ? d.value : 1);
  return s;
}

namespace {

// Small tensors whose values are computed along the way (shape arithmetic) are kept so
// value-dependent inference (Reshape, Expand, Slice, ...) works without executing big ops.
constexpr int64_t kMaxTrackedValueElements = 4096;

// The op set recorded in body sessions' models here (the runtime does not read it).
constexpr int64_t kExecutionOpset = 13;

bool infer_nodes(const Graph& g, std::vector<TensorInfo>& info, std::vector<std::unique_ptr<Tensor>>& computed,
                 const ValueScope* outer, GraphCost& out);

// Infers a control-flow node's subgraphs statically for the cost estimate, adding each
// subgraph's cost once per inference (If: both branches unless the condition is a constant;
// Loop/Scan: one iteration of the body).
class CostingSubgraphHost final : public SubgraphHost {
 public:
  explicit CostingSubgraphHost(const ValueScope& scope) : scope_(scope) {}
  std::vector<TensorInfo> infer(const Graph& body, std::span<const TensorInfo> inputs) override {
    std::vector<TensorInfo> info(body.values.size());
    std::vector<std::unique_ptr<Tensor>> computed(body.values.size());
    for (size_t i = 0; i < body.values.size(); ++i) {
      const Value& v = body.values[i];
      if (v.is_constant()) {
        info[i] = TensorInfo{v.data->dtype(), v.data->shape(), &*v.data};
      } else if (v.outer_scope) {
        std::optional<TensorInfo> found = scope_.find_info(v.name);
        if (!found) throw ValueNeededError("subgraph '" + body.name + "' reads '" + v.name + "', not known here");
        info[i] = *found;
      }
    }
    if (inputs.size() != body.inputs.size()) {
      throw Error("subgraph '" + body.name + "' has " + std::to_string(body.inputs.size()) + " inputs, given " +
                  std::to_string(inputs.size()));
    }
    for (size_t k = 0; k < inputs.size(); ++k) {
      info[static_cast<size_t>(body.inputs[k])] = TensorInfo{inputs[k].dtype, inputs[k].shape, nullptr};
    }
    GraphCost sub;
    if (!infer_nodes(body, info, computed, &scope_, sub)) {
      throw ValueNeededError("subgraph '" + body.name + "': shapes depend on run-time values");
    }
    for (const NodeCost& nc : sub.nodes) {
      added_.macs += nc.cost.macs;
      added_.bytes_read += nc.cost.bytes_read;
      added_.bytes_written += nc.cost.bytes_written;
    }
    std::vector<TensorInfo> outs;
    for (int o : body.outputs) outs.push_back(TensorInfo{info[static_cast<size_t>(o)].dtype, info[static_cast<size_t>(o)].shape, nullptr});
    return outs;
  }
  std::vector<Tensor> run(const Graph& body, std::span<const Tensor>) override {
    throw Error("subgraph '" + body.name + "': the static cost estimate does not run subgraphs");
  }
  const OpCost& added() const { return added_; }

 private:
  const ValueScope& scope_;
  OpCost added_;
};

void add_cost(OpCost& into, const OpCost& c) {
  into.macs += c.macs;
  into.bytes_read += c.bytes_read;
  into.bytes_written += c.bytes_written;
}

bool infer_nodes(const Graph& g, std::vector<TensorInfo>& info, std::vector<std::unique_ptr<Tensor>>& computed,
                 const ValueScope* outer, GraphCost& out) {
  const OpRegistry& reg = OpRegistry::builtin();
  ValueIndex index;  // built when the graph has control flow
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    const OpSchema& schema = schema_for(reg, n);
    std::vector<TensorInfo> ins(n.inputs.size());
    bool all_values = true;
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      if (n.inputs[j] >= 0) {
        ins[j] = info[static_cast<size_t>(n.inputs[j])];
        all_values = all_values && ins[j].value != nullptr;
      }
    }
    std::vector<TensorInfo> outs;
    NodeCost nc;
    nc.node_index = k;
    try {
      if (schema.has_subgraphs) {
        if (index.empty()) index = index_values(g);
        const ValueScope scope{&g, &index, &info, nullptr, outer};
        CostingSubgraphHost host(scope);
        outs = infer_node(schema, n, ins, static_cast<int>(n.outputs.size()), &host);
        nc.cost = default_cost(n, ins, outs);
        add_cost(nc.cost, host.added());
      } else {
        outs = infer_node(schema, n, ins, static_cast<int>(n.outputs.size()));
        nc.cost = schema.cost ? schema.cost(n, ins, outs) : default_cost(n, ins, outs);
      }
    } catch (const Error&) {
      return false;  // needs run-time values: caller falls back to execution
    }
    for (const TensorInfo& t : ins) nc.input_shapes.push_back(t.shape);
    for (const TensorInfo& t : outs) nc.output_shapes.push_back(t.shape);
    out.nodes.push_back(std::move(nc));
    // Propagate values of small all-constant computations.
    bool small = all_values && !schema.has_subgraphs;
    for (const TensorInfo& t : outs) small = small && shape_numel(t.shape) <= kMaxTrackedValueElements;
    std::vector<Tensor> results;
    if (small) {
      std::vector<const Tensor*> in_ptrs;
      for (const TensorInfo& t : ins) in_ptrs.push_back(t.value);
      run_node(reg, n, in_ptrs, results);
    }
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      if (n.outputs[j] < 0) continue;
      const size_t vi = static_cast<size_t>(n.outputs[j]);
      info[vi] = outs[j];
      if (small) {
        computed[vi] = std::make_unique<Tensor>(std::move(results[j]));
        info[vi].value = computed[vi].get();
      }
    }
  }
  return true;
}

bool estimate_static(const Graph& g, const std::map<std::string, Shape>& bound, GraphCost& out) {
  std::vector<TensorInfo> info(g.values.size());
  std::vector<std::unique_ptr<Tensor>> computed(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.is_constant()) info[i] = TensorInfo{v.data->dtype(), v.data->shape(), &*v.data};
  }
  for (int i : g.inputs) {
    const Value& v = g.value(i);
    info[static_cast<size_t>(i)] = TensorInfo{v.dtype, concrete_input_shape(v, bound), nullptr};
  }
  return infer_nodes(g, info, computed, nullptr, out);
}

// Control-flow nodes run their subgraphs in body sessions here; their cost counts only what
// they read and write themselves.
void estimate_by_execution(const Graph& g, const std::map<std::string, Shape>& bound, GraphCost& out) {
  const OpRegistry& reg = OpRegistry::builtin();
  std::vector<Tensor> slots(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    if (g.values[i].is_constant()) slots[i] = *g.values[i].data;
  }
  for (int i : g.inputs) {
    const Value& v = g.value(i);
    slots[static_cast<size_t>(i)] = Tensor(v.dtype, concrete_input_shape(v, bound));
  }
  const ValueIndex index = index_values(g);
  std::map<size_t, std::unique_ptr<SessionSubgraphHost>> hosts;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    std::vector<const Tensor*> ins(n.inputs.size(), nullptr);
    std::vector<TensorInfo> in_infos(n.inputs.size());
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      if (n.inputs[j] < 0) continue;
      const Tensor& t = slots[static_cast<size_t>(n.inputs[j])];
      ins[j] = &t;
      in_infos[j] = TensorInfo{t.dtype(), t.shape(), &t};
    }
    std::vector<Tensor> results;
    const OpSchema& schema = schema_for(reg, n);
    if (schema.has_subgraphs) {
      auto& host = hosts[k];
      if (!host) host = std::make_unique<SessionSubgraphHost>(kExecutionOpset, SessionOptions{}, nullptr);
      const ValueScope scope{&g, &index, nullptr, &slots, nullptr};
      host->set_scope(&scope);
      run_node(reg, n, ins, results, host.get());
      host->set_scope(nullptr);
    } else {
      run_node(reg, n, ins, results);
    }
    std::vector<TensorInfo> out_infos;
    NodeCost nc;
    nc.node_index = k;
    for (size_t j = 0; j < results.size(); ++j) {
      out_infos.push_back(results[j].defined() ? TensorInfo{results[j].dtype(), results[j].shape(), nullptr} : TensorInfo{});
      nc.output_shapes.push_back(results[j].defined() ? results[j].shape() : Shape{});
      if (n.outputs[j] >= 0) slots[static_cast<size_t>(n.outputs[j])] = std::move(results[j]);
    }
    for (const TensorInfo& t : in_infos) nc.input_shapes.push_back(t.shape);
    nc.cost = schema.cost ? schema.cost(n, in_infos, out_infos) : default_cost(n, in_infos, out_infos);
    out.nodes.push_back(std::move(nc));
  }
}

}  // namespace

GraphCost estimate_graph_cost(const Graph& g, const std::map<std::string, Shape>& bound) {
  GraphCost out;
  if (!estimate_static(g, bound, out)) {
    out = GraphCost{};
    out.static_shapes = false;
    estimate_by_execution(g, bound, out);
  }
  for (const NodeCost& nc : out.nodes) {
    out.total.macs += nc.cost.macs;
    out.total.bytes_read += nc.cost.bytes_read;
    out.total.bytes_written += nc.cost.bytes_written;
  }
  return out;
}

}  // namespace xnn
