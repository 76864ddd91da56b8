#include "engine/runtime/graph_cost.h"

#include <memory>

#include "engine/runtime/executor.h"

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

bool estimate_static(const Graph& g, const std::map<std::string, Shape>& bound, GraphCost& out) {
  const OpRegistry& reg = OpRegistry::builtin();
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
    try {
      outs = infer_node(schema, n, ins, static_cast<int>(n.outputs.size()));
    } catch (const Error&) {
      return false;  // needs run-time values: caller falls back to execution
    }
    NodeCost nc;
    nc.node_index = k;
    nc.cost = schema.cost ? schema.cost(n, ins, outs) : default_cost(n, ins, outs);
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
    run_node(reg, n, ins, results);
    std::vector<TensorInfo> out_infos;
    NodeCost nc;
    nc.node_index = k;
    for (size_t j = 0; j < results.size(); ++j) {
      out_infos.push_back(results[j].defined() ? TensorInfo{results[j].dtype(), results[j].shape(), nullptr} : TensorInfo{});
      nc.output_shapes.push_back(results[j].defined() ? results[j].shape() : Shape{});
      if (n.outputs[j] >= 0) slots[static_cast<size_t>(n.outputs[j])] = std::move(results[j]);
    }
    for (const TensorInfo& t : in_infos) nc.input_shapes.push_back(t.shape);
    const OpSchema& schema = schema_for(reg, n);
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
